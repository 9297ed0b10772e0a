package period_test

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/period"
)

// propertySeed fixes the random cases; a failure names the case's inputs.
const propertySeed = 46

// propertyZones mix UTC, daylight saving north and south, a 30-minute
// shift (Lord Howe), odd offsets (+05:45, +05:30, -03:30, +12:45) and a
// zone that springs forward at midnight (Santiago).
var propertyZones = []string{
	"UTC", "America/Los_Angeles", "Europe/London", "Australia/Lord_Howe", "Asia/Kathmandu",
	"Asia/Kolkata", "Australia/Adelaide", "America/St_Johns", "Pacific/Chatham", "America/Santiago",
}

func TestPropertiesOverRandomAnchorsZonesAndInstants(t *testing.T) {
	rng := rand.New(rand.NewPCG(propertySeed, 0))
	zones := make([]*time.Location, len(propertyZones))
	for i, name := range propertyZones {
		zones[i] = zone(t, name)
	}
	cases := 1000
	if testing.Short() {
		cases = 200
	}
	for c := range cases {
		loc := zones[rng.IntN(len(zones))]
		interval := period.Interval(1 + rng.IntN(4))
		wall := randomWall(rng)
		anchor, err := period.ParseAnchor(wall.Format("2006-01-02T15:04:05"), loc)
		if err != nil {
			if !period.IsBadConfig(err) {
				t.Fatalf("case %d: ParseAnchor: %v", c, err)
			}
			continue // a wall time the zone skips is refused; that is tested elsewhere
		}
		r, err := period.New(interval, anchor, loc)
		if err != nil {
			t.Fatalf("case %d: New: %v", c, err)
		}
		at := anchor.Add(time.Duration(rng.Int64N(2*40*365*24)-40*365*24) * time.Hour).Add(time.Duration(rng.IntN(3600)) * time.Second)
		checkCase(t, rng, r, wall, at)
		if t.Failed() {
			t.Fatalf("case %d: %s, instant %s", c, r, at.Format(time.RFC3339))
		}
	}
}

// randomWall picks a wall time, favouring month ends, Feb 29, midnight
// and the early hours when clocks change.
func randomWall(rng *rand.Rand) time.Time {
	y := 1990 + rng.IntN(50)
	m := time.Month(1 + rng.IntN(12))
	days := time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
	d := 1 + rng.IntN(days)
	switch rng.IntN(4) {
	case 0:
		d = max(days-rng.IntN(3), 1) // the 29th to the 31st
	case 1:
		y, m, d = 2000+4*rng.IntN(10), time.February, 29
	}
	h, mi, s := 0, 0, 0
	switch rng.IntN(3) {
	case 0:
		h, mi = rng.IntN(4), 15*rng.IntN(4) // the hours of clock changes
	case 1:
		h, mi, s = rng.IntN(24), rng.IntN(60), rng.IntN(60)
	}
	return time.Date(y, m, d, h, mi, s, 0, time.UTC)
}

func wallOf(t time.Time) time.Time {
	_, off := t.Zone()
	return t.UTC().Add(time.Duration(off) * time.Second)
}

func checkCase(t *testing.T, rng *rand.Rand, r period.Recurrence, anchorWall, at time.Time) {
	t.Helper()
	p, err := r.PeriodAt(at)
	if err != nil {
		t.Errorf("PeriodAt: %v", err)
		return
	}
	if !p.Contains(at) {
		t.Errorf("PeriodAt(t) = %s does not contain t", p)
	}
	// Walk a span of years: each period starts where the one before ends,
	// is not empty, has its boundary where the rules put it, and PeriodAt
	// of any instant inside it returns it.
	steps := map[period.Interval]int{period.Day: 800, period.Week: 160, period.Month: 40, period.Year: 5}[r.Interval]
	walked := []period.Period{p}
	for range steps {
		prev := walked[len(walked)-1]
		next, err := r.Next(prev)
		if err != nil {
			t.Errorf("Next(%s): %v", prev, err)
			return
		}
		if !next.Start.Equal(prev.End) {
			t.Errorf("Next(%s) = %s: not contiguous", prev, next)
		}
		if back, err := r.Prev(next); err != nil || !back.Equal(prev) {
			t.Errorf("Prev(%s) = %s, %v; want %s", next, back, err, prev)
		}
		walked = append(walked, next)
	}
	for _, q := range walked {
		checkBoundary(t, r, anchorWall, q)
		checkLength(t, r, q)
	}
	for range 20 {
		first, last := walked[0].Start, walked[len(walked)-1].End
		x := first.Add(time.Duration(rng.Int64N(int64(last.Sub(first)))))
		i := sort.Search(len(walked), func(i int) bool { return walked[i].End.After(x) })
		got, err := r.PeriodAt(x)
		if err != nil || !got.Equal(walked[i]) {
			t.Errorf("PeriodAt(%s) = %s, %v; the walk says %s", x.Format(time.RFC3339), got, err, walked[i])
		}
	}
	for _, x := range []time.Time{p.Start, p.End.Add(-time.Nanosecond)} {
		if got, err := r.PeriodAt(x); err != nil || !got.Equal(p) {
			t.Errorf("PeriodAt(%s) = %s, %v; want %s", x.Format(time.RFC3339Nano), got, err, p)
		}
	}
}

// checkBoundary checks q's start against the rules: the anchor's day,
// clamped to the month's last day; the anchor's month, weekday and time
// of day; a skipped wall time moved forward by the gap; a repeated one
// at its first instant.
func checkBoundary(t *testing.T, r period.Recurrence, anchorWall time.Time, q period.Period) {
	t.Helper()
	start := q.Start.In(r.Zone)
	y, m, d := start.Date()
	days := time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
	switch r.Interval {
	case period.Month:
		if want := min(anchorWall.Day(), days); d != want {
			t.Errorf("month period %s starts on day %d, want min(%d, %d)", q, d, anchorWall.Day(), days)
		}
	case period.Year:
		if want := min(anchorWall.Day(), days); m != anchorWall.Month() || d != want {
			t.Errorf("year period %s starts on %s %d, want %s %d", q, m, d, anchorWall.Month(), want)
		}
	case period.Week:
		if start.Weekday() != anchorWall.Weekday() {
			t.Errorf("week period %s starts on a %s, want %s", q, start.Weekday(), anchorWall.Weekday())
		}
	}
	h, mi, s := anchorWall.Clock()
	w := time.Date(y, m, d, h, mi, s, 0, time.UTC) // the wall time the rules ask for
	_, offBefore := start.Add(-24 * time.Hour).Zone()
	_, offAt := start.Zone()
	_, offAfter := start.Add(24 * time.Hour).Zone()
	if got := wallOf(start); !got.Equal(w) {
		// Skipped: no offset around shows w, and start is w moved by the gap.
		for _, o := range []int{offBefore, offAt, offAfter} {
			c := w.Add(-time.Duration(o) * time.Second).In(r.Zone)
			if wallOf(c).Equal(w) {
				t.Errorf("period %s starts at wall %s, but %s shows the anchor's wall time", q, got, c)
			}
		}
		if shift := got.Sub(w); shift != time.Duration(offAt-offBefore)*time.Second {
			t.Errorf("period %s: skipped wall %s moved by %s, want the gap %ds", q, w, shift, offAt-offBefore)
		}
		return
	}
	// Shown: no earlier instant shows the same wall time.
	for _, o := range []int{offBefore, offAfter} {
		c := w.Add(-time.Duration(o) * time.Second).In(r.Zone)
		if wallOf(c).Equal(w) && c.Before(start) {
			t.Errorf("period %s starts at the later of two instants showing %s (%s)", q, w, c)
		}
	}
}

func checkLength(t *testing.T, r period.Recurrence, q period.Period) {
	t.Helper()
	// The widest shift here is St John's double summer time of 1988 (2h).
	const slack = 2 * time.Hour
	day := 24 * time.Hour
	bounds := map[period.Interval][2]time.Duration{
		period.Day:   {day, day},
		period.Week:  {7 * day, 7 * day},
		period.Month: {28 * day, 31 * day},
		period.Year:  {365 * day, 366 * day},
	}[r.Interval]
	lo, hi := bounds[0]-slack, bounds[1]+slack
	if n := q.End.Sub(q.Start); n < lo || n > hi {
		t.Errorf("period %s lasts %s, want %s to %s", q, n, lo, hi)
	}
}
