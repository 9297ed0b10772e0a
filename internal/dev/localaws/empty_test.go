package localaws

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestEmptyMapsAndListsComeBackAsStored: DynamoDB stores an empty map or
// list attribute and answers it as such. The engine's wire type dropped
// it to {}, which the SDK decoded as the item's previous attribute (a run
// record's tiers came back as a number). Every read answers it, an item
// spilled out of the engine and back included.
func TestEmptyMapsAndListsComeBackAsStored(t *testing.T) {
	env, front := startEmbedded(t, Options{HotItems: 1})
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	key := func(i int) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "P"}, "sk": &types.AttributeValueMemberS{Value: fmt.Sprint(i)}}
	}
	for i := range 4 {
		item := key(i)
		item["m"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}
		item["l"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{}}
		item["nested"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"inner": &types.AttributeValueMemberL{Value: []types.AttributeValue{}}, "n": &types.AttributeValueMemberN{Value: "7"}}}
		if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	front.spill.mu.Lock()
	spilled := len(front.spill.cold)
	front.spill.mu.Unlock()
	if spilled == 0 {
		t.Fatal("nothing spilled: the test would not read an item back from the engine's spill")
	}
	check := func(how string, it map[string]types.AttributeValue) {
		t.Helper()
		m, okM := it["m"].(*types.AttributeValueMemberM)
		l, okL := it["l"].(*types.AttributeValueMemberL)
		n, okN := it["nested"].(*types.AttributeValueMemberM)
		if !okM || len(m.Value) != 0 || !okL || len(l.Value) != 0 || !okN {
			t.Fatalf("%s: m %#v, l %#v, nested %#v; want an empty map, an empty list and a map", how, it["m"], it["l"], it["nested"])
		}
		if inner, ok := n.Value["inner"].(*types.AttributeValueMemberL); !ok || len(inner.Value) != 0 {
			t.Fatalf("%s: nested inner %#v, want an empty list", how, n.Value["inner"])
		}
	}
	for i := range 4 {
		out, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key(i), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("get %d", i), out.Item)
	}
	bg, err := env.DynamoDB.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		table: {Keys: []map[string]types.AttributeValue{key(0), key(3)}}}})
	if err != nil || len(bg.Responses[table]) != 2 {
		t.Fatalf("batch get: %v, %d items", err, len(bg.Responses[table]))
	}
	for _, it := range bg.Responses[table] {
		check("batch get", it)
	}
	q, err := env.DynamoDB.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "P"}}})
	if err != nil || len(q.Items) != 4 {
		t.Fatalf("query: %v, %d items", err, len(q.Items))
	}
	for _, it := range q.Items {
		check("query", it)
	}
	sc, err := env.DynamoDB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil || len(sc.Items) != 4 {
		t.Fatalf("scan: %v, %d items", err, len(sc.Items))
	}
	for _, it := range sc.Items {
		check("scan", it)
	}
}
