package spend

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// BenchmarkApply measures ledger throughput: distinct usage records spread
// over 16 workloads, applied by parallel callers against local AWS.
//
// The embedded DynamoDB copies every table a transaction touches (to roll
// back), under one lock, so its figure falls as the ledger grows; run with
// a fixed count (-benchtime=1000x) to compare runs.
func BenchmarkApply(b *testing.B) {
	f := newFixtureOn(b, localaws.StartForTest(b), nil)
	const workloads = 16
	for i := range workloads {
		f.workload(b, fmt.Sprintf("w-bench-%d", i), 1<<60, 0)
	}
	var seq atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			u := usage(fmt.Sprintf("rec-bench-%d", n), fmt.Sprintf("w-bench-%d", n%workloads), 1)
			if res, err := f.s.Ledger.Apply(context.Background(), u); err != nil || res.Outcome != Applied {
				b.Errorf("Apply = %s, %v", res.Outcome, err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkApplyToDecision measures the latency of an Apply whose record
// crosses the cap: the ledger transaction, the cap read and the
// pause+decision+page transaction. ledger-to-decision-ms is the part after
// the ledger commit.
func BenchmarkApplyToDecision(b *testing.B) {
	f := newFixtureOn(b, localaws.StartForTest(b), nil)
	lat := &latencies{}
	f.s.Ledger.metrics, f.s.Ledger.now = lat, time.Now
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		id := fmt.Sprintf("w-dec-%d", i)
		f.workload(b, id, 10, 0)
		b.StartTimer()
		res, err := f.s.Ledger.Apply(ctx, usage("rec-"+id, id, 11))
		if err != nil || len(res.Decisions) != 1 {
			b.Fatalf("Apply = %+v, %v", res, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(lat.meanMS(), "ledger-to-decision-ms")
}

type latencies struct {
	mu    sync.Mutex
	sum   time.Duration
	count int
}

func (l *latencies) Count(string, int64, map[string]string) {}

func (l *latencies) Duration(name string, d time.Duration, _ map[string]string) {
	if name != MetricLedgerToEnforcement {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sum += d
	l.count++
}

func (l *latencies) meanMS() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return 0
	}
	return float64(l.sum) / float64(l.count) / float64(time.Millisecond)
}
