package localaws

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

var spillSeed = flag.Uint64("spill-seed", 0, "seed of the spilling test's operations (0: three fixed seeds)")

// startEmbedded starts a local AWS whose DynamoDB is embedded, with opts.
func startEmbedded(t *testing.T, opts Options) (*Env, *dynamoFront) {
	t.Helper()
	if External() {
		t.Skip("spilling is a property of the embedded DynamoDB")
	}
	env, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env, env.dynamoHandler.(*dynamoFront)
}

// TestSpillingAnswersAsKeepingEverything runs one seeded sequence of item
// operations against a DynamoDB that keeps three items in its engine and
// spills the rest, and against one that keeps everything: every answer
// must be the same, and so must the tables at the end.
func TestSpillingAnswersAsKeepingEverything(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if *spillSeed != 0 {
		seeds = []uint64{*spillSeed}
	}
	spilling, front := startEmbedded(t, Options{HotItems: 3})
	keeping, _ := startEmbedded(t, Options{HotItems: -1})
	table := spilling.TableName("LedgerTable")
	ctx := context.Background()
	most := 0
	for _, seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 0))
		part := fmt.Sprintf("s%d-", seed)
		for i := range 1500 {
			name, op := randomItemOp(rng, table, part)
			a, b := op(ctx, spilling.DynamoDB), op(ctx, keeping.DynamoDB)
			if a != b {
				t.Fatalf("seed %d, operation %d (%s):\n spilling: %s\n keeping:  %s", seed, i, name, a, b)
			}
			most = max(most, front.spilledCount())
		}
	}
	if most < 40 {
		t.Fatalf("at most %d items were spilled at once; the test did not exercise spilling", most)
	}
	for _, read := range []func(context.Context, *dynamodb.Client) string{queryIndex(table), scanAll(table)} {
		a, b := read(ctx, spilling.DynamoDB), read(ctx, keeping.DynamoDB)
		if a != b {
			t.Fatalf("tables differ at the end:\n spilling: %s\n keeping:  %s", a, b)
		}
	}
	if n := front.spilledCount(); n != 0 {
		t.Fatalf("%d items still spilled after a scan of the table", n)
	}
}

type testOp func(context.Context, *dynamodb.Client) string

// randomItemOp returns one random operation on the items of a few
// partitions, and its name.
func randomItemOp(rng *rand.Rand, table, part string) (string, testOp) {
	key := func() map[string]ddbtypes.AttributeValue {
		return map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("%sp%d", part, rng.IntN(30))},
			"sk": &ddbtypes.AttributeValueMemberS{Value: []string{"A", "B"}[rng.IntN(2)]},
		}
	}
	n := func() ddbtypes.AttributeValue {
		return &ddbtypes.AttributeValueMemberN{Value: fmt.Sprint(rng.IntN(20))}
	}
	s := func() ddbtypes.AttributeValue {
		return &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("v%d", rng.IntN(1000))}
	}
	full := func() map[string]ddbtypes.AttributeValue {
		it := key()
		it["n"], it["tag"], it["gsi1pk"], it["gsi1sk"] = n(), s(), &ddbtypes.AttributeValueMemberS{Value: part + "G"}, s()
		it["list"] = &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{s(), n()}}
		return it
	}
	t := aws.String(table)
	switch rng.IntN(8) {
	case 0, 1:
		in := &dynamodb.PutItemInput{TableName: t, Item: full(), ReturnValues: ddbtypes.ReturnValueAllOld}
		if rng.IntN(2) == 0 {
			in.ConditionExpression = aws.String("attribute_not_exists(pk)")
		}
		return "PutItem", func(ctx context.Context, c *dynamodb.Client) string {
			out, err := c.PutItem(ctx, in)
			return outcome(err, func() any { return out.Attributes })
		}
	case 2, 3:
		in := &dynamodb.UpdateItemInput{TableName: t, Key: key(), UpdateExpression: aws.String("ADD n :one SET tag = :t"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": &ddbtypes.AttributeValueMemberN{Value: "1"}, ":t": s()},
			ReturnValues:              ddbtypes.ReturnValueAllNew}
		if rng.IntN(2) == 0 {
			in.ConditionExpression = aws.String("attribute_exists(pk) AND n < :lim")
			in.ExpressionAttributeValues[":lim"] = n()
		}
		return "UpdateItem", func(ctx context.Context, c *dynamodb.Client) string {
			out, err := c.UpdateItem(ctx, in)
			return outcome(err, func() any { return out.Attributes })
		}
	case 4:
		in := &dynamodb.DeleteItemInput{TableName: t, Key: key(), ReturnValues: ddbtypes.ReturnValueAllOld}
		if rng.IntN(3) == 0 {
			in.ConditionExpression = aws.String("n > :x")
			in.ExpressionAttributeValues = map[string]ddbtypes.AttributeValue{":x": n()}
		}
		return "DeleteItem", func(ctx context.Context, c *dynamodb.Client) string {
			out, err := c.DeleteItem(ctx, in)
			return outcome(err, func() any { return out.Attributes })
		}
	case 5:
		in := &dynamodb.GetItemInput{TableName: t, Key: key(), ConsistentRead: aws.Bool(true)}
		return "GetItem", func(ctx context.Context, c *dynamodb.Client) string {
			out, err := c.GetItem(ctx, in)
			return outcome(err, func() any { return out.Item })
		}
	case 6:
		a, b := full(), key()
		if a["pk"].(*ddbtypes.AttributeValueMemberS).Value == b["pk"].(*ddbtypes.AttributeValueMemberS).Value {
			b["pk"] = &ddbtypes.AttributeValueMemberS{Value: part + "other"}
		}
		in := &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
			{Put: &ddbtypes.Put{TableName: t, Item: a, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
			{Update: &ddbtypes.Update{TableName: t, Key: b, UpdateExpression: aws.String("ADD n :one"),
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": &ddbtypes.AttributeValueMemberN{Value: "1"}}}},
		}}
		return "TransactWriteItems", func(ctx context.Context, c *dynamodb.Client) string {
			_, err := c.TransactWriteItems(ctx, in)
			return outcome(err, func() any { return nil })
		}
	default:
		keys := []map[string]ddbtypes.AttributeValue{key()}
		if k := key(); fmt.Sprint(k) != fmt.Sprint(keys[0]) {
			keys = append(keys, k)
		}
		in := &dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{table: {Keys: keys, ConsistentRead: aws.Bool(true)}}}
		return "BatchGetItem", func(ctx context.Context, c *dynamodb.Client) string {
			out, err := c.BatchGetItem(ctx, in)
			return outcome(err, func() any { return sortedItems(out.Responses[table]) })
		}
	}
}

// outcome is an operation's answer as text: its error code, or its
// result as canonical JSON.
func outcome(err error, result func() any) string {
	if err != nil {
		var api smithy.APIError
		if errors.As(err, &api) {
			return "error " + api.ErrorCode()
		}
		return "error " + err.Error()
	}
	return canonical(result())
}

func canonical(v any) string {
	switch v := v.(type) {
	case map[string]ddbtypes.AttributeValue:
		var m map[string]any
		attributevalue.UnmarshalMap(v, &m)
		v2, _ := json.Marshal(m)
		return string(v2)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func sortedItems(items []map[string]ddbtypes.AttributeValue) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = canonical(it)
	}
	sort.Strings(out)
	return out
}

func scanAll(table string) func(context.Context, *dynamodb.Client) string {
	return func(ctx context.Context, c *dynamodb.Client) string {
		var items []map[string]ddbtypes.AttributeValue
		p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return "error " + err.Error()
			}
			items = append(items, page.Items...)
		}
		return canonical(sortedItems(items))
	}
}

func queryIndex(table string) func(context.Context, *dynamodb.Client) string {
	return func(ctx context.Context, c *dynamodb.Client) string {
		out, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("gsi1"),
			KeyConditionExpression:    aws.String("gsi1pk = :g"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":g": &ddbtypes.AttributeValueMemberS{Value: "s1-G"}}})
		return outcome(err, func() any { return sortedItems(out.Items) })
	}
}

// TestRacesOnSpilledItemsStayAtomic races conditional claims and counters
// on items that are spilled and warmed under them: every claim has one
// winner, whose item is the one kept, and no increment is lost.
func TestRacesOnSpilledItemsStayAtomic(t *testing.T) {
	env, front := startEmbedded(t, Options{HotItems: 4})
	table := aws.String(env.TableName("LedgerTable"))
	ctx := context.Background()
	key := func(pk string) map[string]ddbtypes.AttributeValue {
		return map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: pk}, "sk": &ddbtypes.AttributeValueMemberS{Value: "X"}}
	}
	const keys, racers, adds = 40, 8, 10
	var wg sync.WaitGroup
	var wins [keys]atomic.Int32
	var winner [keys]atomic.Value
	for r := range racers {
		wg.Go(func() {
			for k := range keys {
				it := key(fmt.Sprintf("claim%d", k))
				it["owner"] = &ddbtypes.AttributeValueMemberS{Value: fmt.Sprint(r)}
				it["n"] = &ddbtypes.AttributeValueMemberN{Value: "0"}
				_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: it,
					ConditionExpression: aws.String("attribute_not_exists(pk)")})
				var ccf *ddbtypes.ConditionalCheckFailedException
				switch {
				case err == nil:
					wins[k].Add(1)
					winner[k].Store(fmt.Sprint(r))
				case !errors.As(err, &ccf):
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for r := range racers {
		wg.Go(func() {
			for i := range keys * adds {
				_, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: table,
					Key: key(fmt.Sprintf("claim%d", (i*7+r)%keys)), UpdateExpression: aws.String("ADD n :one"),
					ConditionExpression:       aws.String("attribute_exists(pk)"),
					ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": &ddbtypes.AttributeValueMemberN{Value: "1"}}})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if front.spilledCount() < keys/2 {
		t.Fatalf("%d of %d items spilled: the test did not exercise spilling", front.spilledCount(), keys)
	}
	total := 0
	for k := range keys {
		if w := wins[k].Load(); w != 1 {
			t.Fatalf("claim%d: %d winners", k, w)
		}
		out, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: key(fmt.Sprintf("claim%d", k)), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Owner string
			N     int
		}
		attributevalue.UnmarshalMap(out.Item, &got)
		if want := winner[k].Load().(string); got.Owner != want {
			t.Fatalf("claim%d is owned by %q, but %q won it", k, got.Owner, want)
		}
		total += got.N
	}
	if total != racers*keys*adds {
		t.Fatalf("counters add up to %d, want %d", total, racers*keys*adds)
	}
}

// TestStoredItemsCostTheHeapLittle writes items of fifteen attributes past
// the hot set and measures what each one adds to the live heap. Kept in
// minidyn, an item of that size takes about 4 KB of pointers for the
// garbage collector to mark in every cycle.
func TestStoredItemsCostTheHeapLittle(t *testing.T) {
	const hot, more = 2000, 10000
	env, _ := startEmbedded(t, Options{HotItems: hot})
	table := aws.String(env.TableName("IntakeTable"))
	ctx := context.Background()
	write := func(from, to int) {
		for i := from; i < to; i++ {
			it := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("evt_%08d", i)}}
			for a := range 14 {
				it[fmt.Sprintf("attr%02d", a)] = &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("value %d of item %d", a, i)}
			}
			if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: it}); err != nil {
				t.Fatal(err)
			}
		}
	}
	live := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	write(0, 2*hot)
	before := live()
	write(2*hot, 2*hot+more)
	per := (float64(live()) - float64(before)) / more
	t.Logf("each item beyond the %d kept in the engine adds %.0f bytes to the live heap", hot, per)
	if per > 1500 {
		t.Fatalf("each stored item adds %.0f bytes to the live heap, want at most 1,500", per)
	}
}

// TestRewritingFewItemsKeepsTheRecordSmall writes the same few items many
// times: the record of writes must not grow with the number of writes.
func TestRewritingFewItemsKeepsTheRecordSmall(t *testing.T) {
	env, front := startEmbedded(t, Options{HotItems: 16})
	table := aws.String(env.TableName("LedgerTable"))
	ctx := context.Background()
	for i := range 3000 {
		_, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: table,
			Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("total-%d", i%4)},
				"sk": &ddbtypes.AttributeValueMemberS{Value: "T"}},
			UpdateExpression:          aws.String("ADD n :one"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": &ddbtypes.AttributeValueMemberN{Value: "1"}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	front.spill.mu.Lock()
	n := len(front.spill.order)
	front.spill.mu.Unlock()
	if n > 100 {
		t.Fatalf("3,000 writes of 4 items left %d entries in the record of writes", n)
	}
}
