package spend

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/stack"
)

// write is one item write seen by a [writeCounter]: the table, the item's
// key, the attributes it sets or removes ("*" for a whole-item put) and
// whether it ran inside a transaction.
type write struct {
	Table string
	Key   string
	Attrs []string
	Put   map[string]types.AttributeValue
	InTx  bool
}

// writeCounter wraps the ledger's client and records every item write, so
// a test can count what one usage record writes (items, transactional
// units, index writes) without a model of DynamoDB of its own.
type writeCounter struct {
	DB
	mu     sync.Mutex
	writes []write
	calls  map[string]int
}

func newWriteCounter(db DB) *writeCounter { return &writeCounter{DB: db, calls: map[string]int{}} }

func (c *writeCounter) record(w write, op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, w)
	c.calls[op]++
}

// take returns the writes recorded since the last take and forgets them.
func (c *writeCounter) take() ([]write, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, n := c.writes, c.calls
	c.writes, c.calls = nil, map[string]int{}
	return w, n
}

var exprName = regexp.MustCompile(`#[A-Za-z0-9_]+`)

// updated lists the attributes an update expression sets, adds or removes
// (not those its condition only reads).
func updated(expr *string, names map[string]string) []string {
	var out []string
	for _, tok := range exprName.FindAllString(aws.ToString(expr), -1) {
		n, ok := names[tok]
		if !ok {
			n = tok
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func keyString(k map[string]types.AttributeValue) string {
	pk, _ := k["pk"].(*types.AttributeValueMemberS)
	sk, _ := k["sk"].(*types.AttributeValueMemberS)
	if pk == nil || sk == nil {
		return "?"
	}
	return pk.Value + "/" + sk.Value
}

func putWrite(table string, item map[string]types.AttributeValue, inTx bool) write {
	return write{Table: table, Key: keyString(item), Attrs: []string{"*"}, Put: item, InTx: inTx}
}

func (c *writeCounter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.record(putWrite(aws.ToString(in.TableName), in.Item, false), "PutItem")
	return c.DB.PutItem(ctx, in, opts...)
}

func (c *writeCounter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.record(write{Table: aws.ToString(in.TableName), Key: keyString(in.Key),
		Attrs: updated(in.UpdateExpression, in.ExpressionAttributeNames)}, "UpdateItem")
	return c.DB.UpdateItem(ctx, in, opts...)
}

func (c *writeCounter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, ti := range in.TransactItems {
		switch {
		case ti.Put != nil:
			c.record(putWrite(aws.ToString(ti.Put.TableName), ti.Put.Item, true), "TransactPut")
		case ti.Update != nil:
			c.record(write{Table: aws.ToString(ti.Update.TableName), Key: keyString(ti.Update.Key), InTx: true,
				Attrs: updated(ti.Update.UpdateExpression, ti.Update.ExpressionAttributeNames)}, "TransactUpdate")
		case ti.Delete != nil:
			c.record(write{Table: aws.ToString(ti.Delete.TableName), Key: keyString(ti.Delete.Key), InTx: true,
				Attrs: []string{"*"}}, "TransactDelete")
		}
	}
	c.mu.Lock()
	c.calls["TransactWriteItems"]++
	c.mu.Unlock()
	return c.DB.TransactWriteItems(ctx, in, opts...)
}

// projected is the set of attributes an index of the template projects;
// all is true for ProjectionType ALL.
type projected struct {
	index string
	all   bool
	attrs []string
}

func (p projected) has(attr string) bool {
	return p.all || attr == "*" || slices.Contains(p.attrs, attr)
}

// projections reads the indexes of a table from infra/template.yaml.
func projections(t *testing.T, logicalID string) (stack.Table, []projected) {
	t.Helper()
	tpl, err := stack.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	tb, ok := tpl.Table(logicalID)
	if !ok {
		t.Fatalf("template has no table %s", logicalID)
	}
	keys := []string{tb.Hash.Name}
	if tb.Range != nil {
		keys = append(keys, tb.Range.Name)
	}
	var out []projected
	for _, idx := range tb.Indexes {
		p := projected{index: idx.Name, attrs: append(slices.Clone(keys), idx.Hash.Name)}
		if idx.Range != nil {
			p.attrs = append(p.attrs, idx.Range.Name)
		}
		switch idx.Projection {
		case "ALL":
			p.all = true
		case "KEYS_ONLY":
		default:
			t.Fatalf("%s index %s: projection %s is not modelled by this test; list its attributes here",
				logicalID, idx.Name, idx.Projection)
		}
		out = append(out, p)
	}
	return tb, out
}

// indexWrites lists, for the writes to table, the index attributes each
// one writes: a write reaches an index when the item is in it (it has the
// index's hash key) and it touches a projected attribute.
func indexWrites(ws []write, table string, idx []projected, inIndex func(key string) bool) []string {
	var out []string
	for _, w := range ws {
		if w.Table != table || !inIndex(w.Key) {
			continue
		}
		for _, p := range idx {
			for _, a := range w.Attrs {
				if p.has(a) {
					out = append(out, fmt.Sprintf("%s %s.%s", w.Key, p.index, a))
				}
			}
		}
	}
	return out
}

// TestUsageRecordWritesNothingToTheWorkloadsIndex is the fleet's limit:
// every workload item sits in one gsi1 partition (WORKLOADS), so a total
// update that also wrote the index would cap the whole fleet near 1,000
// write units a second. The projection is read from infra/template.yaml,
// so projecting ALL again fails here.
func TestUsageRecordWritesNothingToTheWorkloadsIndex(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	wc := newWriteCounter(env.DynamoDB)
	f := newFixtureWith(t, env, wc, nil)
	table := env.TableName("WorkloadsTable")
	_, idx := projections(t, "WorkloadsTable")
	workloadItem := func(key string) bool { return key == "WL#hot/WORKLOAD" }

	// given a workload, when one usage record is applied under the cap
	f.workload(t, "hot", 1000, 0)
	wc.take()
	f.apply(t, usage("ur_1", "hot", 10))
	ws, calls := wc.take()

	// then the total update touches no attribute the index projects
	if got := indexWrites(ws, table, idx, workloadItem); len(got) > 0 {
		t.Errorf("a usage record's total update writes the single-partition index (gsi1pk=WORKLOADS): %v", got)
	}
	t.Logf("one usage record: %d items written %v, calls %v", len(ws), keysOf(ws), calls)
	// and every item it writes is one write unit (2 in a transaction)
	out, err := env.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table),
		Key: workloadKey("hot"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{"WL#hot/WORKLOAD": itemSize(out.Item)}
	for _, w := range ws {
		if w.Put != nil {
			sizes[w.Key] = itemSize(w.Put)
		}
	}
	for k, n := range sizes {
		if n > 1024 {
			t.Errorf("item %s is %d bytes: more than one write unit", k, n)
		}
	}
	t.Logf("item sizes in bytes: %v", sizes)

	// and when a record crosses the cap, the pause writes no index attribute either
	f.apply(t, usage("ur_2", "hot", 1000))
	ws, _ = wc.take()
	if got := indexWrites(ws, table, idx, workloadItem); len(got) > 0 {
		t.Errorf("the cap crossing writes the single-partition index: %v", got)
	}
	if f.total(t, "hot") != 1010 {
		t.Errorf("total = %d, want 1010", f.total(t, "hot"))
	}
}

func keysOf(ws []write) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Key)
	}
	return out
}

// TestListReadsEachWorkloadBehindTheIndexKeys: the index carries keys
// only, so the listing (workload list, the reconciler's schedule) reads
// each workload item itself, consistently, and sees its running total.
func TestListReadsEachWorkloadBehindTheIndexKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := []string{"wl-c", "wl-a", "wl-b"}
	for i, id := range ids {
		f.workload(t, id, int64(100*(i+1)), 5)
		f.apply(t, usage("ur_"+id, id, int64(i+1)))
	}
	if err := f.s.Workloads.AddAlias(context.Background(), "ref-a", "wl-a"); err != nil {
		t.Fatal(err)
	}

	ws, err := f.s.Workloads.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, fmt.Sprintf("%s owner=%s cap=%d step=%d total=%d status=%s last=%s",
			w.ID, w.Owner, w.Cap, w.Step, w.Total, w.Status, w.LastAccepted.RecordID))
	}
	want := []string{
		"wl-a owner=team-wl-a cap=200 step=5 total=2 status=active last=ur_wl-a",
		"wl-b owner=team-wl-b cap=300 step=5 total=3 status=active last=ur_wl-b",
		"wl-c owner=team-wl-c cap=100 step=5 total=1 status=active last=ur_wl-c",
	}
	if !slices.Equal(got, want) {
		t.Errorf("List =\n%v\nwant\n%v", got, want)
	}
	refs, err := f.s.Workloads.Aliases(context.Background(), "wl-a")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(refs, []string{"ref-a", "wl-a"}) {
		t.Errorf("Aliases(wl-a) = %v", refs)
	}
}

// TestListPagesPastOneBatch: more workloads than one BatchGetItem takes.
func TestListPagesPastOneBatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const n = 130
	for i := range n {
		f.workload(t, fmt.Sprintf("wl-%03d", i), 10, 0)
	}
	ws, err := f.s.Workloads.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != n {
		t.Fatalf("List returned %d workloads, want %d", len(ws), n)
	}
	for i, w := range ws {
		if want := fmt.Sprintf("wl-%03d", i); w.ID != want || w.Cap != 10 {
			t.Fatalf("List[%d] = %s cap %d, want %s cap 10", i, w.ID, w.Cap, want)
		}
	}
}

// itemSize is an item's size as DynamoDB bills it, closely enough for
// strings, numbers, sets and booleans: attribute names plus values.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name)
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			n += len(v.Value)
		case *types.AttributeValueMemberN:
			n += (len(v.Value)+1)/2 + 1
		case *types.AttributeValueMemberSS:
			for _, e := range v.Value {
				n += len(e)
			}
		case *types.AttributeValueMemberBOOL:
			n++
		default:
			n += 8
		}
	}
	return n
}
