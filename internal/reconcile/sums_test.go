package reconcile_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/sums"
)

// scripted is a provider of sums whose buckets a test sets: values by
// bucket start, per meter and reference, summed into the width a query
// asks for. down makes every call fail. It counts calls, and the pages
// Stripe would serve them (100 buckets a page); tick, if set, runs on
// every call (a clock moved by the calls), and asked logs every query.
type scripted struct {
	mu     sync.Mutex
	values map[string]map[time.Time]float64
	down   bool
	calls  int
	pages  int
	tick   func()
	asked  []sums.Query
	// refuse answers the references in it with the error given, as a
	// provider refuses a customer it does not know.
	refuse map[string]error
}

func (p *scripted) set(meter, ref string, start time.Time, v float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.values == nil {
		p.values = map[string]map[time.Time]float64{}
	}
	k := meter + "/" + ref
	if p.values[k] == nil {
		p.values[k] = map[time.Time]float64{}
	}
	p.values[k][start] = v
}

func (p *scripted) Sums(_ context.Context, q sums.Query) ([]sums.Sum, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	p.pages += max(1, int((q.End.Sub(q.Start)/q.Width+99)/100))
	p.asked = append(p.asked, q)
	if p.tick != nil {
		p.tick()
	}
	if p.down {
		return nil, sums.ErrRead
	}
	if err := p.refuse[q.Ref]; err != nil {
		return nil, err
	}
	byStart := map[time.Time]float64{}
	for start, v := range p.values[q.Meter.ProviderMeter+"/"+q.Ref] {
		if !start.Before(q.Start) && start.Before(q.End) {
			byStart[start.Truncate(q.Width)] += v
		}
	}
	var out []sums.Sum
	for start, v := range byStart {
		out = append(out, sums.Sum{Start: start, End: start.Add(q.Width), Value: v})
	}
	return out, nil
}

const sumsConfig = `{"stripe-test": {"provider": "stripe", "usage_source": "meters", "account": "acct_1",
	"start": "2026-11-30T00:00:00Z", "settle": "3h", "lag": "2m", "interval": "5m",
	"meters": {"api": {"provider_meter": "mtr_api", "aggregation": "sum", "scale": 1000, "tolerance": 1}}},
	"stripe-other": {"provider": "stripe", "usage_source": "other", "account": "acct_2", "livemode": true,
	"start": "2026-11-30T00:00:00Z", "meters": {"api": {"provider_meter": "mtr_other", "aggregation": "count"}}}}`

type sumsFixture struct {
	env           *localaws.Env
	now           time.Time
	spend         *spend.Spend
	outbox        *pager.Outbox
	stripe, other *scripted
	rec           *reconcile.Sums
}

func newSumsFixture(t *testing.T) *sumsFixture {
	t.Helper()
	return newSumsFixtureOf(t, sumsConfig, time.Date(2026, 11, 30, 3, 30, 0, 0, time.UTC))
}

// newSumsFixtureOf is a fixture of the SUM_SOURCES config, whose clock
// starts at now.
func newSumsFixtureOf(t *testing.T, config string, now time.Time) *sumsFixture {
	t.Helper()
	f := &sumsFixture{env: localaws.StartForTest(t), now: now, stripe: &scripted{}, other: &scripted{}}
	f.configure(t, config)
	return f
}

// configure builds the ledger and the reconciler of the SUM_SOURCES
// config over the fixture's tables, as a deploy with that config would.
func (f *sumsFixture) configure(t *testing.T, config string) {
	t.Helper()
	srcs, err := sums.ParseSources(config)
	if err != nil {
		t.Fatal(err)
	}
	ledger := f.env.TableName("LedgerTable")
	clock := func() time.Time { return f.now }
	f.outbox, err = pager.NewOutbox(pager.OutboxConfig{DB: f.env.DynamoDB, Table: ledger, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	f.spend, err = spend.New(spend.Config{DB: f.env.DynamoDB, LedgerTable: ledger,
		WorkloadsTable: f.env.TableName("WorkloadsTable"), Pages: f.outbox,
		Webhook:    spend.PathContract{ExpectedArrival: time.Minute, MaxAge: time.Hour, Interval: 5 * time.Minute},
		Poll:       spend.PathContract{ExpectedArrival: 15 * time.Minute, MaxAge: time.Hour, Interval: 5 * time.Minute},
		ReconOwner: "billing-oncall", ReconRoutingKey: reconRoute, Now: clock, Sums: srcs})
	if err != nil {
		t.Fatal(err)
	}
	f.rec, err = reconcile.NewSums(reconcile.SumsConfig{Spend: f.spend,
		Sources: srcs, Readers: map[string]sums.Reader{"stripe-test": f.stripe, "stripe-other": f.other},
		DB: f.env.DynamoDB, Table: ledger, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
}

func (f *sumsFixture) workload(t *testing.T, id string, capUnits int64, aliases ...string) {
	t.Helper()
	ctx := context.Background()
	if _, err := f.spend.Workloads.CreateWorkload(ctx, spend.NewWorkload{ID: id, Owner: "team-" + id, RoutingKey: "rk-" + id,
		Cap: capUnits, Step: 1_000_000}); err != nil {
		t.Fatal(err)
	}
	for _, a := range aliases {
		if err := f.spend.Workloads.AddAlias(ctx, a, id); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *sumsFixture) webhook(t *testing.T, rec, ref string, units int64, at time.Time) spend.Result {
	t.Helper()
	res, err := f.spend.Ledger.Apply(context.Background(), spend.Usage{RecordID: rec, WorkloadRef: ref, Units: units,
		OccurredAt: at, ObservedAt: f.now, Path: spend.PathWebhook, EventID: "evt_" + rec, Source: "meters", Meter: "api"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (f *sumsFixture) run(t *testing.T) []reconcile.SumsRun {
	t.Helper()
	runs, err := f.rec.Run(context.Background(), "run-"+f.now.Format("150405"))
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

func (f *sumsFixture) total(t *testing.T, id string) int64 {
	t.Helper()
	w, err := f.spend.Workloads.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return w.Total
}

func (f *sumsFixture) pages(t *testing.T, prefix string) []pager.Page {
	t.Helper()
	all, err := f.outbox.Pending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []pager.Page
	for _, p := range all {
		if strings.HasPrefix(p.DedupKey, prefix) {
			out = append(out, p)
		}
	}
	return out
}

var hour0 = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

func TestSumsCountTheMaximumOncePerBucket(t *testing.T) {
	// given webhook records and the provider's sums for three buckets
	f := newSumsFixture(t)
	f.workload(t, "wl-a", 1_000_000, "cus_a")
	f.webhook(t, "r1", "wl-a", 4000, hour0.Add(10*time.Minute))
	f.webhook(t, "r2", "wl-a", 2000, hour0.Add(59*time.Minute+59*time.Second+900*time.Millisecond))
	f.stripe.set("mtr_api", "cus_a", hour0, 6.0000000001) // the same usage, with float noise
	f.stripe.set("mtr_api", "cus_a", hour0.Add(time.Hour), 5)
	// when the reconciler runs
	f.run(t)
	// then usage both paths saw counts once, and what the webhooks lost is counted by the poll
	if got := f.total(t, "wl-a"); got != 6000+5000 {
		t.Fatalf("total = %d, want 11000", got)
	}
	// when a webhook for the topped-up bucket arrives late, it adds nothing
	f.webhook(t, "r3", "wl-a", 5000, hour0.Add(time.Hour+time.Minute))
	if got := f.total(t, "wl-a"); got != 11000 {
		t.Fatalf("total after a late webhook = %d, want 11000", got)
	}
	// when the provider revises a bucket down, the total stays and one page says so
	f.now = f.now.Add(10 * time.Minute)
	f.stripe.set("mtr_api", "cus_a", hour0.Add(time.Hour), 3)
	f.run(t)
	f.now = f.now.Add(10 * time.Minute)
	f.run(t)
	if got := f.total(t, "wl-a"); got != 11000 {
		t.Fatalf("total after a downward revision = %d, want 11000", got)
	}
	if downs := f.pages(t, "bucket-down#"); len(downs) != 1 {
		t.Fatalf("downward revision pages = %d, want 1", len(downs))
	}
}

func TestSumsSettledGapsPageOncePerWorkload(t *testing.T) {
	// given two buckets whose paths disagree by more than the tolerance
	f := newSumsFixture(t)
	f.workload(t, "wl-g", 1_000_000, "cus_g")
	f.webhook(t, "g1", "wl-g", 9000, hour0.Add(time.Minute))
	f.stripe.set("mtr_api", "cus_g", hour0, 7)
	f.stripe.set("mtr_api", "cus_g", hour0.Add(time.Hour), 2)
	f.run(t)
	// when both pass the settle horizon and two more runs go by
	for range 3 {
		f.now = f.now.Add(3 * time.Hour)
		f.run(t)
	}
	// then one page names both buckets, once
	gaps := f.pages(t, "bucket-gap#wl-g#")
	if len(gaps) != 1 {
		t.Fatalf("gap pages = %d, want 1", len(gaps))
	}
	if lines := gaps[0].Event.Payload.CustomDetails["buckets"].([]any); len(lines) != 2 ||
		!strings.Contains(lines[0].(string), "bucket=[2026-11-30T00:00:00Z,2026-11-30T01:00:00Z) UTC provider=7000 webhook=9000 diff=-2000") {
		t.Fatalf("gap page buckets = %v", lines)
	}
}

func TestSumsTopUpCrossingTheCapPausesOnce(t *testing.T) {
	// given a workload under its cap by webhooks
	f := newSumsFixture(t)
	f.workload(t, "wl-c", 10_000, "cus_c")
	f.webhook(t, "c1", "wl-c", 8000, hour0.Add(time.Minute))
	// when the provider shows more than the webhooks, across the cap, on two runs
	f.stripe.set("mtr_api", "cus_c", hour0, 12)
	f.run(t)
	f.now = f.now.Add(10 * time.Minute)
	f.stripe.set("mtr_api", "cus_c", hour0, 13)
	f.run(t)
	// then the workload is paused once, and the page names the bucket
	pauses := f.pages(t, spend.DedupKey("wl-c", spend.ActionPause, 0, 0))
	if len(pauses) != 1 {
		t.Fatalf("pause pages = %d, want 1", len(pauses))
	}
	if s := pauses[0].Event.Payload.Summary; !strings.Contains(s, "record=bucket:stripe-test/acct_1/test/api/wl-c@2026-11-30T00:00:00Z#rev1") {
		t.Fatalf("pause page %q does not name the bucket", s)
	}
	if w, _ := f.spend.Workloads.Get(context.Background(), "wl-c"); w.Status != spend.StatusPaused || w.Total != 13000 {
		t.Fatalf("workload = %s total %d, want paused at 13000", w.Status, w.Total)
	}
}

func TestSumsOneSourceDownHoldsBackNoOther(t *testing.T) {
	// given two sources, one of whose providers is down
	f := newSumsFixture(t)
	f.workload(t, "wl-d", 1_000_000, "cus_d")
	f.stripe.down = true
	f.other.set("mtr_other", "cus_d", hour0, 3)
	// when the reconciler runs
	runs, err := f.rec.Run(context.Background(), "run-down")
	// then the failing source is reported, and the other one counted
	if !errors.Is(err, sums.ErrRead) {
		t.Fatalf("err = %v, want the failing source's read error", err)
	}
	outcomes := map[string]string{}
	for _, r := range runs {
		outcomes[r.Source] = r.Outcome
	}
	if outcomes["stripe-test"] != "failed" || outcomes["stripe-other"] != "ok" {
		t.Fatalf("outcomes = %v", outcomes)
	}
	if got := f.total(t, "wl-d"); got != 3 {
		t.Fatalf("total = %d, want the other source's 3", got)
	}
}

func TestSumsAlertMovesTheWorkloadUp(t *testing.T) {
	// given a source that ran and is not due again for 5 minutes
	f := newSumsFixture(t)
	f.workload(t, "wl-e", 1_000_000, "cus_e")
	f.run(t)
	f.stripe.set("mtr_api", "cus_e", hour0, 50)
	f.now = f.now.Add(time.Minute)
	if runs := f.run(t); runs[1].Outcome != "skipped" {
		t.Fatalf("run before due = %+v, want skipped", runs[1])
	}
	// when an alert says the provider counted more than the ledger
	next, err := f.rec.NextRun(context.Background(), "stripe-test")
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.spend.Buckets.RecordAlert(context.Background(), spend.Alert{EventID: "evt_alert", Source: "stripe-test",
		Meter: "api", WorkloadID: "wl-e", Value: 40000, Since: hour0, SinceFrom: "configured", ReceivedAt: f.now}, next)
	if err != nil || !res.Alert.Paged {
		t.Fatalf("alert = %+v, %v; want paged", res, err)
	}
	if _, err := f.spend.Buckets.RecordAlert(context.Background(), spend.Alert{EventID: "evt_alert", Source: "stripe-test",
		Meter: "api", WorkloadID: "wl-e", Value: 40000, Since: hour0, ReceivedAt: f.now}, next); err != nil {
		t.Fatal(err)
	}
	// then it pages once, and the next run reads the workload although the source is not due
	if alerts := f.pages(t, "usage-alert#"); len(alerts) != 1 {
		t.Fatalf("alert pages = %d, want 1", len(alerts))
	}
	f.now = f.now.Add(time.Minute)
	f.run(t)
	if got := f.total(t, "wl-e"); got != 50000 {
		t.Fatalf("total = %d, want the provider's 50000 read early", got)
	}
}

func TestSumsExplainNamesTheBucket(t *testing.T) {
	// given a top-up that paused a workload
	f := newSumsFixture(t)
	f.workload(t, "wl-x", 1000, "cus_x")
	f.webhook(t, "x1", "wl-x", 400, hour0.Add(time.Minute))
	f.stripe.set("mtr_api", "cus_x", hour0, 2)
	f.run(t)
	ctx := context.Background()
	// when an operator explains the pause's record and the workload
	wx, err := f.spend.Explainer.Explain(ctx, "wl-x")
	if err != nil {
		t.Fatal(err)
	}
	if len(wx.Decisions) != 1 {
		t.Fatalf("decisions = %d, want the pause", len(wx.Decisions))
	}
	ex, err := f.spend.Explainer.ExplainEvent(ctx, wx.Decisions[0].RecordID)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := ops.NewEventRunbook(wx.Decisions[0].RecordID, ex, f.now).WriteText(&text); err != nil {
		t.Fatal(err)
	}
	// then the event's runbook names the bucket and what each path saw, and the workload's lists the bucket
	for _, want := range []string{
		"delta bucket:stripe-test/acct_1/test/api/wl-x@2026-11-30T00:00:00Z#rev1: +1600 units to wl-x, found by the reconciler's poll",
		"webhook W=400, provider latest 2000, highest P*=2000, counted 2000, 1 revisions (0 down)",
		"buckets of providers of sums",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("runbook lacks %q:\n%s", want, text.String())
		}
	}
}

func TestSumsSourceDueOnItsScheduleIsNotSkipped(t *testing.T) {
	// given a source polled every 5 minutes by a schedule of the same
	// rate, whose first run took its clock 50 ms after its tick
	f := newSumsFixture(t)
	f.workload(t, "wl-tick", 1_000_000, "cus_tick")
	f.run(t)
	f.stripe.set("mtr_api", "cus_tick", hour0, 4)
	// when the next tick fires exactly 5 minutes after the first
	f.now = f.now.Add(5*time.Minute - 50*time.Millisecond)
	runs := f.run(t)
	// then the source runs on it, not on the tick after
	for _, r := range runs {
		if r.Source == "stripe-test" && r.Outcome == "skipped" {
			t.Fatalf("run on the next tick = %+v, want the source read", r)
		}
	}
	if got := f.total(t, "wl-tick"); got != 4000 {
		t.Fatalf("total = %d, want the provider's 4000 read on the next tick", got)
	}
}
