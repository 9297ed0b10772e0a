package localaws

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// TestHeldByATransaction holds one item as a running TransactWriteItems
// holds it and checks each operation's answer, as the developer guide's
// "Transaction conflict handling in DynamoDB" describes
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-conflict-handling).
func TestHeldByATransaction(t *testing.T) {
	// Given an item held by a running transaction
	env, d := startEmbedded(t, Options{})
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	key := func(pk string) map[string]ddbtypes.AttributeValue {
		return map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: pk}, "sk": &ddbtypes.AttributeValueMemberS{Value: "A"}}
	}
	withBal := func(pk, bal string) map[string]ddbtypes.AttributeValue {
		k := key(pk)
		k["bal"] = &ddbtypes.AttributeValueMemberN{Value: bal}
		return k
	}
	if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: withBal("held", "1")}); err != nil {
		t.Fatal(err)
	}
	id, _, _, err := d.locate(table, wireItem(key("held")))
	if err != nil {
		t.Fatal(err)
	}
	release, conflicts := d.locks.acquire([]itemID{id}, txWrite)
	if conflicts != nil {
		t.Fatal("the item was held already")
	}

	// When single-item writes, transactions and reads meet it
	// Then single-item writes fail with TransactionConflictException
	_, err = env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: withBal("held", "2")})
	wantCode(t, "PutItem", err, "TransactionConflictException")
	_, err = env.DynamoDB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("held")})
	wantCode(t, "DeleteItem", err, "TransactionConflictException")
	_, err = env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key("held"),
		UpdateExpression: aws.String("SET bal = :b"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":b": &ddbtypes.AttributeValueMemberN{Value: "3"}}})
	wantCode(t, "UpdateItem", err, "TransactionConflictException")
	// and transactions are cancelled, naming the held item only
	_, err = env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: aws.String(table), Item: withBal("free", "1")}},
		{Put: &ddbtypes.Put{TableName: aws.String(table), Item: withBal("held", "4")}},
	}})
	wantReasons(t, "TransactWriteItems", err, "None", "TransactionConflict")
	_, err = env.DynamoDB.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []ddbtypes.TransactGetItem{
		{Get: &ddbtypes.Get{TableName: aws.String(table), Key: key("held")}},
		{Get: &ddbtypes.Get{TableName: aws.String(table), Key: key("free")}},
	}})
	wantReasons(t, "TransactGetItems", err, "TransactionConflict", "None")
	// and the cancelled transaction wrote nothing
	if out, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("free")}); err != nil || out.Item != nil {
		t.Fatalf("free = %v (%v), want absent", out, err)
	}
	// and a GetItem waits for the transaction, then reads it
	got := make(chan error, 1)
	go func() {
		_, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("held"), ConsistentRead: aws.Bool(true)})
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("GetItem answered (%v) while a transaction held the item", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("GetItem still waits after the transaction ended")
	}
	// and once it ends, writes go through
	if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: withBal("held", "5")}); err != nil {
		t.Fatalf("PutItem after the transaction: %v", err)
	}
}

// TestSingleWritesWaitForEachOther: a single-item write that meets another
// (not a transaction) waits for it, as before the model.
func TestSingleWritesWaitForEachOther(t *testing.T) {
	env, d := startEmbedded(t, Options{})
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	item := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "w"}, "sk": &ddbtypes.AttributeValueMemberS{Value: "A"}}
	id, _, _, err := d.locate(table, wireItem(item))
	if err != nil {
		t.Fatal(err)
	}
	release, _ := d.locks.acquire([]itemID{id}, writeSingle)
	done := make(chan error, 1)
	go func() {
		_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("PutItem answered (%v) while another write held the item", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("PutItem after the other write: %v", err)
	}
}

func wantCode(t *testing.T, op string, err error, code string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != code {
		t.Fatalf("%s: err = %v, want %s", op, err, code)
	}
}

func wantReasons(t *testing.T, op string, err error, want ...string) {
	t.Helper()
	var tce *ddbtypes.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != len(want) {
		t.Fatalf("%s: err = %v, want TransactionCanceledException with %d reasons", op, err, len(want))
	}
	for i, w := range want {
		if got := aws.ToString(tce.CancellationReasons[i].Code); got != w {
			t.Fatalf("%s: reason %d = %s, want %s", op, i, got, w)
		}
	}
}

// TestSDKRetriesAWriteThatMetATransaction: the SDK's retryer, as
// awsconf configures it for every client, sends again a single-item
// write refused with TransactionConflictException (the write was not
// applied), so a write that meets a transaction succeeds once the
// transaction ends instead of failing its caller.
func TestSDKRetriesAWriteThatMetATransaction(t *testing.T) {
	// Given an item held by a running transaction
	env, d := startEmbedded(t, Options{})
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	item := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "r"}, "sk": &ddbtypes.AttributeValueMemberS{Value: "A"}}
	id, _, _, err := d.locate(table, wireItem(item))
	if err != nil {
		t.Fatal(err)
	}
	release, _ := d.locks.acquire([]itemID{id}, txWrite)

	// When a PutItem meets it, and the transaction ends after the first refusal
	done := make(chan error, 1)
	go func() {
		_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
		done <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); d.singleConflicts.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the PutItem never met the transaction")
		}
		select {
		case err := <-done:
			t.Fatalf("PutItem answered (%v) before it met the transaction", err)
		default:
		}
		time.Sleep(time.Millisecond)
	}
	release()

	// Then the PutItem succeeded on a retry
	if err := <-done; err != nil {
		t.Fatalf("PutItem after the transaction ended: %v, want the SDK to retry it", err)
	}
}
