package spend

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/period"
)

// nyFirst is a month anchored on the 1st in New York: a change of anchor
// and zone from [laMonth].
func nyFirst(t testing.TB) period.Recurrence {
	t.Helper()
	r, err := period.Config{Period: "month", Anchor: "2027-01-01T00:00:00", TimeZone: "America/New_York"}.Recurrence()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// After the change at the Los Angeles boundary (Nov 30 00:00 LA, 03:00
// in New York) the first period runs to the New York month's end (Dec 1
// 00:00 New York), then New York months follow.
const (
	nyStubID  = "2026-11-30T08:00:00Z/2026-12-01T05:00:00Z"
	nyMonthID = "2026-12-01T05:00:00Z/2027-01-01T05:00:00Z"
)

func TestAPeriodChangeTakesEffectAtTheNextBoundary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.periodWorkload(t, "w-change", 100, 0, laMonth(t, ""))
	f.apply(t, usageAt("rec-nov-1", "w-change", 4, observed))

	// Given a Los Angeles month, when its period is changed to a New York
	// month anchored on the 1st
	change, err := f.s.Caps.SetPeriod(ctx, "w-change", nyFirst(t))
	if err != nil {
		t.Fatal(err)
	}

	// Then the change takes effect at the current period's end, with a
	// recorded decision, and the current period is unchanged
	if !change.From.Equal(laBoundary) || !change.Recurrence.Equal(nyFirst(t)) {
		t.Fatalf("change = %+v, want from %s", change, laBoundary)
	}
	w := f.get(t, "w-change")
	if w.PeriodID != laOldID || w.Periods.Pending == nil || !w.Periods.Recurrence.Equal(laMonth(t, "").Recurrence) {
		t.Fatalf("workload after set-period: period %s pending %+v recurrence %s", w.PeriodID, w.Periods.Pending, w.Periods.Recurrence)
	}
	ds := f.decisionsOf(t, "w-change", ActionSetPeriod)
	wantLine := "spend period change workload=w-change to=month anchored 2027-01-01T00:00:00 America/New_York" +
		" from=2026-11-30T00:00:00-08:00 was=month anchored 2026-01-31T00:00:00 America/Los_Angeles"
	if len(ds) != 1 || ds[0].Line != wantLine {
		t.Fatalf("decisions %+v, want one line %q", ds, wantLine)
	}
	// and a record before the boundary still counts in the old period
	f.apply(t, usageAt("rec-nov-2", "w-change", 2, observed))
	if got := f.total(t, "w-change"); got != 6 {
		t.Fatalf("November's total = %d, want 6", got)
	}

	// When the clock passes the boundary and a record arrives
	f.now = laBoundary.Add(30 * time.Minute)
	f.apply(t, usageAt("rec-stub-1", "w-change", 3, laBoundary.Add(20*time.Minute)))

	// Then the workload is in the first period of the new recurrence: from
	// the boundary to the New York month's end, from zero
	w = f.get(t, "w-change")
	if w.PeriodID != nyStubID || w.PrevPeriodID != laOldID || w.Total != 3 || w.Periods.Pending != nil ||
		!w.Periods.Recurrence.Equal(nyFirst(t)) {
		t.Fatalf("after the boundary: period %s prev %s total %d pending %+v recurrence %s",
			w.PeriodID, w.PrevPeriodID, w.Total, w.Periods.Pending, w.Periods.Recurrence)
	}
	// and a late record of November still counts in November, by the
	// recurrence it was in
	f.apply(t, usageAt("rec-nov-late", "w-change", 5, laBoundary.Add(-time.Hour)))
	if total, _, _ := f.periodItem(t, "w-change", laOldID); total != 11 {
		t.Fatalf("November = %d, want 11", total)
	}

	// When the New York month begins, records count in whole New York
	// months, and a late one of the first period counts there
	nyDec := time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)
	f.now = nyDec.Add(30 * time.Minute)
	f.apply(t, usageAt("rec-dec-1", "w-change", 7, nyDec.Add(10*time.Minute)))
	f.apply(t, usageAt("rec-stub-late", "w-change", 1, nyDec.Add(-time.Hour)))
	w = f.get(t, "w-change")
	if w.PeriodID != nyMonthID || w.Total != 7 {
		t.Fatalf("in December: period %s total %d, want %s at 7", w.PeriodID, w.Total, nyMonthID)
	}
	if total, _, _ := f.periodItem(t, "w-change", nyStubID); total != 4 {
		t.Fatalf("the first period after the change = %d, want 4", total)
	}
}

func TestAPeriodChangeIsRefusedWhereItHasNoBoundary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.workload(t, "w-lifetime", 100, 0)
	f.periodWorkload(t, "w-month", 100, 0, laMonth(t, ""))
	for _, tc := range []struct {
		name, id string
		to       period.Recurrence
		want     error
	}{
		{name: "a lifetime total has no boundary", id: "w-lifetime", to: nyFirst(t), want: ErrInvalidWorkload},
		{name: "to none", id: "w-month", to: period.Recurrence{}, want: ErrInvalidWorkload},
		{name: "an unknown workload", id: "w-nobody", to: nyFirst(t), want: ErrUnknownWorkload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// given the workload, when its period is set, then it is
			// refused and nothing is pending
			if _, err := f.s.Caps.SetPeriod(ctx, tc.id, tc.to); !errors.Is(err, tc.want) {
				t.Fatalf("SetPeriod = %v, want %v", err, tc.want)
			}
		})
	}
	if w := f.get(t, "w-month"); w.Periods.Pending != nil {
		t.Fatalf("pending %+v after a refused change", w.Periods.Pending)
	}
}
