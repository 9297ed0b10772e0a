package spendworker_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/spendworker"
	"github.com/hookline/hookline/pkg/queue"
)

// totalWrites counts the transactions that add to a workload's running
// total, by workload item key: the writes a hot workload's one item takes.
type totalWrites struct {
	spend.DB
	table string
	mu    sync.Mutex
	n     map[string]int
}

func (c *totalWrites) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, ti := range in.TransactItems {
		if u := ti.Update; u != nil && aws.ToString(u.TableName) == c.table && strings.HasPrefix(aws.ToString(u.UpdateExpression), "ADD") {
			c.mu.Lock()
			c.n[fmt.Sprint(u.Key["pk"])]++
			c.mu.Unlock()
		}
	}
	return c.DB.TransactWriteItems(ctx, in, opts...)
}

func (c *totalWrites) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.n {
		n += v
	}
	c.n = map[string]int{}
	return n
}

type hotFixture struct {
	env    *localaws.Env
	ledger *spend.Spend
	outbox *pager.Outbox
	worker *spendworker.Worker
	writes *totalWrites
}

func newHotFixture(t testing.TB, caps map[string]int64) *hotFixture {
	t.Helper()
	env := localaws.StartForTest(t)
	outbox, err := pager.NewOutbox(pager.OutboxConfig{DB: env.DynamoDB, Table: env.TableName("LedgerTable")})
	if err != nil {
		t.Fatal(err)
	}
	writes := &totalWrites{DB: env.DynamoDB, table: env.TableName("WorkloadsTable"), n: map[string]int{}}
	contract := spend.PathContract{ExpectedArrival: time.Minute, MaxAge: time.Hour, Interval: 5 * time.Minute}
	ledger, err := spend.New(spend.Config{
		DB: writes, LedgerTable: env.TableName("LedgerTable"), WorkloadsTable: env.TableName("WorkloadsTable"),
		Pages: outbox, Webhook: contract, Poll: contract, ReconOwner: "spend-oncall", ReconRoutingKey: "rk-recon",
	})
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(queue.Config{SQS: env.SQS, URL: env.QueueURL("usage"), DeadLetterURL: env.QueueURL("usage-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	w, err := spendworker.New(spendworker.Config{Ledger: ledger.Ledger, Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	for id, c := range caps {
		if _, err := ledger.Workloads.CreateWorkload(context.Background(), spend.NewWorkload{ID: id, Owner: "o", RoutingKey: "rk", Cap: c}); err != nil {
			t.Fatal(err)
		}
	}
	return &hotFixture{env: env, ledger: ledger, outbox: outbox, worker: w, writes: writes}
}

func (f *hotFixture) handle(t *testing.T, msgs []events.SQSMessage) {
	t.Helper()
	resp, err := f.worker.Handle(context.Background(), events.SQSEvent{Records: msgs})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Errorf("Handle = %+v, %v; want every record acknowledged", resp, err)
	}
}

func (f *hotFixture) check(t *testing.T, id string, wantTotal int64, wantRecord string) {
	t.Helper()
	ctx := context.Background()
	w, err := f.ledger.Workloads.Get(ctx, id)
	if err != nil || w.Total != wantTotal {
		t.Errorf("%s total = %d (%v), want %d", id, w.Total, err, wantTotal)
	}
	pending, err := f.outbox.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pages []pager.Page
	for _, p := range pending {
		if strings.HasPrefix(p.DedupKey, "spend-cap:"+id+":") {
			pages = append(pages, p)
		}
	}
	if len(pages) != 1 {
		t.Fatalf("%s: %d cap pages, want exactly one: %+v", id, len(pages), pages)
	}
	if wantRecord != "" && !strings.Contains(pages[0].Event.Payload.Summary, " record="+wantRecord+" ") {
		t.Errorf("%s page = %q, want it to name record=%s", id, pages[0].Event.Payload.Summary, wantRecord)
	}
	out, err := f.env.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(f.env.QueueURL("usage-dlq")), MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 0 {
		t.Errorf("%d dead letters, want none", len(out.Messages))
	}
}

// TestABatchForOneWorkloadAddsToItsTotalOnce: one DynamoDB item takes
// about 500 transactional writes a second (1,000 write units / 2), so a
// workload whose every record is its own transaction tops out there. The
// worker folds a batch's records for one workload into one transaction:
// the entries (a duplicate still counts once) and one ADD of their sum.
func TestABatchForOneWorkloadAddsToItsTotalOnce(t *testing.T) {
	t.Parallel()
	f := newHotFixture(t, map[string]int64{"hot": 1000})
	// given a record applied by an earlier batch
	f.handle(t, []events.SQSMessage{usageMessage("evt_pre", "ur_pre", "hot", 50)})
	f.writes.take()

	// when a batch of 10 arrives: that record again, 8 new records of 200
	// units (the 5th carries the total over the cap: 50+5*200 = 1050), and
	// one of them re-sent under a new webhook ID
	msgs := []events.SQSMessage{usageMessage("evt_pre", "ur_pre", "hot", 50)}
	for i := range 8 {
		msgs = append(msgs, usageMessage(fmt.Sprintf("evt_%d", i), fmt.Sprintf("ur_%d", i), "hot", 200))
	}
	msgs = append(msgs, usageMessage("evt_3_again", "ur_3", "hot", 200))
	f.handle(t, msgs)

	// then the workload's total was added to by at most two transactions
	// (the first carries the duplicate and is cancelled, the second commits)
	if n := f.writes.take(); n > 2 {
		t.Errorf("the workload's total was written by %d transactions for one batch of 10 records; want at most 2", n)
	}
	// and the total is exact, with one page naming the record that crossed
	f.check(t, "hot", 50+8*200, "ur_4")
}

// TestConcurrentBatchesForOneWorkloadCountEachRecordOnce: the event source
// runs several batches at once, and the same records come in more than
// one of them.
func TestConcurrentBatchesForOneWorkloadCountEachRecordOnce(t *testing.T) {
	t.Parallel()
	f := newHotFixture(t, map[string]int64{"hot": 1000})
	// given 5 batches of 10 for one workload, each repeating 2 records of
	// the batch before (as a lost acknowledgement would)
	const batches = 5
	var all [][]events.SQSMessage
	for b := range batches {
		var msgs []events.SQSMessage
		for i := range 8 {
			n := b*8 + i
			msgs = append(msgs, usageMessage(fmt.Sprintf("evt_%d", n), fmt.Sprintf("ur_%d", n), "hot", 30))
		}
		if b > 0 {
			for _, n := range []int{b*8 - 1, b*8 - 2} {
				msgs = append(msgs, usageMessage(fmt.Sprintf("evt_%d", n), fmt.Sprintf("ur_%d", n), "hot", 30))
			}
		}
		all = append(all, msgs)
	}
	// when they are handled at once
	var wg sync.WaitGroup
	for _, msgs := range all {
		wg.Go(func() { f.handle(t, msgs) })
	}
	wg.Wait()
	// then each distinct record counts once, the cap (1000 < 40*30) pages
	// once, and nothing is dead-lettered
	f.check(t, "hot", batches*8*30, "")
}

// contendedLedger answers every batch as the ledger does when its
// transaction stayed contended after every retry.
type contendedLedger struct{ failingLedger }

func (contendedLedger) ApplyBatch(_ context.Context, us []spend.Usage) ([]spend.Result, []error) {
	errs := make([]error, len(us))
	for i := range errs {
		errs[i] = fmt.Errorf("apply batch for hot: %w", spend.ErrBatchContended)
	}
	return make([]spend.Result, len(us)), errs
}

func TestAContendedBatchReturnsToTheQueueNotTheDLQ(t *testing.T) {
	// Given a ledger whose batch transaction stays contended
	w, err := spendworker.New(spendworker.Config{Ledger: contendedLedger{}, Queue: noQueue{}})
	if err != nil {
		t.Fatal(err)
	}
	// when a batch with a valid and a malformed record arrives
	resp, err := w.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		usageMessage("evt_c1", "ur_c1", "hot", 10), message("evt_c2", `{"id":"evt_c2"}`)}})
	// then both go back to the queue: the valid one to be applied again,
	// the malformed one because its dead-letter failed (noQueue)
	if err != nil || len(resp.BatchItemFailures) != 2 {
		t.Fatalf("Handle = %+v, %v; want both records failed back to the queue", resp, err)
	}
}
