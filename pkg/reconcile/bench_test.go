package reconcile_test

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkFold measures folding throughput: b.N export records, missed by
// the webhook path, over 16 workloads, folded by one run against local AWS
// and the provider simulator (pages of 1,000).
//
// The embedded DynamoDB copies the tables a transaction touches, so the
// figure falls as the ledger grows; compare runs at a fixed count
// (-benchtime=2000x).
func BenchmarkFold(b *testing.B) {
	f := newFixture(b, options{pageSize: 1000})
	for w := range 16 {
		f.workload(b, fmt.Sprintf("w%d", w), 1<<40)
	}
	step := 45 * time.Minute / time.Duration(b.N+1)
	for i := range b.N {
		f.usage(b, id("bench", i), fmt.Sprintf("w%d", i%16), 1, t0.Add(-50*time.Minute+time.Duration(i)*step), published)
	}
	b.ResetTimer()
	start := time.Now()
	run := f.run(b)
	elapsed := time.Since(start)
	b.StopTimer()
	if run.Missed != int64(b.N) {
		b.Fatalf("folded %d of %d", run.Missed, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
}
