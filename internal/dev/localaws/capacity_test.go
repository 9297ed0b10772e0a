package localaws

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/testkit"
)

// startMetered starts an embedded DynamoDB whose partitions refill only
// when the test moves the clock, so that budgets are exact.
func startMetered(t *testing.T) (*Env, *testkit.ManualClock) {
	t.Helper()
	env, front := startEmbedded(t, Options{})
	clock := testkit.NewManualClock(time.Unix(1_800_000_000, 0))
	front.meter.mu.Lock()
	front.meter.now = clock.Now
	front.meter.mu.Unlock()
	return env, clock
}

// once sends a call with no SDK retry, so that a test sees each answer.
func once(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} }

// row is a ledger-shaped item (pk, sk) with a data attribute of n bytes
// and any extra attributes.
func row(pk, sk string, n int, extra ...string) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk},
		"data": &types.AttributeValueMemberS{Value: strings.Repeat("x", n)},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		it[extra[i]] = &types.AttributeValueMemberS{Value: extra[i+1]}
	}
	return it
}

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}
}

func put(t *testing.T, env *Env, table string, it map[string]types.AttributeValue) *types.ConsumedCapacity {
	t.Helper()
	out, err := env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it,
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes}, once)
	if err != nil {
		t.Fatalf("put: %v", err)
	}
	return out.ConsumedCapacity
}

func setData(env *Env, table, pk, sk string, n int) (*dynamodb.UpdateItemOutput, error) {
	return env.DynamoDB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key(pk, sk),
		UpdateExpression:          aws.String("SET #d = :d"),
		ExpressionAttributeNames:  map[string]string{"#d": "data"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": &types.AttributeValueMemberS{Value: strings.Repeat("y", n)}},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes}, once)
}

func units(cc *types.ConsumedCapacity) float64 {
	if cc == nil {
		return -1
	}
	return aws.ToFloat64(cc.CapacityUnits)
}

// TestWriteUnitsFollowItemSize reproduces the developer guide's "DynamoDB
// read and write operations" (capacity unit consumption for writes,
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html):
// a write unit per 1 KB rounded up; PutItem and UpdateItem billed on the
// larger of the item before and after; DeleteItem on the deleted item
// (the minimum of 1 when there is none).
func TestWriteUnitsFollowItemSize(t *testing.T) {
	env, _ := startMetered(t)
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	tests := []struct {
		name string
		run  func() (*types.ConsumedCapacity, error)
		want float64
	}{
		{"put of 100 bytes", func() (*types.ConsumedCapacity, error) { return put(t, env, table, row("a", "1", 100)), nil }, 1},
		{"put of 1.5 KB", func() (*types.ConsumedCapacity, error) { return put(t, env, table, row("b", "1", 1500)), nil }, 2},
		{"put of 100 bytes over 1.5 KB: the larger", func() (*types.ConsumedCapacity, error) { return put(t, env, table, row("b", "1", 100)), nil }, 2},
		{"update from 100 bytes to 2.5 KB: the after", func() (*types.ConsumedCapacity, error) {
			out, err := setData(env, table, "a", "1", 2500)
			return out.ConsumedCapacity, err
		}, 3},
		{"update from 2.5 KB to 10 bytes: the before", func() (*types.ConsumedCapacity, error) {
			out, err := setData(env, table, "a", "1", 10)
			return out.ConsumedCapacity, err
		}, 3},
		{"delete of 1.5 KB", func() (*types.ConsumedCapacity, error) {
			put(t, env, table, row("c", "1", 1500))
			out, err := env.DynamoDB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("c", "1"),
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}, once)
			return out.ConsumedCapacity, err
		}, 2},
		{"delete of nothing", func() (*types.ConsumedCapacity, error) {
			out, err := env.DynamoDB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("none", "1"),
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}, once)
			return out.ConsumedCapacity, err
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// When the write runs with ReturnConsumedCapacity
			cc, err := tt.run()
			// Then it answers the units DynamoDB bills, for its table
			if err != nil {
				t.Fatal(err)
			}
			if got := units(cc); got != tt.want || aws.ToString(cc.TableName) != table {
				t.Errorf("consumed %v units of %s, want %v of %s", got, aws.ToString(cc.TableName), tt.want, table)
			}
		})
	}
}

// TestReadUnitsFollowItemSize reproduces the same page for reads: a read
// unit per 4 KB rounded up, half for an eventually consistent read, the
// minimum for an absent item, the whole item whatever the projection, and
// a Query's items summed and rounded up once.
func TestReadUnitsFollowItemSize(t *testing.T) {
	env, _ := startMetered(t)
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	put(t, env, table, row("big", "1", 5000))
	for i := range 3 {
		put(t, env, table, row("q", fmt.Sprint(i), 1500))
	}
	get := func(pk string, consistent bool, projection string) func() (*types.ConsumedCapacity, error) {
		return func() (*types.ConsumedCapacity, error) {
			in := &dynamodb.GetItemInput{TableName: aws.String(table), Key: key(pk, "1"), ConsistentRead: aws.Bool(consistent),
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}
			if projection != "" {
				in.ProjectionExpression = aws.String(projection)
			}
			out, err := env.DynamoDB.GetItem(ctx, in, once)
			return out.ConsumedCapacity, err
		}
	}
	tests := []struct {
		name string
		run  func() (*types.ConsumedCapacity, error)
		want float64
	}{
		{"consistent get of 5 KB", get("big", true, ""), 2},
		{"eventually consistent get of 5 KB", get("big", false, ""), 1},
		{"consistent get of 5 KB projecting its key", get("big", true, "pk"), 2},
		{"consistent get of nothing", get("none", true, ""), 1},
		{"eventually consistent get of nothing", get("none", false, ""), 0.5},
		{"consistent query of three 1.5 KB items: 4.5 KB rounded once", func() (*types.ConsumedCapacity, error) {
			out, err := env.DynamoDB.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table),
				KeyConditionExpression:    aws.String("pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "q"}},
				ConsistentRead:            aws.Bool(true), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}, once)
			if err == nil && len(out.Items) != 3 {
				return nil, fmt.Errorf("query returned %d items", len(out.Items))
			}
			return out.ConsumedCapacity, err
		}, 2},
		{"consistent scan of 5 KB and three 1.5 KB items: 9.5 KB rounded once", scan(env, table, true, 4), 3},
		{"eventually consistent scan of the same", scan(env, table, false, 4), 1.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc, err := tt.run()
			if err != nil {
				t.Fatal(err)
			}
			if got := units(cc); got != tt.want {
				t.Errorf("consumed %v read units, want %v", got, tt.want)
			}
		})
	}
}

// scan is a Scan of the whole of table that must return want items.
func scan(env *Env, table string, consistent bool, want int) func() (*types.ConsumedCapacity, error) {
	return func() (*types.ConsumedCapacity, error) {
		out, err := env.DynamoDB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table),
			ConsistentRead: aws.Bool(consistent), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}, once)
		if err != nil {
			return nil, err
		}
		if len(out.Items) != want {
			return nil, fmt.Errorf("scan returned %d items, want %d", len(out.Items), want)
		}
		return out.ConsumedCapacity, nil
	}
}

// TestTransactionsCostTwice reproduces "Capacity management for
// transactions" (developer guide, Amazon DynamoDB Transactions,
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-capacity-handling):
// every item of a transaction costs two underlying reads or writes; a
// ConditionCheck is a read.
func TestTransactionsCostTwice(t *testing.T) {
	env, _ := startMetered(t)
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	put(t, env, table, row("big", "1", 5000))
	// When a transaction puts a 1.5 KB item and checks a 5 KB one
	out, err := env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: row("t", "1", 1500)}},
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(table), Key: key("big", "1"),
			ConditionExpression: aws.String("attribute_exists(pk)")}},
	}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}, once)
	if err != nil {
		t.Fatal(err)
	}
	// Then the put costs 2 x 2 write units and the check 2 x 2 read units
	if len(out.ConsumedCapacity) != 1 {
		t.Fatalf("consumed capacity %+v, want one table", out.ConsumedCapacity)
	}
	cc := out.ConsumedCapacity[0]
	if w, r := aws.ToFloat64(cc.WriteCapacityUnits), aws.ToFloat64(cc.ReadCapacityUnits); w != 4 || r != 4 {
		t.Errorf("transaction consumed %v write and %v read units, want 4 and 4", w, r)
	}
	// And a TransactGetItems of the 5 KB item costs 2 x 2 read units
	got, err := env.DynamoDB.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String(table), Key: key("big", "1")}},
	}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}, once)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ConsumedCapacity) != 1 || units(&got.ConsumedCapacity[0]) != 4 {
		t.Errorf("transact get consumed %+v, want 4 units", got.ConsumedCapacity)
	}
}

// gsi1Units is what one write wrote to gsi1, from INDEXES (0: none).
func gsi1Units(cc *types.ConsumedCapacity) float64 {
	if cc == nil {
		return -1
	}
	return aws.ToFloat64(cc.GlobalSecondaryIndexes["gsi1"].CapacityUnits)
}

// TestIndexWritesFollowProjection reproduces the developer guide's
// "Provisioned throughput considerations for global secondary indexes"
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations.Writes):
// an item that enters an index is one write there; an update that changes
// the index's key is two (a delete and a put); one that changes a
// projected attribute one; one that changes only attributes the index
// does not project, none. The ledger's gsi1 projects ALL, the workloads'
// KEYS_ONLY.
func TestIndexWritesFollowProjection(t *testing.T) {
	env, _ := startMetered(t)
	ledger, workloads := env.TableName("LedgerTable"), env.TableName("WorkloadsTable")
	put(t, env, ledger, row("l", "1", 10, "gsi1pk", "A", "gsi1sk", "1"))
	put(t, env, workloads, row("w", "1", 10, "gsi1pk", "A", "gsi1sk", "1"))
	tests := []struct {
		name string
		run  func() (*types.ConsumedCapacity, error)
		want float64
	}{
		{"an item without the index's key", func() (*types.ConsumedCapacity, error) { return put(t, env, ledger, row("n", "1", 10)), nil }, 0},
		{"a new item in the index", func() (*types.ConsumedCapacity, error) {
			return put(t, env, workloads, row("w", "2", 10, "gsi1pk", "A", "gsi1sk", "2")), nil
		}, 1},
		{"an update of an attribute ALL projects", func() (*types.ConsumedCapacity, error) {
			out, err := setData(env, ledger, "l", "1", 20)
			return out.ConsumedCapacity, err
		}, 1},
		{"an update of an attribute KEYS_ONLY does not project", func() (*types.ConsumedCapacity, error) {
			out, err := setData(env, workloads, "w", "1", 20)
			return out.ConsumedCapacity, err
		}, 0},
		{"an update that moves the item to another index partition", func() (*types.ConsumedCapacity, error) {
			out, err := env.DynamoDB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(workloads),
				Key: key("w", "1"), UpdateExpression: aws.String("SET gsi1pk = :b"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":b": &types.AttributeValueMemberS{Value: "B"}},
				ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes}, once)
			return out.ConsumedCapacity, err
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc, err := tt.run()
			if err != nil {
				t.Fatal(err)
			}
			if got := gsi1Units(cc); got != tt.want {
				t.Errorf("gsi1 consumed %v write units, want %v (%+v)", got, tt.want, cc)
			}
			if cc.Table == nil || aws.ToFloat64(cc.Table.CapacityUnits) != 1 {
				t.Errorf("table consumed %+v, want 1 unit", cc.Table)
			}
		})
	}
}

// throttleReasonOf returns the first throttling reason of a
// ProvisionedThroughputExceededException, or "" for any other error.
func throttleReasonOf(err error) (reason, resource string) {
	var pte *types.ProvisionedThroughputExceededException
	if !errors.As(err, &pte) || len(pte.ThrottlingReasons) == 0 {
		return "", ""
	}
	return aws.ToString(pte.ThrottlingReasons[0].Reason), aws.ToString(pte.ThrottlingReasons[0].Resource)
}

// fill spends a partition's whole budget: 100 writes of 10 KB, 10 write
// units each (1,000 write units a second, one second of burst).
func fill(t *testing.T, env *Env, table, pk string) {
	t.Helper()
	for i := range 100 {
		put(t, env, table, row(pk, fmt.Sprintf("fill-%03d", i), 10_000))
	}
}

// TestAPartitionIsThrottledPastItsBudget reproduces DynamoDB's partition
// limit (developer guide, "Best practices for designing and using
// partition keys effectively",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html):
// one partition key value serves at most 1,000 write units or 3,000 read
// units a second, as one budget; past it DynamoDB answers
// ProvisionedThroughputExceededException with the reason
// TableWriteKeyRangeThroughputExceeded (API reference, "ThrottlingReason",
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_ThrottlingReason.html)
// and applies nothing. Other keys are served.
func TestAPartitionIsThrottledPastItsBudget(t *testing.T) {
	env, clock := startMetered(t)
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	// Given a partition that took 1,000 write units within a second
	fill(t, env, table, "hot")
	// When it takes one more write
	_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: row("hot", "over", 10)}, once)
	// Then it is throttled, with the table's reason and ARN
	reason, resource := throttleReasonOf(err)
	if reason != "TableWriteKeyRangeThroughputExceeded" || !strings.HasSuffix(resource, ":table/"+table) {
		t.Fatalf("write past the budget: %v (reason %q, resource %q)", err, reason, resource)
	}
	// And another partition key is served at once
	put(t, env, table, row("cold", "1", 10))
	// And after a second the partition serves again, reads and writes
	// from one budget: 300 consistent reads of 10 KB (3 read units each,
	// 300 write units' worth) leave room for 70 writes, and no more reads
	clock.Advance(time.Second)
	for range 300 {
		if _, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("hot", "fill-000"),
			ConsistentRead: aws.Bool(true)}, once); err != nil {
			t.Fatalf("read within the budget: %v", err)
		}
	}
	for i := range 70 {
		put(t, env, table, row("hot", fmt.Sprintf("mixed-%02d", i), 10_000))
	}
	_, err = env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("hot", "fill-000")}, once)
	if reason, _ := throttleReasonOf(err); reason != "TableReadKeyRangeThroughputExceeded" {
		t.Fatalf("read past the shared budget: %v, want TableReadKeyRangeThroughputExceeded", err)
	}
	// And unused capacity is kept for one second only: after ten idle
	// seconds the partition takes 1,000 write units, not 10,000
	clock.Advance(10 * time.Second)
	fill(t, env, table, "hot")
	if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: row("hot", "over", 10)}, once); err == nil {
		t.Fatal("a write past one second of burst was served")
	}
	// And the counters say so
	c := env.Capacity().Tables[table]
	if c.WriteThrottles != 2 || c.ReadThrottles != 1 || c.WriteUnits != 1000+1+700+1000 || c.ReadUnits != 300*3 {
		t.Errorf("capacity = %+v", c)
	}
	// And the throttled writes were never applied
	env.LiftThroughputLimits()
	out, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("hot", "over"),
		ConsistentRead: aws.Bool(true)}, once)
	if err != nil || out.Item != nil {
		t.Fatalf("throttled write: get %v, %v; want absent", out.Item, err)
	}
}

// TestAThrottledIndexThrottlesTheTableWrite reproduces "Provisioned
// throughput considerations for global secondary indexes": a table write
// that would write an index partition past its budget is throttled
// (IndexWriteKeyRangeThroughputExceeded, naming the index), and writes
// that the index does not see go on.
func TestAThrottledIndexThrottlesTheTableWrite(t *testing.T) {
	env, _ := startMetered(t)
	ctx := context.Background()
	table := env.TableName("WorkloadsTable")
	// Given 1,000 items on different table partitions that share one
	// index partition (1 write unit each there)
	for i := range 1000 {
		put(t, env, table, row(fmt.Sprintf("w-%04d", i), "1", 10, "gsi1pk", "ALL", "gsi1sk", fmt.Sprint(i)))
	}
	// When one more item joins that index partition
	_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
		Item: row("w-new", "1", 10, "gsi1pk", "ALL", "gsi1sk", "new")}, once)
	// Then the table write is throttled for the index, and not applied
	reason, resource := throttleReasonOf(err)
	if reason != "IndexWriteKeyRangeThroughputExceeded" || !strings.HasSuffix(resource, ":table/"+table+"/index/gsi1") {
		t.Fatalf("write past the index budget: %v (reason %q, resource %q)", err, reason, resource)
	}
	c := env.Capacity().Tables[table]
	if c.Indexes["gsi1"].WriteThrottles != 1 || c.Indexes["gsi1"].WriteUnits != 1000 {
		t.Errorf("gsi1 capacity = %+v", c.Indexes["gsi1"])
	}
	// And an update that the KEYS_ONLY index does not see is served
	if _, err := setData(env, table, "w-0001", "1", 20); err != nil {
		t.Fatalf("update of an unprojected attribute: %v", err)
	}
}

// TestThrottlingCancelsATransaction reproduces TransactWriteItems' and
// TransactGetItems' TransactionCanceledException (API reference): a
// transaction without the capacity it needs is cancelled, reason
// ThrottlingError for the item that lacked it and None for the rest, and
// nothing is applied.
func TestThrottlingCancelsATransaction(t *testing.T) {
	env, _ := startMetered(t)
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	fill(t, env, table, "hot")
	// When a transaction writes a cold item and the hot partition
	_, err := env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: row("cold", "1", 10)}},
		{Put: &types.Put{TableName: aws.String(table), Item: row("hot", "tx", 10)}},
	}}, once)
	// Then it is cancelled for throttling on the hot item only
	if got := reasonCodes(err); got != "None,ThrottlingError" {
		t.Fatalf("transaction past the budget: %v (reasons %s)", err, got)
	}
	// And the cold item was not written
	out, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("cold", "1"),
		ConsistentRead: aws.Bool(true)}, once)
	if err != nil || out.Item != nil {
		t.Fatalf("cold item after a cancelled transaction: %v, %v", out.Item, err)
	}
	// And a TransactGetItems of the hot partition is cancelled alike
	_, err = env.DynamoDB.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String(table), Key: key("hot", "fill-000")}},
	}}, once)
	if got := reasonCodes(err); got != "ThrottlingError" {
		t.Fatalf("transact get past the budget: %v (reasons %s)", err, got)
	}
}

func reasonCodes(err error) string {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return ""
	}
	var codes []string
	for _, r := range tce.CancellationReasons {
		codes = append(codes, aws.ToString(r.Code))
	}
	return strings.Join(codes, ",")
}

// TestBatchesReturnThrottledRequestsUnprocessed reproduces BatchWriteItem
// and BatchGetItem (API reference): requests DynamoDB cannot serve for
// throughput come back in UnprocessedItems / UnprocessedKeys, and only
// when none can be served is the call ProvisionedThroughputExceededException.
func TestBatchesReturnThrottledRequestsUnprocessed(t *testing.T) {
	env, _ := startMetered(t)
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	fill(t, env, table, "hot")
	// When a batch writes a hot and a cold item
	out, err := env.DynamoDB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		table: {{PutRequest: &types.PutRequest{Item: row("hot", "b", 10)}}, {PutRequest: &types.PutRequest{Item: row("cold", "b", 10)}}},
	}}, once)
	// Then the hot one comes back unprocessed and the cold one is written
	if err != nil || len(out.UnprocessedItems[table]) != 1 {
		t.Fatalf("batch write: %+v, %v; want one unprocessed", out, err)
	}
	if pk := out.UnprocessedItems[table][0].PutRequest.Item["pk"].(*types.AttributeValueMemberS).Value; pk != "hot" {
		t.Errorf("unprocessed %s, want hot", pk)
	}
	// And a batch get of both returns the cold item and the hot key unprocessed
	got, err := env.DynamoDB.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		table: {Keys: []map[string]types.AttributeValue{key("hot", "fill-000"), key("cold", "b")}, ConsistentRead: aws.Bool(true)},
	}}, once)
	if err != nil || len(got.Responses[table]) != 1 || len(got.UnprocessedKeys[table].Keys) != 1 {
		t.Fatalf("batch get: %+v, %v; want one item and one unprocessed key", got, err)
	}
	// And a batch of the hot partition alone is throttled
	_, err = env.DynamoDB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		table: {{PutRequest: &types.PutRequest{Item: row("hot", "c", 10)}}},
	}}, once)
	if reason, _ := throttleReasonOf(err); reason != "TableWriteKeyRangeThroughputExceeded" {
		t.Fatalf("batch of a throttled partition: %v", err)
	}
}

// TestSDKRetriesOfAThrottleConsumeCapacity checks that the SDK's own
// retries of a throttled request are requests like any other (developer
// guide, "Error handling with DynamoDB": the SDKs retry
// ProvisionedThroughputExceededException with backoff): each attempt is
// metered, and here, with the partition's clock stopped, each is
// throttled.
func TestSDKRetriesOfAThrottleConsumeCapacity(t *testing.T) {
	env, _ := startMetered(t)
	table := env.TableName("LedgerTable")
	fill(t, env, table, "hot")
	// When the SDK's standard retryer (3 attempts, awsconf) sends a write
	_, err := env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: row("hot", "r", 10)},
		func(o *dynamodb.Options) { o.RetryMaxAttempts = 3 })
	// Then every attempt was throttled and counted
	if reason, _ := throttleReasonOf(err); reason == "" {
		t.Fatalf("write: %v, want throttled", err)
	}
	if got := env.Capacity().Tables[table].WriteThrottles; got != 3 {
		t.Errorf("%d throttles counted, want 3 (one per attempt)", got)
	}
}

// TestNoModelMetersNothing checks the baseline switch: with the model off
// nothing is throttled or counted.
func TestNoModelMetersNothing(t *testing.T) {
	env, _ := startEmbedded(t, Options{NoModel: true})
	table := env.TableName("LedgerTable")
	for i := range 150 {
		if _, err := env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: row("hot", fmt.Sprint(i), 10_000)}, once); err != nil {
			t.Fatalf("put %d with the model off: %v", i, err)
		}
	}
	if got := env.Capacity().Tables; len(got) != 0 {
		t.Errorf("capacity with the model off = %+v, want none", got)
	}
}
