package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/sums"
)

// gpuConfig is sumsConfig after a deploy that replaced stripe-test's
// meter api by the meter gpu.
const gpuConfig = `{"stripe-test": {"provider": "stripe", "usage_source": "meters", "account": "acct_1",
	"start": "2026-11-30T00:00:00Z", "settle": "3h", "lag": "2m", "interval": "5m",
	"meters": {"gpu": {"provider_meter": "mtr_gpu", "aggregation": "sum", "scale": 1000, "tolerance": 1}}},
	"stripe-other": {"provider": "stripe", "usage_source": "other", "account": "acct_2", "livemode": true,
	"start": "2026-11-30T00:00:00Z", "meters": {"api": {"provider_meter": "mtr_other", "aggregation": "count"}}}}`

// runStripe runs the reconciler, which must not fail, and returns the
// Stripe source's run.
func (f *sumsFixture) runStripe(t *testing.T) reconcile.SumsRun {
	t.Helper()
	runs, err := f.rec.Run(context.Background(), "run-"+f.now.Format("150405"))
	if err != nil {
		t.Fatalf("run at %s: %v", f.now.Format(time.TimeOnly), err)
	}
	for _, r := range runs {
		if r.Source == "stripe-test" {
			return r
		}
	}
	t.Fatal("no run of stripe-test")
	return reconcile.SumsRun{}
}

func (f *sumsFixture) status(t *testing.T, id string) spend.Status {
	t.Helper()
	w, err := f.spend.Workloads.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return w.Status
}

func TestSumsARemovedMeterHoldsBackNoWorkload(t *testing.T) {
	// given a workload with an open bucket of meter api, and a second one
	f := newSumsFixture(t)
	f.workload(t, "wl-a", 1_000_000, "cus_a")
	f.workload(t, "wl-b", 10_000, "cus_b")
	f.stripe.set("mtr_api", "cus_a", hour0, 2)
	f.runStripe(t)
	// when a deploy replaces the meter api by gpu, the second workload
	// passes its cap at Stripe on gpu, and the old bucket passes its
	// settle horizon over two runs
	f.configure(t, gpuConfig)
	f.stripe.set("mtr_gpu", "cus_b", hour0.Add(3*time.Hour), 12)
	f.now = hour0.Add(4*time.Hour + 5*time.Minute)
	var runs []reconcile.SumsRun
	for range 2 {
		runs = append(runs, f.runStripe(t))
		f.now = f.now.Add(5 * time.Minute)
	}
	// then both runs read every workload, and the second one is paused
	for _, r := range runs {
		if r.Outcome != "ok" || r.Workloads != 2 {
			t.Fatalf("run = %+v, want ok over both workloads", r)
		}
	}
	if got := f.status(t, "wl-b"); got != spend.StatusPaused {
		t.Fatalf("wl-b is %s, want paused", got)
	}
	// and the old bucket is settled as it stood, recorded, and paged once
	open, err := f.spend.Buckets.UnsettledBuckets(context.Background(), "wl-a", f.now)
	if err != nil || len(open) != 0 {
		t.Fatalf("open buckets of wl-a = %+v, %v; want none", open, err)
	}
	if got := f.total(t, "wl-a"); got != 2000 {
		t.Fatalf("total of wl-a = %d, want the 2000 it counted", got)
	}
	if runs[0].Retired != 1 {
		t.Fatalf("retired = %d, want the old bucket", runs[0].Retired)
	}
	pages := f.pages(t, "bucket-retired#stripe-test#api")
	if len(pages) != 1 || !strings.Contains(pages[0].Event.Payload.Summary, "meter=api") {
		t.Fatalf("retire pages = %+v, want one naming the meter", pages)
	}
}

func TestSumsAnOverflowingValueHoldsBackNoWorkload(t *testing.T) {
	// given a workload whose total is 5000 below the maximum, and another
	f := newSumsFixture(t)
	f.workload(t, "wl-a", 1_000_000, "cus_a")
	f.workload(t, "wl-b", 10_000, "cus_b")
	if _, err := f.spend.Ledger.Apply(context.Background(), spend.Usage{RecordID: "huge", WorkloadRef: "wl-a",
		Units: spend.MaxTotal - 5000, OccurredAt: f.now, ObservedAt: f.now, Path: spend.PathWebhook, EventID: "evt_huge"}); err != nil {
		t.Fatal(err)
	}
	// when Stripe shows 10 units for it, which would carry its total past
	// the maximum, and 12 for the other, past its cap, on two runs
	f.stripe.set("mtr_api", "cus_a", hour0, 10)
	f.stripe.set("mtr_api", "cus_b", hour0, 12)
	var runs []reconcile.SumsRun
	for range 2 {
		runs = append(runs, f.runStripe(t))
		f.now = f.now.Add(5 * time.Minute)
	}
	// then each run skips the first as an overflow and reads the other
	for _, r := range runs {
		if r.Outcome != "ok" || len(r.Failed) != 1 || r.Failed[0].Workload != "wl-a" || r.Failed[0].Kind != reconcile.FailOverflow {
			t.Fatalf("run = %+v, want ok with wl-a failed as an overflow", r)
		}
	}
	if got := f.status(t, "wl-b"); got != spend.StatusPaused {
		t.Fatalf("wl-b is %s, want paused", got)
	}
	if got := f.total(t, "wl-a"); got != spend.MaxTotal-5000 {
		t.Fatalf("total of wl-a = %d, want it unchanged", got)
	}
	// and the overflow is paged once, naming the workload
	pages := f.pages(t, "sums-failed#stripe-test#wl-a#")
	if len(pages) != 1 || !strings.Contains(pages[0].Event.Payload.Summary, "would pass") {
		t.Fatalf("overflow pages = %+v, want one", pages)
	}
}

func TestSumsAFailureAtOneWorkloadKeepsProgressAndPagesAStall(t *testing.T) {
	// given three workloads, the second of which the provider fails to
	// read every time (a 5xx that asking again does not mend)
	f := newSumsFixture(t)
	for _, id := range []string{"a", "b", "c"} {
		f.workload(t, "wl-"+id, 1_000_000, "cus_"+id)
	}
	f.stripe.refuse = map[string]error{"cus_b": fmt.Errorf("%w: Stripe answered 500 api_error", sums.ErrRead)}
	f.stripe.set("mtr_api", "cus_a", hour0, 2)
	f.stripe.set("mtr_api", "cus_c", hour0, 3)
	// when three runs go by, an interval apart
	var runs []reconcile.SumsRun
	var errs []error
	for range 3 {
		rs, err := f.rec.Run(context.Background(), "run-"+f.now.Format("150405"))
		for _, r := range rs {
			if r.Source == "stripe-test" {
				runs = append(runs, r)
			}
		}
		errs = append(errs, err)
		f.now = f.now.Add(5 * time.Minute)
	}
	// then the first two fail at wl-b, keeping the progress made before it
	for i, r := range runs[:2] {
		if r.Outcome != "failed" || errs[i] == nil || r.Resume != "wl-a" || !r.Behind {
			t.Fatalf("run %d = %+v (%v), want failed at wl-b, resuming after wl-a, behind", i, r, errs[i])
		}
	}
	if reads := f.stripe.readsOf(0); reads["cus_a"] != 1 {
		t.Fatalf("reads = %v, want wl-a read once, not again by each failed run", reads)
	}
	// and the third pages the stall, naming the source, the workload and
	// the error, skips wl-b and reads the rest
	if r := runs[2]; errs[2] != nil || r.Outcome != "ok" || len(r.Failed) != 1 || r.Failed[0].Kind != reconcile.FailStalled {
		t.Fatalf("third run = %+v (%v), want ok with wl-b skipped as stalled", r, errs[2])
	}
	if got := f.total(t, "wl-c"); got != 3000 {
		t.Fatalf("total of wl-c = %d, want 3000", got)
	}
	pages := f.pages(t, "sums-stalled#stripe-test#")
	if len(pages) != 1 || !strings.Contains(pages[0].Event.Payload.Summary, "source=stripe-test workload=wl-b") ||
		!strings.Contains(pages[0].Event.Payload.Summary, "Stripe answered 500") {
		t.Fatalf("stall pages = %+v, want one naming the source, the workload and the error", pages)
	}
}

func TestSumsASourceWideRefusalPagesOnceForTheSource(t *testing.T) {
	// given ten workloads and a meter deleted at Stripe, which refuses
	// every customer alike (each answer with its own request ID), and an
	// eleventh workload of another source's customers
	f := newSumsFixture(t)
	f.stripe.refuse = map[string]error{}
	for i := range 10 {
		ref := fmt.Sprintf("cus_%02d", i)
		f.workload(t, fmt.Sprintf("wl-%02d", i), 1_000_000, ref)
		f.stripe.refuse[ref] = fmt.Errorf("%w: %w: Stripe answered 404 resource_missing: No such billing meter: 'mtr_api' [req_%s]",
			sums.ErrRead, sums.ErrRefused, ref)
	}
	// when two runs go by
	for range 2 {
		if r := f.runStripe(t); len(r.Refused) != 10 {
			t.Fatalf("run refused %v, want all ten", r.Refused)
		}
		f.now = f.now.Add(5 * time.Minute)
	}
	// then one page names the source, the cause and the workloads' count,
	// and none names a workload alone
	if per := f.pages(t, "sums-refused#"); len(per) != 0 {
		t.Fatalf("pages per workload = %d, want none", len(per))
	}
	pages := f.pages(t, "sums-source#stripe-test#")
	if len(pages) != 1 {
		t.Fatalf("source pages = %d, want 1", len(pages))
	}
	for _, want := range []string{"source=stripe-test", "workloads=10 of 10", "No such billing meter: 'mtr_api'"} {
		if s := pages[0].Event.Payload.Summary; !strings.Contains(s, want) {
			t.Errorf("source page %q lacks %q", s, want)
		}
	}
}

func TestSumsAReadThatTakesTheDeadlineIsSkippedOnceStalled(t *testing.T) {
	// given three workloads, the second of whose reads never ends before
	// the invocation's deadline (a cursor the provider serves in a loop)
	f := newSumsFixture(t)
	for _, id := range []string{"a", "b", "c"} {
		f.workload(t, "wl-"+id, 1_000_000, "cus_"+id)
	}
	f.stripe.set("mtr_api", "cus_c", hour0, 3)
	var cancel context.CancelFunc
	f.stripe.refuse = map[string]error{"cus_b": context.DeadlineExceeded}
	f.stripe.tick = func() {
		if f.stripe.asked[len(f.stripe.asked)-1].Ref == "cus_b" {
			cancel()
		}
	}
	// when four runs go by, an interval apart, each ended by the deadline
	// if it reads wl-b
	var runs []reconcile.SumsRun
	for range 4 {
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		rs, _ := f.rec.Run(ctx, "run-"+f.now.Format("150405"))
		cancel()
		for _, r := range rs {
			if r.Source == "stripe-test" {
				runs = append(runs, r)
			}
		}
		f.now = f.now.Add(5 * time.Minute)
	}
	// then the third pages the stall and moves past wl-b, and the fourth
	// reads wl-c
	if r := runs[2]; r.Resume != "wl-b" || len(r.Failed) != 1 || r.Failed[0].Kind != reconcile.FailStalled {
		t.Fatalf("third run = %+v, want wl-b skipped as stalled", r)
	}
	if pages := f.pages(t, "sums-stalled#stripe-test#"); len(pages) != 1 {
		t.Fatalf("stall pages = %d, want 1", len(pages))
	}
	if r := runs[3]; r.Outcome != "ok" {
		t.Fatalf("fourth run = %+v, want ok", r)
	}
	if got := f.total(t, "wl-c"); got != 3000 {
		t.Fatalf("total of wl-c = %d, want 3000", got)
	}
}
