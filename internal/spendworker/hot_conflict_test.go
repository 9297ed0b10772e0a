package spendworker_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/spendworker"
	"github.com/hookline/hookline/pkg/queue"
)

// pageLog records the pages an outbox sends.
type pageLog struct {
	mu   sync.Mutex
	keys []string
}

func (p *pageLog) Send(_ context.Context, ev pager.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = append(p.keys, ev.DedupKey)
	return nil
}

// maxReceives is the usage queue's maxReceiveCount (infra/template.yaml):
// a record that fails that many receives goes to the usage DLQ.
const maxReceives = 5

// TestConcurrentBatchesOnOneHotWorkload is the hot workload: 10 batches of
// 10 records at once (the template's event source runs them so), every
// record adding to one workload item, on local AWS with DynamoDB's
// transaction conflicts modelled. Concurrent ledger transactions on the
// workload item cancel each other (TransactionConflict), and the ledger
// must retry them: every record ends applied, the total is exact, the cap
// crossing pages once, and nothing is dead-lettered.
func TestConcurrentBatchesOnOneHotWorkload(t *testing.T) {
	t.Parallel()
	// Given a workload with a cap that the records cross half way
	env := localaws.StartForTest(t)
	ctx := context.Background()
	pages := &pageLog{}
	outbox, err := pager.NewOutbox(pager.OutboxConfig{DB: env.DynamoDB, Table: env.TableName("LedgerTable"), Sender: pages})
	if err != nil {
		t.Fatal(err)
	}
	contract := spend.PathContract{ExpectedArrival: time.Minute, MaxAge: time.Hour, Interval: 5 * time.Minute}
	ledger, err := spend.New(spend.Config{
		DB: env.DynamoDB, LedgerTable: env.TableName("LedgerTable"), WorkloadsTable: env.TableName("WorkloadsTable"),
		Pages: outbox, Webhook: contract, Poll: contract, ReconOwner: "spend-oncall", ReconRoutingKey: "rk-recon",
	})
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(queue.Config{SQS: env.SQS, URL: env.QueueURL("usage"), DeadLetterURL: env.QueueURL("usage-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	w, err := spendworker.New(spendworker.Config{Ledger: ledger.Ledger, Queue: q, Concurrency: 10, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	const batches, perBatch, rounds = 10, 10, 5
	var msgs [batches][]events.SQSMessage
	var want int64
	for b := range batches {
		for r := range rounds * perBatch {
			units := int64((b*rounds*perBatch+r)%3 + 1)
			want += units
			id := fmt.Sprintf("evt_%d_%d", b, r)
			msgs[b] = append(msgs[b], usageMessage(id, "ur_"+id, "hot", units))
		}
	}
	if _, err := ledger.Workloads.CreateWorkload(ctx, spend.NewWorkload{ID: "hot", Owner: "o", RoutingKey: "rk", Cap: want / 2}); err != nil {
		t.Fatal(err)
	}

	// When 10 pollers each hand the worker batches of 10, all at once,
	// and give a failed record back as SQS would, up to maxReceives times
	var firstPassFailures, deadLettered atomic.Int64
	var wg sync.WaitGroup
	for b := range batches {
		wg.Go(func() {
			for r := range rounds {
				batch := msgs[b][r*perBatch : (r+1)*perBatch]
				for receive := 1; len(batch) > 0; receive++ {
					if receive > maxReceives {
						deadLettered.Add(int64(len(batch)))
						return
					}
					resp, err := w.Handle(ctx, events.SQSEvent{Records: batch})
					if err != nil {
						t.Errorf("Handle: %v", err)
						return
					}
					failed := map[string]bool{}
					for _, f := range resp.BatchItemFailures {
						failed[f.ItemIdentifier] = true
					}
					if receive == 1 {
						firstPassFailures.Add(int64(len(failed)))
					}
					var again []events.SQSMessage
					for _, m := range batch {
						if failed[m.MessageId] {
							m.Attributes = map[string]string{"ApproximateReceiveCount": fmt.Sprint(receive + 1)}
							again = append(again, m)
						}
					}
					batch = again
				}
			}
		})
	}
	wg.Wait()
	if _, err := outbox.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// Then no record went back to the queue: a conflict is absorbed by the
	// ledger's retry, not by a redelivery, which on AWS waits out the
	// queue's visibility timeout (180 s)
	if n := firstPassFailures.Load(); n != 0 {
		t.Errorf("%d of %d records failed their first delivery", n, batches*rounds*perBatch)
	}
	// and nothing was dead-lettered
	if n := deadLettered.Load(); n != 0 {
		t.Errorf("%d records failed %d receives and would be dead-lettered", n, maxReceives)
	}
	// and the total is exactly the sum of the records
	wl, err := ledger.Workloads.Get(ctx, "hot")
	if err != nil {
		t.Fatal(err)
	}
	if wl.Total != want {
		t.Errorf("total = %d, want %d", wl.Total, want)
	}
	// and the crossing paged exactly once
	pages.mu.Lock()
	defer pages.mu.Unlock()
	if len(pages.keys) != 1 || pages.keys[0] != spend.DedupKey("hot", spend.ActionPause, wl.CapEpoch, 0) {
		t.Errorf("pages = %v, want exactly one pause page", pages.keys)
	}
	if wl.Status != spend.StatusPaused {
		t.Errorf("status = %s, want paused", wl.Status)
	}
}

// testLogger logs warnings and errors to the test's log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
