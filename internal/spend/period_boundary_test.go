package spend

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// The Los Angeles month of the fixture's clock (2026-11-30T03:18Z) ends at
// midnight Los Angeles, 08:00Z; its close is an hour later (grace 1h).
var (
	laBoundary = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	laOldID    = "2026-10-31T07:00:00Z/2026-11-30T08:00:00Z"
	laNewID    = "2026-11-30T08:00:00Z/2026-12-31T08:00:00Z"
)

func usageAt(rec, ref string, units int64, at time.Time) Usage {
	u := usage(rec, ref, units)
	u.OccurredAt, u.ObservedAt = at, at
	return u
}

// periodItem reads a past period's item: its total and late units.
func (f *fixture) periodItem(t testing.TB, id, pid string) (total, late int64, found bool) {
	t.Helper()
	raw := f.getRaw(t.(*testing.T), f.s.Workloads.workloads, periodKey(id, pid))
	if raw == nil {
		return 0, 0, false
	}
	n := func(name string) int64 {
		v, ok := raw[name].(*types.AttributeValueMemberN)
		if !ok {
			return 0
		}
		x, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	return n("total"), n("late_units"), true
}

func (f *fixture) get(t testing.TB, id string) Workload {
	t.Helper()
	w, err := f.s.Workloads.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (f *fixture) decisionsOf(t testing.TB, id, action string) []Decision {
	t.Helper()
	ds, err := f.s.Explainer.Decisions(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []Decision
	for _, d := range ds {
		if d.Action == action {
			out = append(out, d)
		}
	}
	return out
}

func TestTheCapIsPerPeriodAndResumesAtTheBoundary(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.periodWorkload(t, "w-resume", 10, 0, laMonth(t, AtBoundaryResume))

	// Given a workload of a Los Angeles month paused by its cap in November
	res := f.apply(t, usageAt("rec-nov-1", "w-resume", 11, observed))
	if len(res.Decisions) != 1 || res.Decisions[0].Action != ActionPause {
		t.Fatalf("decisions = %+v, want one pause", res.Decisions)
	}
	wantLine := "spend cap action=pause workload=w-resume attributed=11 cap=10 event=evt_rec-nov-1 record=rec-nov-1 observed=2026-11-30T03:17:00Z period=2026-10-31T00:00:00-07:00/2026-11-30T00:00:00-08:00"
	if got := res.Decisions[0].Line; got != wantLine {
		t.Fatalf("pause line\n got %s\nwant %s", got, wantLine)
	}
	pausedEpoch := f.get(t, "w-resume").CapEpoch

	// When the clock passes the boundary and the first record of December
	// arrives
	f.now = laBoundary.Add(30 * time.Minute)
	res = f.apply(t, usageAt("rec-dec-1", "w-resume", 3, laBoundary.Add(20*time.Minute)))

	// Then the new period's total starts from zero, the workload is active
	// again with a recorded decision, and November's total is kept
	if res.Total != 3 {
		t.Fatalf("total = %d, want 3: the cap is per period", res.Total)
	}
	w := f.get(t, "w-resume")
	if w.Status != StatusActive || w.PeriodID != laNewID || w.PrevPeriodID != laOldID || w.CapEpoch != pausedEpoch+1 {
		t.Fatalf("workload = %s period %s prev %s epoch %d, want active in %s after %s, epoch %d",
			w.Status, w.PeriodID, w.PrevPeriodID, w.CapEpoch, laNewID, laOldID, pausedEpoch+1)
	}
	if ds := f.decisionsOf(t, "w-resume", ActionResumeAtBoundary); len(ds) != 1 || ds[0].Attributed != 11 {
		t.Fatalf("boundary decisions = %+v, want one resume at 11", ds)
	}
	if total, _, _ := f.periodItem(t, "w-resume", laOldID); total != 11 {
		t.Fatalf("November's total = %d, want 11", total)
	}

	// And a late record of November counts in November, never in December
	f.apply(t, usageAt("rec-nov-late", "w-resume", 5, laBoundary.Add(-time.Hour)))
	if total, late, _ := f.periodItem(t, "w-resume", laOldID); total != 16 || late != 0 {
		t.Fatalf("November = %d (late after close %d), want 16 (0: before its close)", total, late)
	}
	if got := f.total(t, "w-resume"); got != 3 {
		t.Fatalf("December's total = %d, want 3", got)
	}
	if n := len(f.pages(t, "spend-late:")); n != 0 {
		t.Fatalf("%d late pages before the close, want none", n)
	}
}

func TestLateUsageAfterTheClosePagesOncePerPeriod(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.periodWorkload(t, "w-late", 1000, 0, laMonth(t, ""))
	f.apply(t, usageAt("rec-nov", "w-late", 7, observed))
	f.now = laBoundary.Add(10 * time.Minute)
	f.apply(t, usageAt("rec-dec", "w-late", 1, f.now))

	// Given November closed at 09:00Z (its end and an hour's grace)
	f.now = laBoundary.Add(time.Hour + time.Minute)

	// When two late records of November arrive after the close, and one
	// comes again
	f.apply(t, usageAt("rec-late-1", "w-late", 40, laBoundary.Add(-time.Minute)))
	f.apply(t, usageAt("rec-late-2", "w-late", 2, laBoundary.Add(-2*time.Minute)))
	f.apply(t, usageAt("rec-late-1", "w-late", 40, laBoundary.Add(-time.Minute)))

	// Then both count in November as late usage, and one page goes, with
	// the first one's amount and the period
	total, late, _ := f.periodItem(t, "w-late", laOldID)
	if total != 49 || late != 42 {
		t.Fatalf("November = %d with %d late, want 49 with 42", total, late)
	}
	pages := f.pages(t, "spend-late:")
	if len(pages) != 1 {
		t.Fatalf("%d late pages, want 1", len(pages))
	}
	want := "spend late usage workload=w-late period=2026-10-31T00:00:00-07:00/2026-11-30T00:00:00-08:00 units=40 record=rec-late-1 closed=2026-11-30T09:00:00Z"
	if got := pages[0].Event.Payload.Summary; got != want {
		t.Fatalf("page line\n got %s\nwant %s", got, want)
	}
	if got := f.total(t, "w-late"); got != 1 {
		t.Fatalf("December = %d, want 1", got)
	}
}

func TestAPausedWorkloadStaysPausedAtTheBoundaryWhenItsPolicySaysSo(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.periodWorkload(t, "w-stay", 10, 0, laMonth(t, AtBoundaryStay))
	f.apply(t, usageAt("rec-nov", "w-stay", 12, observed))

	// When the first record of the next period arrives
	f.now = laBoundary.Add(time.Minute)
	res := f.apply(t, usageAt("rec-dec", "w-stay", 2, f.now))

	// Then the total is the new period's, the workload stays paused with a
	// recorded decision, and admission refuses until an operator resumes
	if w := f.get(t, "w-stay"); res.Total != 2 || w.Status != StatusPaused {
		t.Fatalf("total %d status %s, want 2 and paused", res.Total, w.Status)
	}
	if ds := f.decisionsOf(t, "w-stay", ActionStayAtBoundary); len(ds) != 1 {
		t.Fatalf("stay decisions = %+v, want one", ds)
	}
	if a, err := f.s.Caps.Admission(context.Background(), "w-stay"); err != nil || a.Allowed {
		t.Fatalf("admission = %+v, %v; want refused", a, err)
	}
	if _, err := f.s.Caps.Resume(context.Background(), "w-stay"); err != nil {
		t.Fatalf("resume in the new period: %v", err)
	}
}

func TestTheBoundaryIsCrossedOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.periodWorkload(t, "w-race", 10, 0, laMonth(t, AtBoundaryResume))
	f.apply(t, usageAt("rec-nov", "w-race", 11, observed))
	before := f.get(t, "w-race").CapEpoch

	// When 16 records of the new period arrive at once, each applied alone
	f.now = laBoundary.Add(time.Minute)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			u := usageAt(fmt.Sprintf("rec-dec-%d", i), "w-race", 1, f.now)
			for range 5 {
				if _, err := f.s.Ledger.Apply(context.Background(), u); err == nil {
					return
				}
			}
			t.Errorf("record %d never applied", i)
		})
	}
	wg.Wait()

	// Then the workload crossed once: one decision, one more cap epoch,
	// and the new total holds every record
	w := f.get(t, "w-race")
	if w.Total != 16 || w.CapEpoch != before+1 || w.Status != StatusPaused {
		t.Fatalf("total %d epoch %d status %s, want 16, %d and paused again (16 > 10)", w.Total, w.CapEpoch, w.Status, before+1)
	}
	if ds := f.decisionsOf(t, "w-race", ActionResumeAtBoundary); len(ds) != 1 {
		t.Fatalf("%d boundary decisions, want 1", len(ds))
	}
	if ps := f.decisionsOf(t, "w-race", ActionPause); len(ps) != 2 {
		t.Fatalf("%d pauses, want 2: one a period", len(ps))
	}
}

func TestAHotWorkloadCrossesTheBoundaryMidBatchUnderFaults(t *testing.T) {
	t.Parallel()
	// Given batches of a hot workload whose records straddle the boundary
	// in arrival order, and transactions cut before or after they commit
	env := localaws.StartForTest(t)
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed*31))
			db := &ambiguousDB{DB: env.DynamoDB, rng: rng}
			f := newFixtureWith(t, env, db, nil)
			id := fmt.Sprintf("w-hot-%d", seed)
			f.periodWorkload(t, id, 150, 0, laMonth(t, AtBoundaryResume))
			f.now = laBoundary.Add(5 * time.Minute)
			var us []Usage
			var nov, dec int64
			for i := range 240 {
				// Records drift across the boundary: mostly November
				// first, December after, with stragglers both ways.
				at := laBoundary.Add(time.Duration(i-120+rng.IntN(60)-30) * time.Second)
				u := usageAt(fmt.Sprintf("%s-rec-%d", id, i), id, 1+rng.Int64N(3), at)
				if at.Before(laBoundary) {
					nov += u.Units
				} else {
					dec += u.Units
				}
				us = append(us, u)
			}
			db.after, db.lost = 0.25, 0.15

			// When they are folded in batches of 20 and every failed
			// record is redelivered
			pending := us
			for round := 0; len(pending) > 0; round++ {
				if round == 30 {
					t.Fatalf("%d records still failing", len(pending))
				}
				var again []Usage
				for start := 0; start < len(pending); start += 20 {
					batch := pending[start:min(start+20, len(pending))]
					_, errs := f.s.Ledger.ApplyBatch(context.Background(), batch)
					for i, err := range errs {
						if err != nil {
							again = append(again, batch[i])
						}
					}
				}
				pending = again
			}
			db.after, db.lost = 0, 0

			// Then each period's total is exact: nothing lost, nothing
			// counted twice, and the workload crossed once
			w := f.get(t, id)
			novTotal, _, _ := f.periodItem(t, id, laOldID)
			if w.PeriodID != laNewID || w.Total != dec || novTotal != nov {
				t.Fatalf("December %d (want %d) in %s, November %d (want %d); %d faults", w.Total, dec, w.PeriodID, novTotal, nov, db.faults)
			}
			if w.CapEpoch != 1 {
				t.Fatalf("cap epoch %d, want 1: one boundary", w.CapEpoch)
			}
			if db.faults < 3 {
				t.Fatalf("%d faults injected, want at least 3", db.faults)
			}
			if ok := recomputes(t, f, id, us); !ok {
				t.Fatal("the periods' totals differ from their entries")
			}
		})
	}
}

// recomputes checks that each period's total is the sum of the entries
// of the records that fall in it, read back from the ledger.
func recomputes(t *testing.T, f *fixture, id string, us []Usage) bool {
	t.Helper()
	w := f.get(t, id)
	sums := map[string]int64{}
	for _, u := range us {
		e, err := f.s.Ledger.Entry(context.Background(), u.RecordID)
		if err != nil {
			t.Fatal(err)
		}
		p, err := w.Periods.At(e.OccurredAt)
		if err != nil {
			t.Fatal(err)
		}
		sums[p.ID()] += e.Units
	}
	ok := true
	for pid, want := range sums {
		got := w.Total
		if pid != w.PeriodID {
			got, _, _ = f.periodItem(t, id, pid)
		}
		if got != want {
			t.Errorf("period %s: total %d, entries %d", pid, got, want)
			ok = false
		}
	}
	return ok
}

func TestAdmissionAndExplainShowTheCurrentAndPreviousPeriod(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.periodWorkload(t, "w-show", 10, 0, laMonth(t, AtBoundaryResume))
	f.apply(t, usageAt("rec-nov", "w-show", 12, observed))

	// Given the clock past the boundary, with no record or run since
	f.now = laBoundary.Add(2 * time.Hour)

	// When admission is asked
	a, err := f.s.Caps.Admission(ctx, "w-show")
	if err != nil {
		t.Fatal(err)
	}

	// Then it answers December's total, cap and end, admitted by the
	// policy, and wrote nothing
	if !a.Allowed || a.Attributed != 0 || a.Cap != 10 || a.Period != "2026-11-30T00:00:00-08:00/2026-12-31T00:00:00-08:00" ||
		!a.PeriodEnd.Equal(time.Date(2026, 12, 31, 8, 0, 0, 0, time.UTC)) {
		t.Fatalf("admission = %+v", a)
	}
	if w := f.get(t, "w-show"); w.PeriodID != laOldID || w.Status != StatusPaused {
		t.Fatalf("admission moved the workload: %s %s", w.PeriodID, w.Status)
	}
	cur, prev, err := f.s.Explainer.Periods(ctx, "w-show")
	if err != nil {
		t.Fatal(err)
	}
	if cur.Total != 0 || prev == nil || prev.Total != 12 || prev.Period.String() != "2026-10-31T00:00:00-07:00/2026-11-30T00:00:00-08:00" {
		t.Fatalf("periods before the run: current %+v previous %+v", cur, prev)
	}

	// When a reconciliation run rechecks it
	if _, err := f.s.Caps.Recheck(ctx, f.get(t, "w-show")); err != nil {
		t.Fatal(err)
	}

	// Then the run crossed the boundary, and explain shows both periods
	// with their totals, caps and closes
	if w := f.get(t, "w-show"); w.PeriodID != laNewID || w.Status != StatusActive {
		t.Fatalf("after the run: %s %s", w.PeriodID, w.Status)
	}
	x, err := f.s.Explainer.Explain(ctx, "w-show")
	if err != nil {
		t.Fatal(err)
	}
	if x.Period == nil || x.PreviousPeriod == nil || x.Period.Total != 0 || x.PreviousPeriod.Total != 12 ||
		x.PreviousPeriod.Cap != 10 || !x.PreviousPeriod.Close.Equal(laBoundary.Add(time.Hour)) {
		t.Fatalf("explain periods: current %+v previous %+v", x.Period, x.PreviousPeriod)
	}
	if ds := f.decisionsOf(t, "w-show", ActionResumeAtBoundary); len(ds) != 1 {
		t.Fatalf("%d boundary decisions, want 1", len(ds))
	}
}

func TestTheReaderAnswersAdmissionByItsClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.periodWorkload(t, "w-reader", 10, 0, laMonth(t, AtBoundaryResume))
	f.apply(t, usageAt("rec-nov", "w-reader", 12, observed))

	// Given the admission function's reader on a clock past the boundary
	// (a local run's moved clock), whatever the wall clock says
	r, err := NewReader(f.s.Workloads.db, f.s.Workloads.workloads, func() time.Time { return laBoundary.Add(time.Hour) })
	if err != nil {
		t.Fatal(err)
	}

	// When admission is asked
	a, err := r.Admission(ctx, "w-reader")
	if err != nil {
		t.Fatal(err)
	}

	// Then it answers the period of its clock: December, from zero
	if !a.Allowed || a.Attributed != 0 || a.Period != "2026-11-30T00:00:00-08:00/2026-12-31T00:00:00-08:00" {
		t.Fatalf("admission = %+v, want December's from zero", a)
	}
}
