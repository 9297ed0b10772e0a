package localaws_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// acct is a test item in the ledger table's key schema.
type acct struct {
	PK  string `dynamodbav:"pk"`
	SK  string `dynamodbav:"sk"`
	Bal int64  `dynamodbav:"bal"`
	Ver int64  `dynamodbav:"ver"`
}

func acctKey(pk string) map[string]ddbtypes.AttributeValue {
	k, _ := attributevalue.MarshalMap(struct {
		PK string `dynamodbav:"pk"`
		SK string `dynamodbav:"sk"`
	}{pk, "A"})
	return k
}

func putAcct(t testing.TB, env *localaws.Env, table, pk string, bal int64) {
	t.Helper()
	item, _ := attributevalue.MarshalMap(acct{PK: pk, SK: "A", Bal: bal})
	if _, err := env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

func getAcct(t testing.TB, env *localaws.Env, table, pk string) (acct, bool) {
	t.Helper()
	out, err := env.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table),
		Key: acctKey(pk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	var a acct
	if out.Item == nil {
		return a, false
	}
	if err := attributevalue.UnmarshalMap(out.Item, &a); err != nil {
		t.Fatal(err)
	}
	return a, true
}

// casUpdate is an optimistic write of one item: it moves the balance by
// delta on condition that the version is still ver, and bumps the version.
func casUpdate(table, pk string, ver, delta int64) *ddbtypes.Update {
	expr, _ := expression.NewBuilder().
		WithUpdate(expression.Set(expression.Name("ver"), expression.Value(ver+1)).
			Set(expression.Name("bal"), expression.Name("bal").Plus(expression.Value(delta)))).
		WithCondition(expression.Name("ver").Equal(expression.Value(ver))).Build()
	return &ddbtypes.Update{TableName: aws.String(table), Key: acctKey(pk), UpdateExpression: expr.Update(),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()}
}

func TestTransactionsRaceConditionalSingleItemWrites(t *testing.T) {
	// Given two accounts holding 1,000 between them
	env := localaws.StartForTest(t)
	// This drives one item past the 1,000 write units and 3,000 read units
	// a second a DynamoDB partition serves, on purpose: it tests
	// contention, not throughput (capacity_test.go tests the limits).
	env.LiftThroughputLimits()
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	putAcct(t, env, table, "a", 500)
	putAcct(t, env, table, "b", 500)

	// When 8 goroutines transfer between them with versioned transactions
	// while 4 more bump a's version with conditional single-item writes,
	// every writer reading before it writes
	var txOK, singleOK atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Second)
	for g := range 8 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				got, err := env.DynamoDB.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []ddbtypes.TransactGetItem{
					{Get: &ddbtypes.Get{TableName: aws.String(table), Key: acctKey("a")}},
					{Get: &ddbtypes.Get{TableName: aws.String(table), Key: acctKey("b")}},
				}})
				if conflicted(err) { // a running write holds an item: DynamoDB cancels the read
					continue
				}
				if err != nil {
					t.Errorf("transact get: %v", err)
					return
				}
				var a, b acct
				attributevalue.UnmarshalMap(got.Responses[0].Item, &a)
				attributevalue.UnmarshalMap(got.Responses[1].Item, &b)
				d := int64(g%3 - 1)
				_, err = env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
					{Update: casUpdate(table, "a", a.Ver, -d)},
					{Update: casUpdate(table, "b", b.Ver, d)},
				}})
				var tce *ddbtypes.TransactionCanceledException
				switch {
				case err == nil:
					txOK.Add(1)
				case !errors.As(err, &tce):
					t.Errorf("transact write: %v", err)
					return
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				a, _ := getAcct(t, env, table, "a")
				_, err := env.DynamoDB.UpdateItem(ctx, func() *dynamodb.UpdateItemInput {
					u := casUpdate(table, "a", a.Ver, 0)
					return &dynamodb.UpdateItemInput{TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
						ConditionExpression: u.ConditionExpression, ExpressionAttributeNames: u.ExpressionAttributeNames,
						ExpressionAttributeValues: u.ExpressionAttributeValues}
				}())
				var ccf *ddbtypes.ConditionalCheckFailedException
				var tc *ddbtypes.TransactionConflictException
				switch {
				case err == nil:
					singleOK.Add(1)
				case errors.As(err, &tc): // a running transaction holds a: nothing applied
				case !errors.As(err, &ccf):
					t.Errorf("update: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()

	// Then no write was lost or applied twice: each successful write bumped
	// its item's version exactly once, and the balances still sum to 1,000
	a, _ := getAcct(t, env, table, "a")
	b, _ := getAcct(t, env, table, "b")
	if a.Bal+b.Bal != 1000 {
		t.Fatalf("balances %d + %d = %d, want 1000", a.Bal, b.Bal, a.Bal+b.Bal)
	}
	if a.Ver != txOK.Load()+singleOK.Load() || b.Ver != txOK.Load() {
		t.Fatalf("versions a=%d b=%d; want a=%d (%d transactions + %d single writes), b=%d",
			a.Ver, b.Ver, txOK.Load()+singleOK.Load(), txOK.Load(), singleOK.Load(), txOK.Load())
	}
	if txOK.Load() == 0 || singleOK.Load() == 0 {
		t.Fatalf("no contention exercised: %d transactions, %d single writes", txOK.Load(), singleOK.Load())
	}
	t.Logf("%d transactions and %d single-item writes committed", txOK.Load(), singleOK.Load())
}

func TestFailingConditionMidwayLeavesNoPartialWrite(t *testing.T) {
	// Given three items
	env := localaws.StartForTest(t)
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	putAcct(t, env, table, "x", 1)
	putAcct(t, env, table, "z", 3)

	// When a transaction overwrites x, creates y, deletes z, and then
	// fails a condition on a fourth item after those writes ran
	xItem, _ := attributevalue.MarshalMap(acct{PK: "x", SK: "A", Bal: 100})
	yItem, _ := attributevalue.MarshalMap(acct{PK: "y", SK: "A", Bal: 200})
	putAcct(t, env, table, "w", 7)
	_, err := env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: aws.String(table), Item: xItem}},
		{Put: &ddbtypes.Put{TableName: aws.String(table), Item: yItem}},
		{Delete: &ddbtypes.Delete{TableName: aws.String(table), Key: acctKey("z")}},
		{Update: func() *ddbtypes.Update {
			u := casUpdate(table, "w", 41, 1) // w's version is 0: fails
			u.ReturnValuesOnConditionCheckFailure = ddbtypes.ReturnValuesOnConditionCheckFailureAllOld
			return u
		}()},
	}})

	// Then it is cancelled with one reason per item, the failing one
	// carrying the item it found
	var tce *ddbtypes.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != 4 {
		t.Fatalf("err = %v, want TransactionCanceledException with 4 reasons", err)
	}
	for i, want := range []string{"None", "None", "None", "ConditionalCheckFailed"} {
		if got := aws.ToString(tce.CancellationReasons[i].Code); got != want {
			t.Fatalf("reason %d = %s, want %s", i, got, want)
		}
	}
	var w acct
	if err := attributevalue.UnmarshalMap(tce.CancellationReasons[3].Item, &w); err != nil || w.Bal != 7 {
		t.Fatalf("failing item = %+v (%v), want w with balance 7", w, err)
	}
	// and nothing it wrote remains
	if x, _ := getAcct(t, env, table, "x"); x.Bal != 1 {
		t.Fatalf("x = %+v, want its old balance 1", x)
	}
	if _, found := getAcct(t, env, table, "y"); found {
		t.Fatal("y exists, want absent")
	}
	if z, found := getAcct(t, env, table, "z"); !found || z.Bal != 3 {
		t.Fatalf("z = %+v found=%v, want it back with balance 3", z, found)
	}
}

func TestReadersNeverSeeHalfATransaction(t *testing.T) {
	// Given a pair of items that every transaction sets to one value, and
	// every third transaction that also fails a condition after writing
	env := localaws.StartForTest(t)
	// This drives one item past the 1,000 write units and 3,000 read units
	// a second a DynamoDB partition serves, on purpose: it tests
	// contention, not throughput (capacity_test.go tests the limits).
	env.LiftThroughputLimits()
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	putAcct(t, env, table, "p", 0)
	putAcct(t, env, table, "q", 0)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var committed atomic.Int64
	wg.Go(func() {
		for i := int64(1); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p, _ := attributevalue.MarshalMap(acct{PK: "p", SK: "A", Bal: i})
			q, _ := attributevalue.MarshalMap(acct{PK: "q", SK: "A", Bal: i})
			items := []ddbtypes.TransactWriteItem{
				{Put: &ddbtypes.Put{TableName: aws.String(table), Item: p}},
				{Put: &ddbtypes.Put{TableName: aws.String(table), Item: q}},
			}
			if i%3 == 0 {
				items = append(items, ddbtypes.TransactWriteItem{Update: casUpdate(table, "r-absent", 5, 1)})
			}
			_, err := env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
			if err == nil {
				committed.Add(1)
			}
		}
	})

	// When readers read both items in one TransactGetItems, many times
	// (until they have read 2,000 times and at least 10 transactions have
	// committed meanwhile: on a loaded machine the readers can take every
	// turn, and reads alone prove nothing)
	var reads atomic.Int64
	enough := func() bool { return reads.Load() >= 2000 && committed.Load() >= 10 }
	for range 4 {
		wg.Go(func() {
			for !enough() {
				got, err := env.DynamoDB.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []ddbtypes.TransactGetItem{
					{Get: &ddbtypes.Get{TableName: aws.String(table), Key: acctKey("p")}},
					{Get: &ddbtypes.Get{TableName: aws.String(table), Key: acctKey("q")}},
				}})
				if conflicted(err) {
					continue
				}
				if err != nil {
					t.Errorf("transact get: %v", err)
					return
				}
				var p, q acct
				attributevalue.UnmarshalMap(got.Responses[0].Item, &p)
				attributevalue.UnmarshalMap(got.Responses[1].Item, &q)
				// Then both items always carry the same value, and never
				// the value of a cancelled transaction
				if p.Bal != q.Bal || (p.Bal != 0 && p.Bal%3 == 0) {
					t.Errorf("read p=%d q=%d: half a transaction, or a cancelled one", p.Bal, q.Bal)
					return
				}
				reads.Add(1)
			}
		})
	}
	deadline := time.Now().Add(2 * time.Minute) // a bound on a hang, not a measure
	for !enough() && !t.Failed() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if !enough() && !t.Failed() {
		t.Fatalf("%d reads and %d transactions committed in 2 minutes, want 2,000 and 10", reads.Load(), committed.Load())
	}
}

func TestTransactionValidation(t *testing.T) {
	env := localaws.StartForTest(t)
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	put := func(pk string) ddbtypes.TransactWriteItem {
		item, _ := attributevalue.MarshalMap(acct{PK: pk, SK: "A"})
		return ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{TableName: aws.String(table), Item: item}}
	}
	var many []ddbtypes.TransactWriteItem
	for i := range 101 {
		many = append(many, put("m"+strconv.Itoa(i)))
	}
	tests := []struct {
		name  string
		items []ddbtypes.TransactWriteItem
	}{
		{"two operations on one item", []ddbtypes.TransactWriteItem{put("d"),
			{ConditionCheck: &ddbtypes.ConditionCheck{TableName: aws.String(table), Key: acctKey("d"), ConditionExpression: aws.String("attribute_not_exists(pk)")}}}},
		{"101 items", many},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tc.items})
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" {
				t.Fatalf("err = %v, want ValidationException", err)
			}
			if _, found := getAcct(t, env, table, "d"); found {
				t.Fatal("a refused transaction wrote an item")
			}
		})
	}
	// And exactly 100 items commit
	if _, err := env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: many[:100]}); err != nil {
		t.Fatalf("100 items: %v", err)
	}
	if _, found := getAcct(t, env, table, fmt.Sprintf("m%d", 99)); !found {
		t.Fatal("item 99 of a committed transaction is missing")
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// conflicted reports whether err is a transaction cancelled only because
// it met a running one (TransactionConflict), which DynamoDB answers to a
// TransactGetItems that meets a running write.
func conflicted(err error) bool {
	var tce *ddbtypes.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	for _, r := range tce.CancellationReasons {
		if c := aws.ToString(r.Code); c != "TransactionConflict" && c != "None" {
			return false
		}
	}
	return true
}
