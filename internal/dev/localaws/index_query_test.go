package localaws

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// indexModel is what a table's items are, kept beside the emulator: per
// item key ("pk/sk"), its gsi1pk and gsi1sk, "" when it has none.
type indexModel map[string][2]string

// TestIndexQueriesAnswerAsTheModel writes, rewrites, moves between index
// partitions, takes out of the index and deletes items of two index
// partitions spread over the shards, some of them spilled, and then pages
// through every index query, ascending and descending, with limits and
// key conditions on the sort key (after every fourth write): each must
// return exactly the model's items in the model's order.
func TestIndexQueriesAnswerAsTheModel(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			env, _ := startEmbedded(t, Options{HotItems: 4})
			table := env.TableName("LedgerTable")
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(seed, 0))
			model := indexModel{}
			for i := range 400 {
				name := randomIndexWrite(t, ctx, env.DynamoDB, rng, table, model)
				if i < 200 || i%4 != 0 {
					continue // spill first: the first query pins the table
				}
				for _, q := range indexQueries(rng) {
					got, err := q.run(ctx, env.DynamoDB, table)
					if err != nil {
						t.Fatalf("write %d (%s), %s: %v", i, name, q, err)
					}
					if want := q.want(model); !slices.Equal(got, want) {
						t.Fatalf("write %d (%s), %s:\n got  %v\n want %v", i, name, q, got, want)
					}
				}
			}
		})
	}
}

// TestIndexQuerySeesBothWaysAfterAnItemEntersTheIndex replays, on one
// shard, what a ledger does to the open buckets of a workload: two bucket
// heads in gsi1 partition BKTOPEN#wl-oa-0, then an entry that an
// UpdateItem gives its first gsi1 key (as an event ID noted later does),
// then the later head deleted and written again (as the front does when
// it spills an item and warms it). Both directions must see both heads.
func TestIndexQuerySeesBothWaysAfterAnItemEntersTheIndex(t *testing.T) {
	env, _ := startEmbedded(t, Options{HotItems: -1})
	table := aws.String(env.TableName("LedgerTable"))
	ctx := context.Background()
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	head := func(hour string) map[string]ddbtypes.AttributeValue {
		return map[string]ddbtypes.AttributeValue{"pk": s("BKT#wl-oa-0#" + hour), "sk": s("HEAD"),
			"gsi1pk": s("BKTOPEN#wl-oa-0"), "gsi1sk": s("2026-12-07T" + hour + ":00Z#meter")}
	}
	shardOfS := func(v string) int { return shardOfValue(&av{S: &v}) }
	entry := ""
	for n := 0; entry == ""; n++ {
		if pk := fmt.Sprintf("ENT#r%d", n); shardOfS(pk) == shardOfS("BKT#wl-oa-0#01:00") {
			entry = pk
		}
	}
	put := func(it map[string]ddbtypes.AttributeValue) {
		t.Helper()
		if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	// Given two heads and an entry with no index key in the later head's shard,
	put(head("00:00"))
	put(head("01:00"))
	put(map[string]ddbtypes.AttributeValue{"pk": s(entry), "sk": s("ENTRY")})
	// when the entry gets its first index key and the later head is taken
	// out and put back,
	_, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: table,
		Key:                       map[string]ddbtypes.AttributeValue{"pk": s(entry), "sk": s("ENTRY")},
		UpdateExpression:          aws.String("SET gsi1pk = :p, gsi1sk = :s"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": s("EVT#e1"), ":s": s("ENTRY#r1")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.DynamoDB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table,
		Key: map[string]ddbtypes.AttributeValue{"pk": s("BKT#wl-oa-0#01:00"), "sk": s("HEAD")}}); err != nil {
		t.Fatal(err)
	}
	put(head("01:00"))
	// then the open buckets' partition lists both heads, each way.
	model := indexModel{"BKT#wl-oa-0#00:00/HEAD": {"BKTOPEN#wl-oa-0", "2026-12-07T00:00:00Z#meter"},
		"BKT#wl-oa-0#01:00/HEAD": {"BKTOPEN#wl-oa-0", "2026-12-07T01:00:00Z#meter"}}
	for _, q := range []indexQuery{{part: "BKTOPEN#wl-oa-0", forward: true}, {part: "BKTOPEN#wl-oa-0", forward: false},
		{part: "BKTOPEN#wl-oa-0", forward: false, limit: 1, cond: "<=", hi: "2026-12-07T01:00:00Z#\uffff"}} {
		got, err := q.run(ctx, env.DynamoDB, *table)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if want := q.want(model); !slices.Equal(got, want) {
			t.Fatalf("%s:\n got  %v\n want %v", q, got, want)
		}
	}
}

// randomIndexWrite applies one random write to the table and the model.
func randomIndexWrite(t *testing.T, ctx context.Context, c *dynamodb.Client, rng *rand.Rand, table string, model indexModel) string {
	t.Helper()
	pk, sk := fmt.Sprintf("p%d", rng.IntN(12)), []string{"A", "B"}[rng.IntN(2)]
	id := pk + "/" + sk
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	key := map[string]ddbtypes.AttributeValue{"pk": s(pk), "sk": s(sk)}
	gpk := []string{"G0", "G1"}[rng.IntN(2)]
	gsk := fmt.Sprintf("%02d#%s", rng.IntN(6), id)
	tbl := aws.String(table)
	var err error
	var name string
	switch rng.IntN(7) {
	case 0, 1:
		name = "put indexed " + id
		it := map[string]ddbtypes.AttributeValue{"pk": s(pk), "sk": s(sk), "gsi1pk": s(gpk), "gsi1sk": s(gsk), "n": &ddbtypes.AttributeValueMemberN{Value: "1"}}
		_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: it})
		model[id] = [2]string{gpk, gsk}
	case 2:
		name = "put unindexed " + id
		it := map[string]ddbtypes.AttributeValue{"pk": s(pk), "sk": s(sk), "n": &ddbtypes.AttributeValueMemberN{Value: "1"}}
		_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: it})
		model[id] = [2]string{}
	case 3:
		name = "update into index " + id
		_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tbl, Key: key,
			UpdateExpression:          aws.String("SET gsi1pk = :p, gsi1sk = :s"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": s(gpk), ":s": s(gsk)}})
		model[id] = [2]string{gpk, gsk}
	case 4:
		name = "transaction into index " + id
		_, err = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
			{Update: &ddbtypes.Update{TableName: tbl, Key: key, UpdateExpression: aws.String("SET gsi1pk = :p, gsi1sk = :s"),
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": s(gpk), ":s": s(gsk)}}},
		}})
		model[id] = [2]string{gpk, gsk}
	case 5:
		name = "update n " + id
		_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tbl, Key: key,
			UpdateExpression:          aws.String("ADD n :one"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": &ddbtypes.AttributeValueMemberN{Value: "1"}}})
		if _, ok := model[id]; !ok {
			model[id] = [2]string{}
		}
	default:
		name = "delete " + id
		_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tbl, Key: key})
		delete(model, id)
	}
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return name
}

// indexQuery is one paged query of gsi1.
type indexQuery struct {
	part    string
	forward bool
	limit   int32
	cond    string // "", "begins_with", "between", "<="
	lo, hi  string
}

func (q indexQuery) String() string {
	return fmt.Sprintf("query %s forward=%v limit=%d %s %q %q", q.part, q.forward, q.limit, q.cond, q.lo, q.hi)
}

// indexQueries are the queries to check after a write.
func indexQueries(rng *rand.Rand) []indexQuery {
	var qs []indexQuery
	for _, part := range []string{"G0", "G1"} {
		for _, forward := range []bool{true, false} {
			q := indexQuery{part: part, forward: forward, limit: int32(rng.IntN(4))}
			a, b := fmt.Sprintf("%02d", rng.IntN(6)), fmt.Sprintf("%02d", rng.IntN(6))
			if a > b {
				a, b = b, a
			}
			switch rng.IntN(4) {
			case 1:
				q.cond, q.lo = "begins_with", a
			case 2:
				q.cond, q.lo, q.hi = "between", a, b+"#\uffff"
			case 3:
				q.cond, q.hi = "<=", b+"#\uffff"
			}
			qs = append(qs, q)
		}
	}
	return qs
}

// run pages through the query and returns the item keys in order.
func (q indexQuery) run(ctx context.Context, c *dynamodb.Client, table string) ([]string, error) {
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	kc := "gsi1pk = :p"
	vals := map[string]ddbtypes.AttributeValue{":p": s(q.part)}
	switch q.cond {
	case "begins_with":
		kc += " AND begins_with(gsi1sk, :lo)"
		vals[":lo"] = s(q.lo)
	case "between":
		kc += " AND gsi1sk BETWEEN :lo AND :hi"
		vals[":lo"], vals[":hi"] = s(q.lo), s(q.hi)
	case "<=":
		kc += " AND gsi1sk <= :hi"
		vals[":hi"] = s(q.hi)
	}
	in := &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("gsi1"), KeyConditionExpression: aws.String(kc),
		ExpressionAttributeValues: vals, ScanIndexForward: aws.Bool(q.forward)}
	if q.limit > 0 {
		in.Limit = aws.Int32(q.limit)
	}
	var keys []string
	for pages := 0; ; pages++ {
		if pages > 100 {
			return keys, fmt.Errorf("more than 100 pages")
		}
		out, err := c.Query(ctx, in)
		if err != nil {
			return keys, err
		}
		if q.limit > 0 && len(out.Items) > int(q.limit) {
			return keys, fmt.Errorf("a page of %d items over Limit %d", len(out.Items), q.limit)
		}
		for _, it := range out.Items {
			keys = append(keys, it["pk"].(*ddbtypes.AttributeValueMemberS).Value+"/"+it["sk"].(*ddbtypes.AttributeValueMemberS).Value)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return keys, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// want is the query's answer from the model.
func (q indexQuery) want(model indexModel) []string {
	type hit struct{ id, sk string }
	var hits []hit
	for id, g := range model {
		if g[0] != q.part {
			continue
		}
		switch {
		case q.cond == "begins_with" && !strings.HasPrefix(g[1], q.lo),
			q.cond == "between" && (g[1] < q.lo || g[1] > q.hi),
			q.cond == "<=" && g[1] > q.hi:
			continue
		}
		hits = append(hits, hit{id, g[1]})
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if q.forward {
			return strings.Compare(a.sk, b.sk)
		}
		return strings.Compare(b.sk, a.sk)
	})
	keys := []string{}
	for _, h := range hits {
		keys = append(keys, h.id)
	}
	if len(keys) == 0 {
		return nil
	}
	return keys
}

// TestIndexQueryLimitCountsBeforeTheFilter pages a descending index query
// with a Limit and a FilterExpression: each page evaluates Limit items,
// returns those the filter keeps, and resumes after the last one
// evaluated; a ProjectionExpression narrows what comes back.
func TestIndexQueryLimitCountsBeforeTheFilter(t *testing.T) {
	env, _ := startEmbedded(t, Options{HotItems: -1})
	table := aws.String(env.TableName("LedgerTable"))
	ctx := context.Background()
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	for i := 1; i <= 6; i++ {
		it := map[string]ddbtypes.AttributeValue{"pk": s(fmt.Sprintf("f%d", i)), "sk": s("X"), "gsi1pk": s("F"),
			"gsi1sk": s(fmt.Sprintf("%02d", i)), "n": &ddbtypes.AttributeValueMemberN{Value: fmt.Sprint(i % 3)}}
		if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	in := &dynamodb.QueryInput{TableName: table, IndexName: aws.String("gsi1"), ScanIndexForward: aws.Bool(false),
		KeyConditionExpression: aws.String("gsi1pk = :p"), FilterExpression: aws.String("#n > :z"),
		ProjectionExpression:     aws.String("gsi1sk, #n"),
		ExpressionAttributeNames: map[string]string{"#n": "n"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": s("F"),
			":z": &ddbtypes.AttributeValueMemberN{Value: "0"}},
		Limit: aws.Int32(2)}
	var pages []string
	for range 5 {
		out, err := env.DynamoDB.Query(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range out.Items {
			if len(it) != 2 {
				t.Fatalf("item %v: want gsi1sk and n only", it)
			}
			got = append(got, it["gsi1sk"].(*ddbtypes.AttributeValueMemberS).Value)
		}
		pages = append(pages, fmt.Sprintf("%v/%d", got, out.ScannedCount))
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	// 06 and 03 have n = 0: the filter drops them, after Limit counted them.
	if got, want := fmt.Sprint(pages), "[[05]/2 [04]/2 [02 01]/2]"; got != want {
		t.Fatalf("pages (items/scanned) %s, want %s", got, want)
	}
	// A value that no expression uses is refused, as DynamoDB refuses it.
	in.ExpressionAttributeValues[":unused"] = s("x")
	_, err := env.DynamoDB.Query(ctx, in)
	if got := outcome(err, func() any { return nil }); got != "error ValidationException" {
		t.Fatalf("a query with an unused value: %s, want error ValidationException", got)
	}
}
