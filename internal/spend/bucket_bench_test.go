package spend

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/period"
)

// bucketBenchWorkloads is how many workloads the bucket fold spreads its
// records over, as the reconciler's fold benchmarks do.
const bucketBenchWorkloads = 64

// bucketBenchHour is the hour, counted from the sums source's start, of
// the bucket each workload's folded records fall in; the ledger's earlier
// entries fill the hours before it.
const bucketBenchHour = 29

func benchWorkload(w int) string { return fmt.Sprintf("wl-bench-%02d", w%bucketBenchWorkloads) }

// usageBatching is the usage queue's event source in the template: how
// many records one spend-worker batch holds, and how many batches run at
// once.
func usageBatching(b *testing.B, env *localaws.Env) (size, concurrent int) {
	b.Helper()
	for _, es := range env.Template.EventSources {
		if es.Queue == "UsageQueue" {
			return es.BatchSize, es.MaxConcurrency
		}
	}
	b.Fatal("the template has no event source on UsageQueue")
	return 0, 0
}

// foldBatches folds records as the spend worker does: in batches of
// size, concurrent batches at once, each with [Ledger.ApplyBatch].
type foldBatches struct {
	ledger           *Ledger
	size, concurrent int
}

// run folds us. A record that comes back with an error goes round again,
// as SQS redelivers it. It returns how many records were applied and how
// many went round again.
func (fb foldBatches) run(b *testing.B, us []Usage) (applied, redelivered int) {
	b.Helper()
	var done atomic.Int64
	for round := 0; len(us) > 0; round++ {
		if round == 5 {
			b.Fatalf("%d records still failing after %d rounds", len(us), round)
		}
		var mu sync.Mutex
		var again []Usage
		batches := make(chan []Usage)
		var wg sync.WaitGroup
		for range fb.concurrent {
			wg.Go(func() {
				for batch := range batches {
					res, errs := fb.ledger.ApplyBatch(context.Background(), batch)
					for i, err := range errs {
						switch {
						case err != nil:
							mu.Lock()
							again = append(again, batch[i])
							mu.Unlock()
						case res[i].Outcome == Applied:
							done.Add(1)
						default:
							b.Errorf("record %s: %s, want applied", batch[i].RecordID, res[i].Outcome)
						}
					}
				}
			})
		}
		for start := 0; start < len(us); start += fb.size {
			batches <- us[start:min(start+fb.size, len(us))]
		}
		close(batches)
		wg.Wait()
		redelivered += len(again)
		us = again
	}
	return int(done.Load()), redelivered
}

// bucketRecord is a fold's record i, of workload w (modulo the
// benchmark's workloads), at at: a webhook record of meter api of the
// usage source that the stripe-test source buckets by the hour.
func bucketRecord(prefix string, i, w int, at time.Time) Usage {
	rec := fmt.Sprintf("%s-%07d", prefix, i)
	return Usage{RecordID: rec, WorkloadRef: benchWorkload(w), Units: 1 + int64(i%7), OccurredAt: at,
		ObservedAt: at.Add(time.Second), Path: PathWebhook, EventID: "evt_" + rec, Source: "meters", Meter: "api"}
}

// fillBuckets applies n earlier records through the same fold, so that
// the ledger holds what a ledger that has run for a while holds: their
// entries, their deltas and the heads of their buckets. Each call folds
// MaxBucketRecords records of one bucket of the benchmark's workloads,
// in the hours before the measured one.
func fillBuckets(b *testing.B, f *fixture, n int) {
	b.Helper()
	calls := make(chan int)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for c := range calls {
				w, hour := c%bucketBenchWorkloads, (c/bucketBenchWorkloads)%bucketBenchHour
				var us []Usage
				for i := c * MaxBucketRecords; i < min((c+1)*MaxBucketRecords, n); i++ {
					at := sumStart.Add(time.Duration(hour)*time.Hour + time.Duration(i%3600)*time.Second)
					us = append(us, bucketRecord("ur_old", i, w, at))
				}
				res, errs := f.s.Ledger.ApplyBatch(context.Background(), us)
				for i, err := range errs {
					if err != nil || res[i].Outcome != Applied {
						b.Errorf("fill %s: %s, %v", us[i].RecordID, res[i].Outcome, err)
						return
					}
				}
			}
		})
	}
	for c := 0; c*MaxBucketRecords < n; c++ {
		calls <- c
	}
	close(calls)
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// bucketLedger is a ledger of the benchmark's workloads, filled, and
// the spend worker's batching of the template.
type bucketLedger struct {
	f     *fixture
	heads *headWrites
	fold  foldBatches
	// folded, elapsed, redelivered and headWrites add up its measured
	// folds.
	folded, redelivered, headWrites int
	elapsed                         time.Duration
}

// hourOfFold is the start of the hour bucket the measured records fall in.
var hourOfFold = sumStart.Add(bucketBenchHour * time.Hour)

// newBucketLedger starts local AWS with a sums ledger over it, creates
// bucketBenchWorkloads workloads with lifetime totals and fills the
// ledger with prefill entries.
func newBucketLedger(b *testing.B, prefill int) *bucketLedger {
	return newPeriodLedger(b, prefill, Periods{})
}

// newPeriodLedger is newBucketLedger with workloads of period p.
func newPeriodLedger(b *testing.B, prefill int, p Periods) *bucketLedger {
	b.Helper()
	env := localaws.StartForTest(b)
	l := &bucketLedger{heads: &headWrites{DB: env.DynamoDB}}
	l.f = newSumsFixture(b, env, l.heads)
	l.f.now = hourOfFold.Add(70 * time.Minute)
	for w := range bucketBenchWorkloads {
		l.f.periodWorkload(b, benchWorkload(w), 1<<50, 0, p)
	}
	fillBuckets(b, l.f, prefill)
	size, concurrent := usageBatching(b, env)
	l.fold = foldBatches{ledger: l.f.s.Ledger, size: size, concurrent: concurrent}
	return l
}

// benchRecords are the measured records from..to-1 of n, spread round
// robin over the workloads and over the hour of the fold.
func benchRecords(from, to, n int) []Usage {
	step := time.Hour / time.Duration(n+1)
	us := make([]Usage, 0, to-from)
	for i := from; i < to; i++ {
		us = append(us, bucketRecord("ur_bench", i, i, hourOfFold.Add(time.Duration(i+1)*step)))
	}
	return us
}

// measure folds us, in batches as the spend worker makes them (the
// template's BatchSize, MaxConcurrency batches at once), and adds it to
// the ledger's measured folds.
func (l *bucketLedger) measure(b *testing.B, us []Usage) {
	b.Helper()
	l.heads.mu.Lock()
	before := l.heads.n
	l.heads.mu.Unlock()
	runtime.GC() // the fill's garbage, and the other ledger's, are not this fold's to collect
	start := time.Now()
	applied, redelivered := l.fold.run(b, us)
	l.elapsed += time.Since(start)
	if applied != len(us) {
		b.Fatalf("applied %d of %d", applied, len(us))
	}
	l.heads.mu.Lock()
	l.headWrites += l.heads.n - before
	l.heads.mu.Unlock()
	l.folded += len(us)
	l.redelivered += redelivered
}

func (l *bucketLedger) rate() float64 { return float64(l.folded) / l.elapsed.Seconds() }

// BenchmarkBucketFold measures the spend worker's fold with bucket heads:
// b.N webhook records of a Stripe sums source (hourly buckets), over 64
// workloads, folded by Ledger.ApplyBatch in the usage event source's
// batches against local AWS, with 1,000 entries already in the ledger.
// A batch of 10 holds records of 10 workloads, so each record writes its
// bucket's head: head_writes/record near 1 is this mix, not a missed
// grouping.
func BenchmarkBucketFold(b *testing.B) {
	l := newBucketLedger(b, 1000)
	l.measure(b, benchRecords(0, b.N, b.N))
	b.ReportMetric(l.rate(), "records/s")
	b.ReportMetric(float64(l.headWrites)/float64(l.folded), "head_writes/record")
	b.ReportMetric(float64(l.redelivered), "redelivered")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkBucketFoldFlat measures whether the fold with bucket heads
// slows as the ledger grows: a ledger holding 1,000 entries and one
// holding 100,000 (10,000 with -short), each filled through the same
// fold, take b.N records each in the same run, in mirrored rounds (half
// into the small one, half into the large one, the other half into the
// large one, then into the small one), so that both meet the same share
// of what else the machine runs. It reports both rates and their ratio
// (1.0 is flat).
func BenchmarkBucketFoldFlat(b *testing.B) {
	large := 100_000
	if testing.Short() {
		large = 10_000
	}
	small, big := newBucketLedger(b, 1000), newBucketLedger(b, large)
	mirrored(b, small, big)
	big.report(b, fmt.Sprintf("%dk", large/1000))
	small.report(b, "1k")
	b.ReportMetric(big.rate()/small.rate(), fmt.Sprintf("ratio_%dk/1k", large/1000))
	b.ReportMetric(0, "ns/op")
}

// mirrored folds b.N records into each of base and other in mirrored
// rounds (the first half into base, then into other; the second half
// into other, then into base), so that both meet the same share of what
// else the machine runs.
func mirrored(b *testing.B, base, other *bucketLedger) {
	b.Helper()
	first, second := benchRecords(0, b.N/2, b.N), benchRecords(b.N/2, b.N, b.N)
	for _, round := range []struct {
		l  *bucketLedger
		us []Usage
	}{{base, first}, {other, first}, {other, second}, {base, second}} {
		if len(round.us) > 0 {
			round.l.measure(b, round.us)
		}
	}
}

// report reports the ledger's rate and redeliveries, named by what
// sets it apart (its entries, or its workloads' period).
func (l *bucketLedger) report(b *testing.B, name string) {
	b.ReportMetric(l.rate(), "records/s@"+name)
	b.ReportMetric(float64(l.redelivered), "redelivered@"+name)
}

// BenchmarkBucketFoldPeriod measures what a billing period costs the
// fold with bucket heads: a ledger whose 64 workloads have a lifetime
// total and one whose workloads have a UTC month anchored on the 31st
// (so every record is counted in its period: the period-checked path of
// Ledger.ApplyBatch), each holding 1,000 entries, take b.N records each
// in the same run, in mirrored rounds as BenchmarkBucketFoldFlat does.
// Every record, the fill's and the measured, lies in one month (from
// 2026-11-30 to 2026-12-31), so no boundary is crossed: this is the
// steady cost of the period. It reports both rates and their ratio
// month/lifetime (1.0: the period costs nothing).
func BenchmarkBucketFoldPeriod(b *testing.B) {
	month, err := ParsePeriods(period.Config{Period: "month", Anchor: "2026-01-31", TimeZone: "UTC"}, "", "")
	if err != nil {
		b.Fatal(err)
	}
	lifetime, monthly := newBucketLedger(b, 1000), newPeriodLedger(b, 1000, month)
	for _, at := range []time.Time{sumStart, hourOfFold.Add(time.Hour)} {
		if p, err := month.At(at); err != nil || p.String() != "2026-11-30T00:00:00Z/2026-12-31T00:00:00Z" {
			b.Fatalf("the month at %s = %s, %v: the run's records must lie in one month", at, p, err)
		}
	}
	mirrored(b, lifetime, monthly)
	lifetime.report(b, "lifetime")
	monthly.report(b, "month")
	b.ReportMetric(monthly.rate()/lifetime.rate(), "ratio_month/lifetime")
	b.ReportMetric(0, "ns/op")
}
