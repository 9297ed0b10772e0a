package localaws_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// sized is an item of the ledger table of exactly size bytes by DynamoDB's
// rules: "pk" + pk, "sk" + "A", and "data" + a string that fills the rest.
func sized(pk string, size int) map[string]ddbtypes.AttributeValue {
	fill := size - (2 + len(pk)) - (2 + 1) - 4
	return map[string]ddbtypes.AttributeValue{
		"pk":   &ddbtypes.AttributeValueMemberS{Value: pk},
		"sk":   &ddbtypes.AttributeValueMemberS{Value: "A"},
		"data": &ddbtypes.AttributeValueMemberS{Value: strings.Repeat("x", fill)},
	}
}

// TestSizeLimits reproduces DynamoDB's size limits ("Constraints in Amazon
// DynamoDB", https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Constraints.html):
// an item is at most 400 KB, by the rules of "DynamoDB item sizes and
// formats"; a transaction at most 100 items and 4 MB. Beyond them the
// request is refused with ValidationException and nothing is written.
func TestSizeLimits(t *testing.T) {
	env := localaws.StartForTest(t)
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	const kb = 1024
	put := func(it map[string]ddbtypes.AttributeValue) error {
		_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it})
		return err
	}

	// Given items at the limit and one byte over it
	// Then the one at 400 KB is stored and the one over is refused
	if err := put(sized("at", 400*kb)); err != nil {
		t.Fatalf("PutItem of 400 KB: %v", err)
	}
	if code := errorCode(put(sized("over", 400*kb+1))); code != "ValidationException" {
		t.Fatalf("PutItem of 400 KB + 1 byte: code %q, want ValidationException", code)
	}
	if _, found := getAcct(t, env, table, "over"); found {
		t.Fatal("the refused item was stored")
	}

	// When an update would carry an item past 400 KB
	if err := put(sized("grow", 399*kb)); err != nil {
		t.Fatal(err)
	}
	_, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: acctKey("grow"),
		UpdateExpression:          aws.String("SET more = :m"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":m": &ddbtypes.AttributeValueMemberS{Value: strings.Repeat("y", 2*kb)}}})
	// Then it is refused and the item is as it was
	if code := errorCode(err); code != "ValidationException" {
		t.Fatalf("UpdateItem past 400 KB: code %q (%v), want ValidationException", code, err)
	}
	out, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: acctKey("grow"), ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item["more"] != nil {
		t.Fatalf("after the refused update: more=%v (%v), want absent", out.Item["more"], err)
	}

	// When a transaction puts an item over 400 KB, or 11 of 390 KB (over 4 MB)
	tx := func(items ...map[string]ddbtypes.AttributeValue) error {
		var ops []ddbtypes.TransactWriteItem
		for _, it := range items {
			ops = append(ops, ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{TableName: aws.String(table), Item: it}})
		}
		_, err := env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: ops})
		return err
	}
	if code := errorCode(tx(sized("t-small", 100), sized("t-over", 400*kb+1))); code != "ValidationException" {
		t.Fatalf("transaction with an item over 400 KB: code %q, want ValidationException", code)
	}
	var eleven []map[string]ddbtypes.AttributeValue
	for i := range 11 {
		eleven = append(eleven, sized("t-"+strconv.Itoa(i), 390*kb))
	}
	if code := errorCode(tx(eleven...)); code != "ValidationException" {
		t.Fatalf("transaction of 11 × 390 KB: code %q, want ValidationException", code)
	}
	// Then nothing of either was written
	for _, pk := range []string{"t-small", "t-0", "t-10"} {
		if _, found := getAcct(t, env, table, pk); found {
			t.Fatalf("%s of a refused transaction was stored", pk)
		}
	}
	// and 10 of 390 KB (under 4 MB) commit
	if err := tx(eleven[:10]...); err != nil {
		t.Fatalf("transaction of 10 × 390 KB: %v", err)
	}
}

// TestNoModelLiftsSizeLimits: with the model off, the size limits are off.
func TestNoModelLiftsSizeLimits(t *testing.T) {
	env, err := localaws.Start(context.Background(), localaws.Options{NoModel: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	_, err = env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(env.TableName("LedgerTable")),
		Item: sized("over", 400*1024+1)})
	if err != nil {
		t.Fatalf("PutItem over 400 KB with the model off: %v", err)
	}
}

// TestTransactionUpdatePastTheItemLimitIsCancelled: an Update in a
// transaction that would carry its item past 400 KB cancels the
// transaction with the reason ValidationError for that item (the
// TransactWriteItems API reference lists it among the cancellation
// reasons), and nothing of it stays.
func TestTransactionUpdatePastTheItemLimitIsCancelled(t *testing.T) {
	env := localaws.StartForTest(t)
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: sized("grow", 399*1024)}); err != nil {
		t.Fatal(err)
	}
	putAcct(t, env, table, "other", 1)
	_, err := env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Update: addTo(table, "other", 1)},
		{Update: &ddbtypes.Update{TableName: aws.String(table), Key: acctKey("grow"), UpdateExpression: aws.String("SET more = :m"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":m": &ddbtypes.AttributeValueMemberS{Value: strings.Repeat("y", 2048)}}}},
	}})
	var tce *ddbtypes.TransactionCanceledException
	if !errorsAs(err, &tce) || codes(tce) != "None,ValidationError" {
		t.Fatalf("err = %v, want TransactionCanceledException [None, ValidationError]", err)
	}
	if a, _ := getAcct(t, env, table, "other"); a.Bal != 1 {
		t.Fatalf("other = %d, want 1: the cancelled transaction's first update stayed", a.Bal)
	}
}
