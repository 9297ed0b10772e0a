package localaws_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/testkit"
)

// TestConditionCheckFailureReturnsTheItem: with
// ReturnValuesOnConditionCheckFailure=ALL_OLD, a PutItem, UpdateItem or
// DeleteItem whose condition fails returns the item as it stands in the
// ConditionalCheckFailedException, and a transaction's cancellation
// reason carries it too; with NONE, or when there is no item, nothing is
// returned. API reference, PutItem, ReturnValuesOnConditionCheckFailure
// (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html#DDB-PutItem-request-ReturnValuesOnConditionCheckFailure):
// "Use ReturnValuesOnConditionCheckFailure to get the item attributes if
// the PutItem operation failed a condition check"; UpdateItem, DeleteItem
// and TransactWriteItems' CancellationReason.Item say the same.
func TestConditionCheckFailureReturnsTheItem(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts localaws.Options
	}{
		{"the model on", localaws.Options{}},
		{"the model off", localaws.Options{NoModel: true}},
		{"the item spilled", localaws.Options{HotItems: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := startWith(t, tt.opts)
			ctx := context.Background()
			table := aws.String(env.TableName("IdempotencyTable"))
			stored := map[string]ddbtypes.AttributeValue{"pk": str("k"), "v": str("first")}
			if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: stored}); err != nil {
				t.Fatal(err)
			}
			if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: table,
				Item: map[string]ddbtypes.AttributeValue{"pk": str("other")}}); err != nil {
				t.Fatal(err) // with one hot item, k is spilled now
			}
			key := map[string]ddbtypes.AttributeValue{"pk": str("k")}
			absent := map[string]ddbtypes.AttributeValue{"pk": str("absent")}
			wrong := map[string]ddbtypes.AttributeValue{":x": str("not it")}
			allOld, none := ddbtypes.ReturnValuesOnConditionCheckFailureAllOld, ddbtypes.ReturnValuesOnConditionCheckFailureNone
			put := func(rv ddbtypes.ReturnValuesOnConditionCheckFailure) error {
				_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: table,
					Item:                                map[string]ddbtypes.AttributeValue{"pk": str("k"), "v": str("second")},
					ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
					ReturnValuesOnConditionCheckFailure: rv})
				return err
			}
			update := func(k map[string]ddbtypes.AttributeValue) func(ddbtypes.ReturnValuesOnConditionCheckFailure) error {
				return func(rv ddbtypes.ReturnValuesOnConditionCheckFailure) error {
					_, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: table, Key: k,
						UpdateExpression: aws.String("SET v = :x"), ConditionExpression: aws.String("v = :x"),
						ExpressionAttributeValues: wrong, ReturnValuesOnConditionCheckFailure: rv})
					return err
				}
			}
			del := func(k map[string]ddbtypes.AttributeValue) func(ddbtypes.ReturnValuesOnConditionCheckFailure) error {
				return func(rv ddbtypes.ReturnValuesOnConditionCheckFailure) error {
					_, err := env.DynamoDB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table, Key: k,
						ConditionExpression: aws.String("v = :x"), ExpressionAttributeValues: wrong, ReturnValuesOnConditionCheckFailure: rv})
					return err
				}
			}
			for _, c := range []struct {
				name string
				call func(ddbtypes.ReturnValuesOnConditionCheckFailure) error
				rv   ddbtypes.ReturnValuesOnConditionCheckFailure
				want map[string]ddbtypes.AttributeValue
			}{
				{"PutItem, ALL_OLD", put, allOld, stored},
				{"PutItem, NONE", put, none, nil},
				{"PutItem, not asked", put, "", nil},
				{"UpdateItem, ALL_OLD", update(key), allOld, stored},
				{"UpdateItem, NONE", update(key), none, nil},
				{"UpdateItem of no item, ALL_OLD", update(absent), allOld, nil},
				{"DeleteItem, ALL_OLD", del(key), allOld, stored},
				{"DeleteItem, NONE", del(key), none, nil},
				{"DeleteItem of no item, ALL_OLD", del(absent), allOld, nil},
			} {
				ccf, ok := errors.AsType[*ddbtypes.ConditionalCheckFailedException](c.call(c.rv))
				if !ok {
					t.Fatalf("%s: want ConditionalCheckFailedException", c.name)
				}
				if !sameItem(ccf.Item, c.want) {
					t.Errorf("%s: the failure carries %s; want %s", c.name, show(ccf.Item), show(c.want))
				}
			}

			_, err := env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
				{Put: &ddbtypes.Put{TableName: table, Item: map[string]ddbtypes.AttributeValue{"pk": str("new")}}},
				{Put: &ddbtypes.Put{TableName: table, Item: map[string]ddbtypes.AttributeValue{"pk": str("k")},
					ConditionExpression: aws.String("attribute_not_exists(pk)"), ReturnValuesOnConditionCheckFailure: allOld}},
			}})
			tce, ok := errors.AsType[*ddbtypes.TransactionCanceledException](err)
			if !ok || len(tce.CancellationReasons) != 2 {
				t.Fatalf("transaction: %v; want it cancelled with two reasons", err)
			}
			if r := tce.CancellationReasons[1]; aws.ToString(r.Code) != "ConditionalCheckFailed" || !sameItem(r.Item, stored) {
				t.Errorf("transaction: reason %s with %s; want ConditionalCheckFailed with %s", aws.ToString(r.Code), show(r.Item), show(stored))
			}
			got, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: key, ConsistentRead: aws.Bool(true)})
			if err != nil || !sameItem(got.Item, stored) {
				t.Fatalf("after the failed writes: %s, %v; want the item unchanged", show(got.Item), err)
			}
		})
	}
}

// startWith starts local AWS with opts for one test; against an external
// endpoint it skips, since opts configure the embedded emulators.
func startWith(t *testing.T, opts localaws.Options) *localaws.Env {
	t.Helper()
	if localaws.External() {
		t.Skip("the options configure the embedded emulators, and an external AWS endpoint is set")
	}
	env, err := localaws.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// sameItem reports whether two items hold the same string attributes
// (nil and empty are the same: no item).
func sameItem(a, b map[string]ddbtypes.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		x, ok1 := v.(*ddbtypes.AttributeValueMemberS)
		y, ok2 := b[k].(*ddbtypes.AttributeValueMemberS)
		if !ok1 || !ok2 || x.Value != y.Value {
			return false
		}
	}
	return true
}

// show writes an item of string attributes as {k: v, ...}, in key order.
func show(it map[string]ddbtypes.AttributeValue) string {
	if len(it) == 0 {
		return "no item"
	}
	var parts []string
	for k, v := range it {
		s, _ := v.(*ddbtypes.AttributeValueMemberS)
		if s == nil {
			s = &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("%T", v)}
		}
		parts = append(parts, k+": "+s.Value)
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}

// TestExpiredItemsStayUntilTTLDeletesThem: by default the local DynamoDB
// deletes nothing when an item's TTL passes, as DynamoDB may not for days:
// developer guide, "Time to Live (TTL)"
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html):
// DynamoDB deletes expired items within a few days, and "Items that have
// expired and not been deleted will still show up in reads, queries, and
// scans" (API reference, UpdateTimeToLive). So no test passes for code
// that assumes an expired item is gone: every store checks expires_at
// itself.
func TestExpiredItemsStayUntilTTLDeletesThem(t *testing.T) {
	env := startWith(t, localaws.Options{})
	ctx := context.Background()
	table := aws.String(env.TableName("IntakeTable"))
	past := strconv.FormatInt(time.Now().Add(-24*time.Hour).Unix(), 10)
	if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]ddbtypes.AttributeValue{
		"pk": str("payments#evt_old"), "source_shard": str("payments#00"), "received_at": str("2026-01-01T00:00:00.000Z"),
		"expires_at": &ddbtypes.AttributeValueMemberN{Value: past}}}); err != nil {
		t.Fatal(err)
	}
	if n := env.ExpireItemsNow(); n != 0 {
		t.Fatalf("ExpireItemsNow deleted %d items without ExpireItems; want none", n)
	}
	got, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"pk": str("payments#evt_old")}})
	if err != nil || got.Item == nil {
		t.Fatalf("GetItem of an item expired a day ago: %v, %v; want the item", got, err)
	}
	for _, q := range []*dynamodb.QueryInput{
		{TableName: table, KeyConditionExpression: aws.String("pk = :k"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":k": str("payments#evt_old")}},
		{TableName: table, IndexName: aws.String("by_shard_received"), KeyConditionExpression: aws.String("source_shard = :s"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":s": str("payments#00")}},
	} {
		out, err := env.DynamoDB.Query(ctx, q)
		if err != nil || out.Count != 1 {
			t.Fatalf("Query %s of an item expired a day ago: %v, %v; want it", aws.ToString(q.IndexName), out, err)
		}
	}
}

// TestPromptExpiryDeletesExpiredItems: with Options.ExpireItems the local
// DynamoDB deletes an item once the number in its table's TTL attribute
// (epoch seconds) is less than the time now, as DynamoDB's TTL does
// (developer guide, "Time to Live (TTL)"), only without its delay: from
// the table and its indexes, whether the item is kept in minidyn or
// spilled. An item whose TTL attribute is missing or not a number, or in
// a table without TTL, is never deleted; an item written again with a
// later TTL lives until then.
func TestPromptExpiryDeletesExpiredItems(t *testing.T) {
	clock := testkit.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	env := startWith(t, localaws.Options{ExpireItems: true, Now: clock.Now, HotItems: 2})
	ctx := context.Background()
	idem, ledger, workloads := env.TableName("IdempotencyTable"), env.TableName("LedgerTable"), env.TableName("WorkloadsTable")
	at := func(d time.Duration) ddbtypes.AttributeValue {
		return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(clock.Now().Add(d).Unix(), 10)}
	}
	put := func(table string, item map[string]ddbtypes.AttributeValue) {
		t.Helper()
		if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	put(idem, map[string]ddbtypes.AttributeValue{"pk": str("spilled"), "expires_at": at(-time.Second)})
	put(idem, map[string]ddbtypes.AttributeValue{"pk": str("expired"), "expires_at": at(-time.Second)})
	put(idem, map[string]ddbtypes.AttributeValue{"pk": str("now"), "expires_at": at(0)})
	put(idem, map[string]ddbtypes.AttributeValue{"pk": str("in a minute"), "expires_at": at(time.Minute)})
	put(idem, map[string]ddbtypes.AttributeValue{"pk": str("no ttl")})
	put(idem, map[string]ddbtypes.AttributeValue{"pk": str("not a number"), "expires_at": str("0")})
	put(idem, map[string]ddbtypes.AttributeValue{"pk": str("written again"), "expires_at": at(-time.Second)})
	put(idem, map[string]ddbtypes.AttributeValue{"pk": str("written again"), "expires_at": at(2 * time.Minute)})
	put(idem, map[string]ddbtypes.AttributeValue{"pk": str("updated"), "expires_at": at(time.Minute)})
	if _, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(idem),
		Key: map[string]ddbtypes.AttributeValue{"pk": str("updated")}, UpdateExpression: aws.String("SET expires_at = :t"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":t": at(2 * time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	put(ledger, map[string]ddbtypes.AttributeValue{"pk": str("ledger"), "sk": str("1"), "expires_at": at(-time.Hour)})
	put(workloads, map[string]ddbtypes.AttributeValue{"pk": str("workload"), "sk": str("1"), "gsi1pk": str("g"), "gsi1sk": str("1"),
		"expires_at": at(-time.Second)})

	// Then each sweep deletes what expired before it, and nothing else.
	for _, step := range []struct {
		advance time.Duration
		gone    []string
	}{
		{0, []string{"spilled", "expired", "workload"}},
		{time.Second, []string{"now"}},
		{time.Minute, []string{"in a minute"}},
		{time.Minute, []string{"written again", "updated"}},
		{time.Hour, nil},
	} {
		clock.Advance(step.advance)
		if n := env.ExpireItemsNow(); n != len(step.gone) {
			t.Errorf("%s later: the sweep deleted %d items; want %d (%v)", clock.Now().Sub(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), n, len(step.gone), step.gone)
		}
		for _, k := range step.gone {
			table, key := idem, map[string]ddbtypes.AttributeValue{"pk": str(k)}
			if k == "workload" {
				table, key = workloads, map[string]ddbtypes.AttributeValue{"pk": str(k), "sk": str("1")}
			}
			got, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
			if err != nil || got.Item != nil {
				t.Errorf("%q after its TTL: %s, %v; want it deleted", k, show(got.Item), err)
			}
		}
	}
	out, err := env.DynamoDB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(idem)})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, it := range out.Items {
		left = append(left, it["pk"].(*ddbtypes.AttributeValueMemberS).Value)
	}
	slices.Sort(left)
	if !slices.Equal(left, []string{"no ttl", "not a number"}) {
		t.Errorf("the idempotency table holds %q; want the items without a numeric TTL", left)
	}
	for table, q := range map[string]*dynamodb.QueryInput{
		ledger: {TableName: aws.String(ledger), KeyConditionExpression: aws.String("pk = :k"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":k": str("ledger")}},
		workloads: {TableName: aws.String(workloads), IndexName: aws.String("gsi1"), KeyConditionExpression: aws.String("gsi1pk = :k"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":k": str("g")}},
	} {
		want := map[string]int32{ledger: 1, workloads: 0}[table] // the ledger has no TTL
		if out, err := env.DynamoDB.Query(ctx, q); err != nil || out.Count != want {
			t.Errorf("%s: query found %v, %v; want %d items", table, out, err, want)
		}
	}
	if n := env.ItemsExpired(); n != 7 {
		t.Errorf("ItemsExpired = %d; want 7", n)
	}
}
