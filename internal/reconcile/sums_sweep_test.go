package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/sums"
)

// historyConfig is a Stripe source whose window reaches 35 days back:
// 48 hours (and back to midnight) hourly, the rest by day.
const historyConfig = `{"stripe-test": {"provider": "stripe", "usage_source": "meters", "account": "acct_1",
	"start": "2026-11-01T00:00:00Z", "lag": "2m", "interval": "5m",
	"meters": {"api": {"provider_meter": "mtr_api", "aggregation": "sum", "scale": 1000}}}}`

var (
	historyNow = time.Date(2026, 12, 10, 3, 30, 0, 0, time.UTC)
	nov20      = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
)

// stripeRun runs the reconciler and returns the Stripe source's run.
func (f *sumsFixture) stripeRun(t *testing.T) reconcile.SumsRun {
	t.Helper()
	for _, r := range f.run(t) {
		if r.Source == "stripe-test" {
			return r
		}
	}
	t.Fatal("no run of stripe-test")
	return reconcile.SumsRun{}
}

// historyFixture is a workload whose usage at Stripe lies 20 days back
// (8 units on 2026-11-20) and yesterday (2 units), read once.
func historyFixture(t *testing.T) (*sumsFixture, reconcile.SumsRun) {
	t.Helper()
	f := newSumsFixtureOf(t, historyConfig, historyNow)
	f.workload(t, "wl-h", 1_000_000, "cus_h")
	f.stripe.set("mtr_api", "cus_h", nov20.Add(10*time.Hour), 5)
	f.stripe.set("mtr_api", "cus_h", nov20.Add(11*time.Hour), 3)
	f.stripe.set("mtr_api", "cus_h", historyNow.Add(-17*time.Hour).Truncate(time.Hour), 2)
	return f, f.stripeRun(t)
}

func TestSumsDayBucketsCutCalls(t *testing.T) {
	// given a workload read once: its days, the one day the ledger had
	// never read hourly, and the recent hours
	f, first := historyFixture(t)
	if first.Calls != 3 || first.Reread != 1 || f.total(t, "wl-h") != 10_000 {
		t.Fatalf("first run: calls %d reread %d total %d, want 3 calls, 1 day re-read, 10000", first.Calls, first.Reread,
			f.total(t, "wl-h"))
	}
	// when the next run finds nothing changed
	f.now = f.now.Add(10 * time.Minute)
	calls, pages := f.stripe.calls, f.stripe.pages
	run := f.stripeRun(t)
	// then it costs one call for 33 days and one for the recent hours:
	// one page each, where 841 hourly buckets are 9 pages
	if run.Calls != 2 || f.stripe.calls-calls != 2 || f.stripe.pages-pages != 2 || run.Reread != 0 {
		t.Fatalf("quiet run: calls %d (reader %d) pages %d reread %d, want 2, 2, 2, 0", run.Calls, f.stripe.calls-calls,
			f.stripe.pages-pages, run.Reread)
	}
	days, recent := f.stripe.asked[len(f.stripe.asked)-2], f.stripe.asked[len(f.stripe.asked)-1]
	if days.Width != sums.Day || !days.Start.Equal(time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC)) ||
		!days.End.Equal(time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)) || recent.Width != time.Hour ||
		!recent.Start.Equal(days.End) || !recent.End.Equal(time.Date(2026, 12, 10, 4, 0, 0, 0, time.UTC)) {
		t.Fatalf("queries = %+v then %+v", days, recent)
	}
	if got := f.total(t, "wl-h"); got != 10_000 {
		t.Fatalf("total = %d, want 10000", got)
	}
}

func TestSumsARevisionInHistoryIsFoundThroughItsDay(t *testing.T) {
	// given a workload whose history the ledger holds
	f, _ := historyFixture(t)
	// when Stripe revises 2026-11-20: 10:00 down from 5 to 4, 11:00 up
	// from 3 to 7, and a new 12:00 of 1 (the day: 12, the ledger's 8)
	f.stripe.set("mtr_api", "cus_h", nov20.Add(10*time.Hour), 4)
	f.stripe.set("mtr_api", "cus_h", nov20.Add(11*time.Hour), 7)
	f.stripe.set("mtr_api", "cus_h", nov20.Add(12*time.Hour), 1)
	f.now = f.now.Add(10 * time.Minute)
	run := f.stripeRun(t)
	// then the day is read again hourly, and each hour counts its own
	// maximum: 5 kept, 7 and 1, so +5 (a day's difference would be +4)
	if run.Reread != 1 || run.Calls != 3 || run.Revisions != 3 || run.Downs != 1 {
		t.Fatalf("run = reread %d calls %d revisions %d downs %d, want 1, 3, 3, 1", run.Reread, run.Calls, run.Revisions, run.Downs)
	}
	if got := f.total(t, "wl-h"); got != 15_000 {
		t.Fatalf("total = %d, want 15000 (5+7+1 on 11-20, 2 yesterday)", got)
	}
	// when the next run finds the day as the ledger's latest values
	// have it, it is not read again
	f.now = f.now.Add(10 * time.Minute)
	if run := f.stripeRun(t); run.Reread != 0 || run.Calls != 2 {
		t.Fatalf("next run: reread %d calls %d, want 0 and 2", run.Reread, run.Calls)
	}
	if downs := f.pages(t, "bucket-down#"); len(downs) != 1 {
		t.Fatalf("downward revision pages = %d, want 1", len(downs))
	}
}

// tierConfig is a Stripe source whose quiet workloads rotate over 3
// sweeps, with a one-minute budget.
const tierConfig = `{"stripe-test": {"provider": "stripe", "usage_source": "meters", "account": "acct_1",
	"start": "2026-11-30T00:00:00Z", "settle": "3h", "lag": "2m", "interval": "5m", "quiet_every": 3, "budget": "1m",
	"meters": {"api": {"provider_meter": "mtr_api", "aggregation": "sum", "scale": 1000}}}}`

// readsOf counts the calls per reference since the query log held from.
func (p *scripted) readsOf(from int) map[string]int {
	out := map[string]int{}
	for _, q := range p.asked[from:] {
		out[q.Ref]++
	}
	return out
}

func TestSumsTiersReadNearCapEveryRunAndRotateQuiet(t *testing.T) {
	// given six quiet workloads, one near its cap and one active
	f := newSumsFixtureOf(t, tierConfig, time.Date(2026, 11, 30, 3, 30, 0, 0, time.UTC))
	var quiet []string
	for i := range 6 {
		id := fmt.Sprintf("wl-q%d", i)
		f.workload(t, id, 1_000_000, "cus_q"+fmt.Sprint(i))
		quiet = append(quiet, "cus_q"+fmt.Sprint(i))
	}
	f.workload(t, "wl-n", 10_000, "cus_n")
	f.now = f.now.Add(7 * time.Hour)
	f.webhook(t, "n1", "wl-n", 9000, f.now.Add(-time.Minute))
	f.workload(t, "wl-a", 1_000_000, "cus_a")
	// when three runs go by, one interval apart
	reads := map[string]int{}
	for i := range 3 {
		from := len(f.stripe.asked)
		run := f.stripeRun(t)
		got := f.stripe.readsOf(from)
		// then the near-cap and the active workloads are read on each
		if got["cus_n"] != 1 || got["cus_a"] != 1 {
			t.Fatalf("run %d read %v, want cus_n and cus_a once", i, got)
		}
		n := 0
		for _, ref := range quiet {
			n += got[ref]
			reads[ref] += got[ref]
		}
		if n == len(quiet) {
			t.Fatalf("run %d read every quiet workload: %v", i, got)
		}
		want := map[string]reconcile.TierShare{"near_cap": {Of: 1, Read: 1}, "active": {Of: 1, Read: 1}, "quiet": {Of: 6, Read: n}}
		if fmt.Sprint(run.Tiers) != fmt.Sprint(want) || run.Behind {
			t.Fatalf("run %d tiers %v behind %v, want %v", i, run.Tiers, run.Behind, want)
		}
		f.now = f.now.Add(5 * time.Minute)
	}
	// and every quiet workload was read exactly once in the three
	for _, ref := range quiet {
		if reads[ref] != 1 {
			t.Fatalf("quiet reads over 3 runs = %v, want each once", reads)
		}
	}
	stored, err := f.rec.Runs(context.Background(), "stripe-test", 1)
	if err != nil || len(stored) != 1 || stored[0].Tiers["quiet"].Of != 6 || stored[0].Sweep != 2 {
		t.Fatalf("stored run = %+v, %v; want its tiers and sweep 2", stored, err)
	}
}

func TestSumsRunOutOfBudgetResumesWithNoWorkloadSkipped(t *testing.T) {
	// given five active workloads and one near its cap, a one-minute
	// budget, and calls that take 25 seconds each
	f := newSumsFixtureOf(t, tierConfig, time.Date(2026, 11, 30, 3, 30, 0, 0, time.UTC))
	for i := range 5 {
		f.workload(t, fmt.Sprintf("wl-%d", i), 1_000_000, fmt.Sprintf("cus_%d", i))
	}
	f.workload(t, "wl-z", 10_000, "cus_z")
	f.webhook(t, "z1", "wl-z", 9000, f.now.Add(-time.Minute))
	f.stripe.tick = func() { f.now = f.now.Add(25 * time.Second) }
	// when the first run runs out of budget
	from := len(f.stripe.asked)
	first := f.stripeRun(t)
	// then it read the near-cap workload and two more, and says so
	if got := f.stripe.readsOf(from); fmt.Sprint(got) != "map[cus_0:1 cus_1:1 cus_z:1]" ||
		!first.Behind || first.Resume != "wl-1" || first.Sweep != 0 {
		t.Fatalf("first run read %v, behind %v resume %q sweep %d", got, first.Behind, first.Resume, first.Sweep)
	}
	// when the next runs come, one interval apart
	f.now = f.now.Add(5 * time.Minute)
	from = len(f.stripe.asked)
	second := f.stripeRun(t)
	// then the second resumes after wl-1, reads the near-cap one again,
	// and ends the sweep; the third starts the next sweep from the first
	if got := f.stripe.readsOf(from); fmt.Sprint(got) != "map[cus_2:1 cus_3:1 cus_z:1]" || !second.Behind || second.Resume != "wl-3" {
		t.Fatalf("second run read %v, behind %v resume %q", got, second.Behind, second.Resume)
	}
	f.now = f.now.Add(5 * time.Minute)
	from = len(f.stripe.asked)
	third := f.stripeRun(t)
	if got := f.stripe.readsOf(from); fmt.Sprint(got) != "map[cus_4:1 cus_z:1]" || third.Behind || third.Sweep != 0 {
		t.Fatalf("third run read %v, behind %v sweep %d", got, third.Behind, third.Sweep)
	}
	f.now = f.now.Add(5 * time.Minute)
	from = len(f.stripe.asked)
	if fourth := f.stripeRun(t); fmt.Sprint(f.stripe.readsOf(from)) != "map[cus_0:1 cus_1:1 cus_z:1]" || fourth.Sweep != 1 {
		t.Fatalf("fourth run read %v, sweep %d", f.stripe.readsOf(from), fourth.Sweep)
	}
}

func TestSumsSweepBehindPagesOnce(t *testing.T) {
	// given twelve workloads, a one-minute budget and calls of 40
	// seconds: a sweep takes six runs, more than three intervals
	f := newSumsFixtureOf(t, tierConfig, time.Date(2026, 11, 30, 3, 30, 0, 0, time.UTC))
	for i := range 12 {
		f.workload(t, fmt.Sprintf("wl-%02d", i), 1_000_000, fmt.Sprintf("cus_%02d", i))
	}
	f.stripe.tick = func() { f.now = f.now.Add(40 * time.Second) }
	// when the sweep's six runs go by
	var paged []int
	for i := range 6 {
		run := f.stripeRun(t)
		if slices.ContainsFunc(run.Decisions, func(d string) bool { return strings.HasPrefix(d, "paged sums sweep behind") }) {
			paged = append(paged, i)
		}
		if run.Behind != (i < 5) {
			t.Fatalf("run %d behind = %v", i, run.Behind)
		}
		f.now = f.now.Add(5 * time.Minute)
	}
	// then the run past three intervals paged, once for the source and day
	if fmt.Sprint(paged) != "[3]" {
		t.Fatalf("runs that paged = %v, want [3]", paged)
	}
	pages := f.pages(t, "sums-behind#")
	if len(pages) != 1 || pages[0].DedupKey != "sums-behind#stripe-test#2026-11-30" ||
		!strings.Contains(pages[0].Event.Payload.Summary, "source=stripe-test sweep=0") {
		t.Fatalf("behind pages = %+v", pages)
	}
}

func TestSumsRunStopsBeforeTheInvocationsDeadline(t *testing.T) {
	// given two workloads and an invocation with less time left than the
	// margin the run keeps for its record
	f := newSumsFixtureOf(t, tierConfig, time.Date(2026, 11, 30, 3, 30, 0, 0, time.UTC))
	f.workload(t, "wl-0", 1_000_000, "cus_0")
	f.workload(t, "wl-1", 1_000_000, "cus_1")
	ctx, cancel := context.WithTimeout(context.Background(), reconcile.DefaultSumsMargin-time.Second)
	defer cancel()
	// when the run starts
	runs, err := f.rec.Run(ctx, "run-short")
	// then it reads nothing, says it is behind, and the next run reads both
	if err != nil || len(runs) != 1 || runs[0].Workloads != 0 || !runs[0].Behind {
		t.Fatalf("short run = %+v, %v; want behind with nothing read", runs, err)
	}
	f.now = f.now.Add(5 * time.Minute)
	if run := f.stripeRun(t); run.Workloads != 2 || run.Behind {
		t.Fatalf("next run read %d workloads, behind %v; want 2, not behind", run.Workloads, run.Behind)
	}
}

func TestSumsSweepDoneInOneRunIsNotBehind(t *testing.T) {
	// given one workload whose one call takes longer than three intervals
	f := newSumsFixtureOf(t, tierConfig, time.Date(2026, 11, 30, 3, 30, 0, 0, time.UTC))
	f.workload(t, "wl-slow", 1_000_000, "cus_slow")
	f.stripe.tick = func() { f.now = f.now.Add(16 * time.Minute) }
	// when the run reads it and ends its sweep
	run := f.stripeRun(t)
	// then the sweep is not behind: it never had to resume
	if run.Behind || run.Workloads != 1 || len(f.pages(t, "sums-behind#")) != 0 {
		t.Fatalf("run = behind %v, %d workloads, pages %v; want none behind", run.Behind, run.Workloads, f.pages(t, "sums-behind#"))
	}
}
