package localaws

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

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

// TestRequestDigestOfShuffledDocuments: random requests, each written
// again with every object's members in another order and other spacing,
// keep their digest; changing one value, or the order of an array, or
// the token, changes it or not as DynamoDB compares requests.
func TestRequestDigestOfShuffledDocuments(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 11))
	for n := range 300 {
		doc := map[string]any{"TransactItems": randomValue(rnd, 0, true), "ClientRequestToken": fmt.Sprintf("tok-%d", n)}
		a, b := encodeShuffled(rnd, doc), encodeShuffled(rnd, doc)
		ta, da, err := requestDigest([]byte(a))
		if err != nil || ta != doc["ClientRequestToken"] {
			t.Fatalf("%s: token %q, %v", a, ta, err)
		}
		if _, db, _ := requestDigest([]byte(b)); da != db {
			t.Fatalf("one request, two digests:\n%s\n%s", a, b)
		}
		doc["ClientRequestToken"] = "other"
		if _, dt, _ := requestDigest([]byte(encodeShuffled(rnd, doc))); dt != da {
			t.Fatalf("the token changed the digest of %s", a)
		}
		doc["TransactItems"] = []any{doc["TransactItems"], "x"}
		if _, dc, _ := requestDigest([]byte(encodeShuffled(rnd, doc))); dc == da {
			t.Fatalf("another request, one digest: %s", a)
		}
	}
	x := `{"A":[{"S":"1"},{"S":"2"}]}`
	y := `{"A":[{"S":"2"},{"S":"1"}]}`
	if _, dx, _ := requestDigest([]byte(x)); func() bool { _, dy, _ := requestDigest([]byte(y)); return dx == dy }() {
		t.Error("arrays in another order have one digest")
	}
}

// TestRequestDigestRefusesMalformedJSON: what is not one JSON object is
// a SerializationException, not a digest.
func TestRequestDigestRefusesMalformedJSON(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70)
	for _, body := range []string{"", "{", `{"a":}`, `{"a" 1}`, `{"a":1,}`, `{"a":"x}`, `[1]`, `{"a":1} x`, `{"a":[1 2]}`,
		`{"ClientRequestToken":1}`, deep} {
		if _, _, err := requestDigest([]byte(body)); err == nil {
			t.Errorf("%q: no error", body)
		}
	}
	if _, _, err := requestDigest([]byte(" {\n\"a\" : [ 1 , {\"b\":null} ] }\t")); err != nil {
		t.Errorf("spaced JSON: %v", err)
	}
}

// randomValue is a random JSON value, as a DynamoDB request nests them.
func randomValue(rnd *rand.Rand, depth int, composite bool) any {
	if depth > 3 || (!composite && rnd.IntN(3) == 0) {
		return []any{"s\"q\\" + fmt.Sprint(rnd.IntN(9)), 1.5, true, nil, json.Number("12")}[rnd.IntN(5)]
	}
	if rnd.IntN(3) == 0 {
		var arr []any
		for range rnd.IntN(4) {
			arr = append(arr, randomValue(rnd, depth+1, false))
		}
		return arr
	}
	obj := map[string]any{}
	for k := range 1 + rnd.IntN(5) {
		obj[fmt.Sprintf("k%d", k)] = randomValue(rnd, depth+1, false)
	}
	return obj
}

// encodeShuffled writes v as JSON with each object's members in a random
// order and random spaces between tokens.
func encodeShuffled(rnd *rand.Rand, v any) string {
	sp := func() string { return []string{"", " ", "\n\t"}[rnd.IntN(3)] }
	switch v := v.(type) {
	case map[string]any:
		keys := slices.Collect(maps.Keys(v))
		rnd.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		var parts []string
		for _, k := range keys {
			kj, _ := json.Marshal(k)
			parts = append(parts, sp()+string(kj)+sp()+":"+encodeShuffled(rnd, v[k]))
		}
		return sp() + "{" + strings.Join(parts, ",") + sp() + "}"
	case []any:
		var parts []string
		for _, e := range v {
			parts = append(parts, encodeShuffled(rnd, e))
		}
		return "[" + strings.Join(parts, ","+sp()) + "]"
	}
	raw, _ := json.Marshal(v)
	return sp() + string(raw)
}
