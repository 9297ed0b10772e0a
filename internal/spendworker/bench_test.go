package spendworker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/spendworker"
)

// perRecord hides ApplyBatch, so the worker applies one record at a time
// as it did before batches were folded.
type perRecord struct{ l *spend.Ledger }

func (p perRecord) Apply(ctx context.Context, u spend.Usage) (spend.Result, error) {
	return p.l.Apply(ctx, u)
}

// BenchmarkHotWorkload runs 10 concurrent batches of 10 records at a time,
// all for one workload, as the usage event source does, and reports the
// records a second and the transactions that added to the workload's one
// item per record, per record and batched. It runs against the local
// DynamoDB as it is (no capacity model yet), so the rate is the local
// one; the write count per record is what DynamoDB's per-item limit
// applies to.
func BenchmarkHotWorkload(b *testing.B) {
	for _, mode := range []string{"per-record", "batched"} {
		b.Run(mode, func(b *testing.B) {
			f := newHotFixture(b, map[string]int64{"hot": 1 << 40})
			w := f.worker
			if mode == "per-record" {
				var err error
				if w, err = spendworker.New(spendworker.Config{Ledger: perRecord{f.ledger.Ledger}, Queue: noQueue{}}); err != nil {
					b.Fatal(err)
				}
			}
			const batches = 10
			f.writes.take()
			b.ResetTimer()
			start := time.Now()
			n := 0
			for round := 0; round < b.N; round++ {
				var wg sync.WaitGroup
				for k := range batches {
					var msgs []events.SQSMessage
					for i := range 10 {
						id := fmt.Sprintf("%s_%d_%d_%d", mode, round, k, i)
						msgs = append(msgs, usageMessage("evt_"+id, "ur_"+id, "hot", 1))
					}
					n += len(msgs)
					wg.Go(func() {
						if resp, err := w.Handle(context.Background(), events.SQSEvent{Records: msgs}); err != nil || len(resp.BatchItemFailures) > 0 {
							b.Errorf("Handle = %+v, %v", resp, err)
						}
					})
				}
				wg.Wait()
			}
			elapsed := time.Since(start)
			b.ReportMetric(float64(n)/elapsed.Seconds(), "records/s")
			b.ReportMetric(float64(f.writes.take())/float64(n), "item-writes/record")
		})
	}
}
