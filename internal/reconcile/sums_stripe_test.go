package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/stripeusage"
	"github.com/hookline/hookline/internal/sums"
)

// stripeFace is the sums reconciler of config's source stripe-test read
// through the Stripe adapter from Stripe's face, on clock, with one
// workload wl-s whose customer is cus_s.
type stripeFace struct {
	sim *providersim.Sim
	sp  *spend.Spend
	rec *reconcile.Sums
}

func newStripeFace(t *testing.T, clock *providersim.ManualClock, config string) stripeFace {
	t.Helper()
	sim, err := providersim.New(providersim.Config{Now: clock.Now, APIKey: "sk_test_face", Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	if _, err := sim.AddMeter(providersim.BillingMeter{ID: "mtr_api", EventName: "api_call", Aggregation: "sum"}); err != nil {
		t.Fatal(err)
	}
	reader, err := stripeusage.New(stripeusage.Config{BaseURL: sim.URL(), Key: "sk_test_face",
		Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	env := localaws.StartForTest(t)
	srcs, err := sums.ParseSources(config)
	if err != nil {
		t.Fatal(err)
	}
	ledger := env.TableName("LedgerTable")
	outbox, err := pager.NewOutbox(pager.OutboxConfig{DB: env.DynamoDB, Table: ledger, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := spend.New(spend.Config{DB: env.DynamoDB, LedgerTable: ledger, WorkloadsTable: env.TableName("WorkloadsTable"),
		Pages: outbox, Webhook: spend.PathContract{MaxAge: time.Hour}, Poll: spend.PathContract{MaxAge: time.Hour},
		ReconOwner: "billing-oncall", ReconRoutingKey: reconRoute, Now: clock.Now, Sums: srcs})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := reconcile.NewSums(reconcile.SumsConfig{Spend: sp, Sources: srcs,
		Readers: map[string]sums.Reader{"stripe-test": reader}, DB: env.DynamoDB, Table: ledger, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := sp.Workloads.CreateWorkload(ctx, spend.NewWorkload{ID: "wl-s", Owner: "team", RoutingKey: "rk", Cap: 1_000_000, Step: 1_000_000}); err != nil {
		t.Fatal(err)
	}
	if err := sp.Workloads.AddAlias(ctx, "cus_s", "wl-s"); err != nil {
		t.Fatal(err)
	}
	return stripeFace{sim: sim, sp: sp, rec: rec}
}

// meter sends a meter event of cus_s to the face.
func (f stripeFace) meter(t *testing.T, id, value string, at time.Time) {
	t.Helper()
	if _, err := f.sim.RecordMeterEvent(providersim.MeterEvent{EventName: "api_call", Customer: "cus_s", Value: value,
		Identifier: id, Timestamp: at}); err != nil {
		t.Fatal(err)
	}
}

// run runs the reconciler and returns its run of stripe-test.
func (f stripeFace) run(t *testing.T) reconcile.SumsRun {
	t.Helper()
	runs, err := f.rec.Run(context.Background(), "run")
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs = %+v, %v", runs, err)
	}
	return runs[0]
}

// total is wl-s's total.
func (f stripeFace) total(t *testing.T) int64 {
	t.Helper()
	w, err := f.sp.Workloads.Get(context.Background(), "wl-s")
	if err != nil {
		t.Fatal(err)
	}
	return w.Total
}

func TestSumsAgainstStripesFace(t *testing.T) {
	// given Stripe's face with a meter whose summaries lag, revise, go
	// missing and answer 429, read through the Stripe adapter
	clock := providersim.NewManualClock(time.Date(2026, 11, 30, 0, 50, 0, 0, time.UTC))
	face := newStripeFace(t, clock, `{"stripe-test": {"provider": "stripe", "usage_source": "meters", "account": "acct_1",
		"start": "2026-11-30T00:00:00Z", "settle": "2h", "meters": {"api": {"provider_meter": "mtr_api", "aggregation": "sum",
		"scale": 10, "tolerance": 0}}}}`)
	sim, sp, ctx := face.sim, face.sp, context.Background()
	sim.SetMeterFloatNoise(true)
	meter := func(id, value string, at time.Time) { face.meter(t, id, value, at) }
	webhook := func(id string, units int64, at time.Time) {
		t.Helper()
		if _, err := sp.Ledger.Apply(ctx, spend.Usage{RecordID: id, WorkloadRef: "cus_s", Units: units, OccurredAt: at,
			ObservedAt: clock.Now(), Path: spend.PathWebhook, Source: "meters", Meter: "api"}); err != nil {
			t.Fatal(err)
		}
	}
	run := func() { face.run(t) }
	total := func() int64 { return face.total(t) }
	h0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	// usage sent both ways (0.1 + 0.2 at scale 10 is 3 units, float noise and all), and one event the webhooks lost
	meter("e1", "0.1", h0.Add(time.Minute))
	meter("e2", "0.2", h0.Add(2*time.Minute))
	meter("e3", "0.5", h0.Add(3*time.Minute))
	webhook("e1", 1, h0.Add(time.Minute))
	webhook("e2", 2, h0.Add(2*time.Minute))
	// when the reconciler runs through two 429s
	sim.RateLimitMeterCalls(providersim.MeterSummariesEndpoint, 2)
	run()
	// then it is counted once, with the lost usage topped up
	if got := total(); got != 8 {
		t.Fatalf("total = %d, want 8 (3 both ways + 5 the webhooks lost)", got)
	}
	// when the late webhook of the lost event arrives, it adds nothing
	webhook("e3", 5, h0.Add(3*time.Minute))
	if got := total(); got != 8 {
		t.Fatalf("total after the late webhook = %d, want 8", got)
	}
	// when the event is cancelled at Stripe and the next run reads the revision, nothing is taken off
	if err := sim.CancelMeterEvent("api_call", "e3"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Minute)
	run()
	if got := total(); got != 8 {
		t.Fatalf("total after a cancellation = %d, want 8", got)
	}
	if calls := sim.MeterCalls(); calls.RateLimited[providersim.MeterSummariesEndpoint] != 2 {
		t.Fatalf("429s answered = %v, want 2", calls.RateLimited)
	}
}
