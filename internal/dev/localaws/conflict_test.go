package localaws_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// addTo is an unconditional increment of an account's balance, as the
// spend ledger adds a record's units to its workload's total.
func addTo(table, pk string, delta int64) *ddbtypes.Update {
	expr, _ := expression.NewBuilder().
		WithUpdate(expression.Add(expression.Name("bal"), expression.Value(delta))).Build()
	return &ddbtypes.Update{TableName: aws.String(table), Key: acctKey(pk), UpdateExpression: expr.Update(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()}
}

// TestConcurrentTransactionsOnOneItemConflict reproduces DynamoDB's
// transaction conflict handling, "Transaction conflict handling in
// DynamoDB" in the developer guide
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-conflict-handling):
//
//   - an item within a TransactWriteItems request that is part of another
//     ongoing TransactWriteItems request cancels it, with
//     TransactionCanceledException and the reason TransactionConflict for
//     that item (None for the others): it does not wait;
//   - a PutItem, UpdateItem or DeleteItem of an item that an ongoing
//     TransactWriteItems includes fails with TransactionConflictException
//     (HTTP 400);
//   - a TransactGetItems of an item that an ongoing write includes is
//     cancelled the same way.
//
// And nothing is half applied: every committed write counts once.
func TestConcurrentTransactionsOnOneItemConflict(t *testing.T) {
	// Given one hot item that every writer adds to, and a private item per
	// transaction writer
	env := localaws.StartForTest(t)
	// This drives one item past the 1,000 write units and 3,000 read units
	// a second a DynamoDB partition serves, on purpose: it tests
	// contention, not throughput (capacity_test.go tests the limits).
	env.LiftThroughputLimits()
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	putAcct(t, env, table, "hot", 0)

	// When 6 goroutines add 1 to it in two-item transactions and 2 more
	// add 1 with single-item UpdateItems and read it with TransactGetItems
	// for up to 2 s, until every kind of conflict has been seen
	var txOK, txConflict, singleOK, singleConflict, getConflict atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Second)
	enough := func() bool {
		return txConflict.Load() > 0 && singleConflict.Load() > 0 && getConflict.Load() > 0 && time.Now().After(deadline.Add(-1500*time.Millisecond))
	}
	for g := range 6 {
		mine := "own" + string(rune('a'+g))
		putAcct(t, env, table, mine, 0)
		wg.Go(func() {
			for time.Now().Before(deadline) && !enough() {
				_, err := env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
					{Update: addTo(table, mine, 1)},
					{Update: addTo(table, "hot", 1)},
				}})
				var tce *ddbtypes.TransactionCanceledException
				switch {
				case err == nil:
					txOK.Add(1)
				case errors.As(err, &tce):
					// Then a cancelled transaction names the conflicting
					// item and only that one
					if got := codes(tce); got != "None,TransactionConflict" {
						t.Errorf("cancellation reasons = %s, want None,TransactionConflict", got)
						return
					}
					txConflict.Add(1)
				default:
					t.Errorf("transact write: %v", err)
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for time.Now().Before(deadline) && !enough() {
				u := addTo(table, "hot", 1)
				_, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: u.TableName, Key: u.Key,
					UpdateExpression: u.UpdateExpression, ExpressionAttributeNames: u.ExpressionAttributeNames,
					ExpressionAttributeValues: u.ExpressionAttributeValues})
				var tc *ddbtypes.TransactionConflictException
				var re *awshttp.ResponseError
				switch {
				case err == nil:
					singleOK.Add(1)
				case errors.As(err, &tc):
					if errors.As(err, &re) && re.HTTPStatusCode() != 400 {
						t.Errorf("TransactionConflictException with status %d, want 400", re.HTTPStatusCode())
					}
					singleConflict.Add(1)
				default:
					t.Errorf("update: %v", err)
					return
				}
				_, err = env.DynamoDB.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []ddbtypes.TransactGetItem{
					{Get: &ddbtypes.Get{TableName: aws.String(table), Key: acctKey("hot")}},
				}})
				var tce *ddbtypes.TransactionCanceledException
				switch {
				case err == nil:
				case errors.As(err, &tce) && codes(tce) == "TransactionConflict":
					getConflict.Add(1)
				default:
					t.Errorf("transact get: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()

	// Then every kind of conflict happened
	t.Logf("transactions: %d committed, %d conflicted; updates: %d committed, %d conflicted; gets conflicted: %d",
		txOK.Load(), txConflict.Load(), singleOK.Load(), singleConflict.Load(), getConflict.Load())
	if txConflict.Load() == 0 {
		t.Errorf("no transaction was cancelled with TransactionConflict in %d that met others on one item", txOK.Load())
	}
	if singleConflict.Load() == 0 {
		t.Errorf("no UpdateItem failed with TransactionConflictException in %d against running transactions", singleOK.Load())
	}
	if getConflict.Load() == 0 {
		t.Error("no TransactGetItems was cancelled by a running write")
	}
	// and every committed write counted exactly once, no cancelled one
	hot, _ := getAcct(t, env, table, "hot")
	if want := txOK.Load() + singleOK.Load(); hot.Bal != want {
		t.Fatalf("hot balance %d, want %d (%d transactions + %d updates)", hot.Bal, want, txOK.Load(), singleOK.Load())
	}
}

// TestNoModelMakesTransactionsWait is the baseline switch: with
// Options.NoModel a transaction waits for the item instead of failing.
func TestNoModelMakesTransactionsWait(t *testing.T) {
	// Given local AWS with the model off
	env, err := localaws.Start(context.Background(), localaws.Options{NoModel: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	putAcct(t, env, table, "hot", 0)

	// When 6 goroutines add to one item in transactions, 300 each
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for range 300 {
				_, err := env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
					{Update: addTo(table, "hot", 1)},
				}})
				if err != nil {
					t.Errorf("transact write with the model off: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()

	// Then none conflicted and all counted
	if hot, _ := getAcct(t, env, table, "hot"); hot.Bal != 1800 {
		t.Fatalf("hot balance %d, want 1800", hot.Bal)
	}
}

// codes joins a cancellation's reason codes.
func codes(tce *ddbtypes.TransactionCanceledException) string {
	s := ""
	for i, r := range tce.CancellationReasons {
		if i > 0 {
			s += ","
		}
		s += aws.ToString(r.Code)
	}
	return s
}

// errorCode is the API error code of err, or "".
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
