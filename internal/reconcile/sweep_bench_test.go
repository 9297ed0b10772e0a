package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/lab"
	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/stripeusage"
	"github.com/hookline/hookline/internal/sums"
	"github.com/hookline/hookline/internal/testkit"
)

// The measured sweep: 10,000 Stripe customers, 1% near their caps and
// 9% with recent usage, the rest quiet, read by a source polled every 5
// minutes whose quiet workloads rotate over 12 sweeps. Stripe's face
// limits summaries to sweepLimit calls a second and the adapter paces
// itself to the same. The plan is for planWorkloads, the fleet measured.
// A run's time is planned from its calls at the provider's limit, not
// measured: most of the measured time is the local DynamoDB's index
// queries, which scan their index.
const (
	sweepWorkloads = 10_000
	sweepNearCap   = 100
	sweepActive    = 900
	sweepRuns      = 2
	sweepLimit     = 250
	planWorkloads  = 10_000
)

// sweepSource is the benchmark's Stripe source: 48 h read by the hour,
// the rest of 35 days by the day.
const sweepSource = `{"stripe-fleet": {"provider": "stripe", "usage_source": "meters", "account": "acct_fleet",
	"start": "2026-10-01T00:00:00Z", "interval": "5m", "recent": "48h", "quiet_every": 12,
	"meters": {"api": {"provider_meter": "mtr_fleet", "aggregation": "sum"}}}}`

// BenchmarkSumsSweep sweeps 10,000 workloads against Stripe's face with
// its rate limit on: calls a run, and the share of each tier's workloads
// read; then it prints the capacity plan for 10,000 workloads on Stripe
// and on OpenAI worked from those figures (docs/design.md).
func BenchmarkSumsSweep(b *testing.B) {
	for range b.N {
		f := newSweepFleet(b)
		figures := f.measure(b)
		for _, l := range []lab.SumsLimits{lab.StripeLimits, lab.OpenAILimits} {
			plan, err := lab.SumsPlanFor(figures, planWorkloads, l, lab.DefaultPrices())
			if err != nil {
				b.Fatal(err)
			}
			plan.Write(os.Stdout)
		}
	}
}

// sweepFleet is the benchmark's ledger, face and reconciler.
type sweepFleet struct {
	env   *localaws.Env
	clock *testkit.ManualClock
	sim   *providersim.Sim
	sp    *spend.Spend
	rec   *reconcile.Sums
	src   sums.Source
}

func newSweepFleet(b *testing.B) *sweepFleet {
	b.Helper()
	now := time.Now().UTC()
	f := &sweepFleet{env: localaws.StartForTest(b), clock: testkit.NewManualClock(now.Add(-7 * time.Hour))}
	srcs, err := sums.ParseSources(sweepSource)
	if err != nil {
		b.Fatal(err)
	}
	f.src = srcs["stripe-fleet"]
	if f.sim, err = providersim.New(providersim.Config{APIKey: "sk_test_fleet", Seed: 3}); err != nil {
		b.Fatal(err)
	}
	if err := f.sim.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.sim.Close() })
	if _, err := f.sim.AddMeter(providersim.BillingMeter{ID: "mtr_fleet", EventName: "api_call"}); err != nil {
		b.Fatal(err)
	}
	f.sim.SetMeterRateLimit(providersim.MeterSummariesEndpoint, sweepLimit)
	ledger := f.env.TableName("LedgerTable")
	outbox, err := pager.NewOutbox(pager.OutboxConfig{DB: f.env.DynamoDB, Table: ledger, Now: f.clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	f.sp, err = spend.New(spend.Config{DB: f.env.DynamoDB, LedgerTable: ledger, WorkloadsTable: f.env.TableName("WorkloadsTable"),
		Pages: outbox, Webhook: spend.PathContract{MaxAge: time.Hour}, Poll: spend.PathContract{MaxAge: time.Hour},
		ReconOwner: "billing-oncall", ReconRoutingKey: "rk-recon", Now: f.clock.Now, Sums: srcs})
	if err != nil {
		b.Fatal(err)
	}
	reader, err := stripeusage.New(stripeusage.Config{BaseURL: f.sim.URL(), Key: "sk_test_fleet", Rate: sweepLimit, Burst: 1})
	if err != nil {
		b.Fatal(err)
	}
	f.rec, err = reconcile.NewSums(reconcile.SumsConfig{Spend: f.sp, Sources: srcs,
		Readers: map[string]sums.Reader{"stripe-fleet": reader}, DB: f.env.DynamoDB, Table: ledger, Now: f.clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	f.populate(b, now)
	return f
}

// populate creates the fleet 7 hours ago, so that a workload without
// usage since is quiet; the near-cap and active ones use their meter half
// an hour ago, at Stripe and in the ledger.
func (f *sweepFleet) populate(b *testing.B, now time.Time) {
	b.Helper()
	ctx := context.Background()
	ids := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed error
	for range 8 {
		wg.Go(func() {
			for i := range ids {
				if err := f.create(ctx, i); err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
				}
			}
		})
	}
	for i := range sweepWorkloads {
		ids <- i
	}
	close(ids)
	wg.Wait()
	if failed != nil {
		b.Fatal(failed)
	}
	f.clock.Set(now.Add(-30 * time.Minute))
	for i := range sweepNearCap + sweepActive {
		units := int64(10)
		if i < sweepNearCap {
			units = 950 // of a cap of 1,000
		}
		id, at := sweepID(i), now.Add(-40*time.Minute)
		if _, err := f.sp.Ledger.Apply(ctx, spend.Usage{RecordID: "ur_" + id, WorkloadRef: id, Units: units, OccurredAt: at,
			ObservedAt: at, Path: spend.PathWebhook, EventID: "evt_" + id, Source: "meters", Meter: "api"}); err != nil {
			b.Fatal(err)
		}
		if _, err := f.sim.RecordMeterEvent(providersim.MeterEvent{EventName: "api_call", Customer: "cus_" + id,
			Value: fmt.Sprint(units), Identifier: "ur_" + id, Timestamp: at}); err != nil {
			b.Fatal(err)
		}
	}
	f.clock.Set(now)
}

func sweepID(i int) string { return fmt.Sprintf("wl-%05d", i) }

func (f *sweepFleet) create(ctx context.Context, i int) error {
	id := sweepID(i)
	if _, err := f.sp.Workloads.CreateWorkload(ctx, spend.NewWorkload{ID: id, Owner: "fleet", RoutingKey: "rk", Cap: 1000}); err != nil {
		return err
	}
	return f.sp.Workloads.AddAlias(ctx, "cus_"+id, id)
}

// measure runs the source sweepRuns times, an interval apart, and returns
// what the runs showed.
func (f *sweepFleet) measure(b *testing.B) lab.SweepFigures {
	b.Helper()
	ctx := context.Background()
	before := f.env.Capacity()
	fig := lab.SweepFigures{Provider: "stripe", Workloads: sweepWorkloads, Runs: sweepRuns, RateLimit: sweepLimit,
		Interval: f.src.Interval.D(), Budget: f.src.Budget.D(), QuietEvery: f.src.QuietEvery, ReadsByTier: map[string]int{}}
	reads := map[string][2]int{}
	b.ResetTimer()
	for run := range sweepRuns {
		start := time.Now()
		runs, err := f.rec.Run(ctx, fmt.Sprintf("sweep-%d", run))
		if err != nil {
			b.Fatal(err)
		}
		fig.Seconds += time.Since(start).Seconds()
		for _, r := range runs {
			if r.Behind {
				b.Fatalf("run %d did not finish its sweep: %+v", run, r)
			}
			fig.Calls += r.Calls
			for tier, s := range r.Tiers {
				reads[tier] = [2]int{reads[tier][0] + s.Of, reads[tier][1] + s.Read}
				fig.ReadsByTier[tier] += s.Read
			}
		}
		f.clock.Advance(f.src.Interval.D())
	}
	b.StopTimer()
	fig.WriteUnits, fig.ReadUnits = unitsSince(before, f.env.Capacity())
	b.ReportMetric(float64(fig.Calls)/sweepRuns, "calls/run")
	b.ReportMetric(float64(sumOf(fig.ReadsByTier))/sweepRuns, "reads/run")
	for tier, n := range reads {
		if n[0] > 0 {
			b.ReportMetric(float64(n[1])/float64(n[0]), "read-share-"+tier)
		}
	}
	fmt.Printf("sums sweep: %d workloads (%d near cap, %d active, the rest quiet), %d runs %s apart against Stripe's face at %d calls/s: %d calls, %d reads, %.1f s (mostly the local DynamoDB's scanning index queries); [covered read] by tier %v; DynamoDB %.0f write and %.0f read units\n",
		sweepWorkloads, sweepNearCap, sweepActive, sweepRuns, fig.Interval, sweepLimit, fig.Calls, sumOf(fig.ReadsByTier), fig.Seconds, reads, fig.WriteUnits, fig.ReadUnits)
	return fig
}

func sumOf(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// unitsSince sums the units every table and index consumed between two
// snapshots.
func unitsSince(before, after localaws.Capacity) (write, read float64) {
	for name, t := range after.Tables {
		write += t.WriteUnits - before.Tables[name].WriteUnits
		read += t.ReadUnits - before.Tables[name].ReadUnits
		for idx, u := range t.Indexes {
			write += u.WriteUnits - before.Tables[name].Indexes[idx].WriteUnits
			read += u.ReadUnits - before.Tables[name].Indexes[idx].ReadUnits
		}
	}
	return write, read
}
