package reconcile_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// benchWorkloads is how many workloads the fold benchmarks spread records
// over; the reconciler folds different workloads in parallel.
const benchWorkloads = 64

// foldRate folds n export records, missed by the webhook path, over
// benchWorkloads workloads in one run, with the ledger already holding
// prefill entries, and returns records/s.
func foldRate(b *testing.B, n, prefill int) float64 {
	b.Helper()
	f := newFixture(b, options{pageSize: 1000})
	for w := range benchWorkloads {
		f.workload(b, fmt.Sprintf("w%d", w), 1<<40)
	}
	fillLedger(b, f.env, prefill)
	step := 45 * time.Minute / time.Duration(n+1)
	for i := range n {
		f.usage(b, id("bench", i), fmt.Sprintf("w%d", i%benchWorkloads), 1, t0.Add(-50*time.Minute+time.Duration(i)*step), published)
	}
	runtime.GC() // the fill's garbage is not the fold's to collect
	start := time.Now()
	run := f.run(b)
	elapsed := time.Since(start)
	if run.Missed != int64(n) {
		b.Fatalf("folded %d of %d", run.Missed, n)
	}
	return float64(n) / elapsed.Seconds()
}

// fillLedger writes n ledger entries of other records, as a ledger that
// has run for a while holds.
func fillLedger(b *testing.B, env *localaws.Env, n int) {
	b.Helper()
	table := env.TableName("LedgerTable")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for start := g * 25; start < n; start += 100 {
				var reqs []types.WriteRequest
				for i := start; i < start+25 && i < n; i++ {
					item, _ := attributevalue.MarshalMap(map[string]any{"pk": fmt.Sprintf("REC#old-%07d", i), "sk": "ENTRY",
						"record_id": fmt.Sprintf("old-%07d", i), "workload_id": "w0", "units": 1, "path": "poll"})
					reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
				}
				if _, err := env.DynamoDB.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
					RequestItems: map[string][]types.WriteRequest{table: reqs}}); err != nil {
					b.Errorf("fill ledger: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	out, err := env.DynamoDB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), Select: types.SelectCount})
	if err != nil || int(out.Count) < n {
		b.Fatalf("ledger holds %d items (%v), want >= %d", out.Count, err, n)
	}
}

// BenchmarkFold measures folding throughput: b.N export records in one run
// against local AWS and the provider simulator (pages of 1,000), over 64
// workloads, with 1,000 entries already in the ledger.
func BenchmarkFold(b *testing.B) {
	b.ReportMetric(foldRate(b, b.N, 1000), "records/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkFoldFlat measures whether folding slows as the ledger grows: it
// folds b.N records into a ledger holding 1,000 entries, then b.N into one
// holding 100,000 (10,000 with -short), in the same run, and reports both
// rates and their ratio (1.0 is flat).
func BenchmarkFoldFlat(b *testing.B) {
	large := 100_000
	if testing.Short() {
		large = 10_000
	}
	small := foldRate(b, b.N, 1000)
	big := foldRate(b, b.N, large)
	b.ReportMetric(small, "records/s@1k")
	b.ReportMetric(big, fmt.Sprintf("records/s@%dk", large/1000))
	b.ReportMetric(big/small, fmt.Sprintf("ratio_%dk/1k", large/1000))
	b.ReportMetric(0, "ns/op")
}

// BenchmarkFoldLatency folds b.N records with no added latency and then
// with 5 ms added to every DynamoDB and SQS call
// (HOOKLINE_LOCAL_AWS_LATENCY), as real AWS round trips cost, in the same
// run.
func BenchmarkFoldLatency(b *testing.B) {
	if localaws.External() {
		b.Skip("latency is injected into the embedded emulators only")
	}
	b.Setenv(localaws.LatencyEnv, "")
	base := foldRate(b, b.N, 1000)
	b.Setenv(localaws.LatencyEnv, "5ms")
	slow := foldRate(b, b.N, 1000)
	b.ReportMetric(base, "records/s")
	b.ReportMetric(slow, "records/s@5ms")
	b.ReportMetric(slow/base, "ratio_5ms/0ms")
	b.ReportMetric(0, "ns/op")
}
