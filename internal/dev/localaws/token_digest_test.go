package localaws

import "testing"

// TestRequestDigestIgnoresMemberOrder: the SDK encodes a map (a Key, the
// ExpressionAttributeNames) in Go's random map order, so a retry of one
// call may list the same members in another order. DynamoDB compares the
// request, not its bytes: both must have one digest.
func TestRequestDigestIgnoresMemberOrder(t *testing.T) {
	a := `{"ClientRequestToken":"t","TransactItems":[{"Update":{"Key":{"pk":{"S":"a"},"sk":{"S":"b"}},"TableName":"x","UpdateExpression":"ADD #0 :0"}}]}`
	b := `{"TransactItems":[{"Update":{"TableName":"x","Key":{"sk":{"S":"b"},"pk":{"S":"a"}},"UpdateExpression":"ADD #0 :0"}}],"ClientRequestToken":"t"}`
	c := `{"ClientRequestToken":"t","TransactItems":[{"Update":{"Key":{"pk":{"S":"a"},"sk":{"S":"c"}},"TableName":"x","UpdateExpression":"ADD #0 :0"}}]}`
	_, da, err := requestDigest([]byte(a))
	if err != nil {
		t.Fatal(err)
	}
	_, db, _ := requestDigest([]byte(b))
	_, dc, _ := requestDigest([]byte(c))
	if da != db {
		t.Error("the same request with its members in another order has another digest")
	}
	if da == dc {
		t.Error("requests with other keys have one digest")
	}
}
