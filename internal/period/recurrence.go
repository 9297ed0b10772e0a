package period

import (
	"fmt"
	"time"
)

// Recurrence is a schedule of periods: an [Interval], an anchor and the
// IANA zone whose wall clock the periods follow. Build one with [New] or
// [Config.Recurrence]; the zero value is [None].
//
// The anchor is any instant on the schedule, earlier or later than the
// periods asked for. What counts is its wall date and time in Zone: the
// day of the month (for Month and Year), the month (for Year), the
// weekday (for Week) and the time of day, to the second. Boundary n is
// that wall time moved by n intervals, so nothing drifts:
//
//   - Month: the anchor's day, or the last day of a shorter month; a
//     period on the 31st runs Jan 31, Feb 28 (29), Mar 31, Apr 30.
//   - Year: the anchor's month and day; Feb 29 falls on Feb 28 in a
//     common year.
//   - Week: the anchor's weekday. Day: every day.
//
// A wall time the zone skips (the spring-forward gap) moves forward by
// the gap's length (02:30 becomes 03:30 in America/Los_Angeles on
// 2026-03-08); a wall time the zone shows twice (fall back) is its first
// instant. Go's [time.Date] leaves that choice unspecified and makes it
// differently per zone, so the package resolves it itself.
type Recurrence struct {
	Interval Interval
	Anchor   time.Time
	Zone     *time.Location
}

// maxSteps bounds the search in [Recurrence.PeriodAt]. The first guess
// is within one period of the answer; a recurrence that is not settled
// after maxSteps returns [ErrNoPeriod] instead of looping.
const maxSteps = 8

// New returns a valid recurrence whose anchor is its first boundary, in
// zone: an anchor given as the second instant of a repeated wall time
// becomes the first. For [None] the anchor and zone are dropped.
func New(interval Interval, anchor time.Time, zone *time.Location) (Recurrence, error) {
	if interval == None {
		return Recurrence{}, nil
	}
	r := Recurrence{Interval: interval, Anchor: anchor, Zone: zone}
	if err := r.Validate(); err != nil {
		return Recurrence{}, err
	}
	r.Anchor = r.boundary(0)
	return r, nil
}

// Validate reports a recurrence that cannot make periods: an unknown
// interval, a missing or machine-dependent ("Local") zone or one that
// cannot be loaded by its name, a zero anchor, an anchor with fractions
// of a second, or one outside the years 0001 to 9998. [None] is always
// valid.
func (r Recurrence) Validate() error {
	if !r.Interval.valid() {
		return &FieldError{Field: "period", Value: r.Interval.String(), Reason: "not an interval"}
	}
	if r.Interval == None {
		return nil
	}
	if _, err := zoneByName(zoneName(r.Zone)); err != nil {
		return err
	}
	switch {
	case r.Anchor.IsZero():
		return &FieldError{Field: "anchor", Reason: "required"}
	case r.Anchor.Nanosecond() != 0:
		return &FieldError{Field: "anchor", Value: r.Anchor.Format(time.RFC3339Nano), Reason: "has fractions of a second"}
	case !inRange(r.Anchor):
		return &FieldError{Field: "anchor", Value: r.Anchor.Format(time.RFC3339), Reason: "outside the years 0001 to 9998"}
	}
	return nil
}

// ready is the cheap part of Validate, checked on every call.
func (r Recurrence) ready() error {
	if !r.Interval.valid() || r.Interval != None && (r.Zone == nil || r.Anchor.IsZero()) {
		return fmt.Errorf("%w: incomplete recurrence %s", ErrBadConfig, r)
	}
	return nil
}

func inRange(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 1 && y <= 9998
}

// PeriodAt returns the period that contains t: Start <= t < End. For
// [None] it is [Lifetime]. t must lie in the years 0001 to 9998
// ([ErrOutOfRange]).
func (r Recurrence) PeriodAt(t time.Time) (Period, error) {
	if err := r.ready(); err != nil {
		return Period{}, err
	}
	if r.Interval == None {
		return Lifetime, nil
	}
	if !inRange(t) {
		return Period{}, fmt.Errorf("%w: %s", ErrOutOfRange, t.Format(time.RFC3339))
	}
	n := r.estimate(t)
	for range maxSteps {
		start := r.boundary(n)
		if start.After(t) {
			n--
			continue
		}
		end := r.boundary(n + 1)
		if !t.Before(end) {
			n++
			continue
		}
		return Period{Start: start, End: end}, nil
	}
	return Period{}, fmt.Errorf("%w: %s at %s", ErrNoPeriod, r, t.Format(time.RFC3339))
}

// Next returns the period that starts at p's end. The lifetime period
// has none ([ErrUnbounded]).
func (r Recurrence) Next(p Period) (Period, error) {
	if r.Interval == None || p.Unbounded() {
		return Period{}, ErrUnbounded
	}
	return r.PeriodAt(p.End)
}

// Prev returns the period that ends at p's start. The lifetime period
// has none ([ErrUnbounded]).
func (r Recurrence) Prev(p Period) (Period, error) {
	if r.Interval == None || p.Unbounded() {
		return Period{}, ErrUnbounded
	}
	return r.PeriodAt(p.Start.Add(-time.Nanosecond))
}

// Equal reports whether r and o make the same periods: one interval,
// one anchor instant and one zone name. Any two [None] are equal.
func (r Recurrence) Equal(o Recurrence) bool {
	if r.Interval != o.Interval {
		return false
	}
	return r.Interval == None || r.Anchor.Equal(o.Anchor) && zoneName(r.Zone) == zoneName(o.Zone)
}

// String describes r for logs and errors:
// "month anchored 2026-01-31T00:00:00 America/Los_Angeles", or "none".
func (r Recurrence) String() string {
	if r.Interval == None || r.Zone == nil {
		return r.Interval.String()
	}
	return fmt.Sprintf("%s anchored %s %s", r.Interval, r.Anchor.In(r.Zone).Format(civilLayout), r.Zone)
}

// estimate is n such that boundary(n) is within a period of the one
// that starts the period holding t.
func (r Recurrence) estimate(t time.Time) int {
	a := r.Anchor.In(r.Zone)
	w := t.In(r.Zone)
	switch r.Interval {
	case Day:
		return civilDays(w) - civilDays(a)
	case Week:
		return floorDiv(civilDays(w)-civilDays(a), 7)
	case Month:
		return (w.Year()-a.Year())*12 + int(w.Month()) - int(a.Month())
	default: // Year
		return w.Year() - a.Year()
	}
}

// boundary returns the start of period n, counted from the anchor's.
func (r Recurrence) boundary(n int) time.Time {
	a := r.Anchor.In(r.Zone)
	y, m, d := a.Date()
	switch r.Interval {
	case Day:
		d += n
	case Week:
		d += 7 * n
	case Month:
		months := int(m) - 1 + n
		y += floorDiv(months, 12)
		m = time.Month(months - floorDiv(months, 12)*12 + 1)
		d = min(d, daysIn(y, m))
	case Year:
		y += n
		d = min(d, daysIn(y, m))
	}
	hh, mm, ss := a.Clock()
	return resolve(time.Date(y, m, d, hh, mm, ss, 0, time.UTC), r.Zone)
}

// resolve returns the instant whose wall time in loc is wall (a civil
// date and time written in UTC). Where loc shows wall twice it is the
// first instant; where loc skips wall it is wall moved forward by the
// gap, that is wall read with the offset in force before the gap.
//
// Offsets lie within -12h and +14h, so every instant that can show wall
// lies within 15 hours of wall read as UTC, and the offsets in force at
// those two ends are the ones before and after any change in between.
func resolve(wall time.Time, loc *time.Location) time.Time {
	_, before := wall.Add(-15 * time.Hour).In(loc).Zone()
	_, after := wall.Add(15 * time.Hour).In(loc).Zone()
	var first time.Time
	for _, o := range [...]int{before, after} {
		c := wall.Add(-time.Duration(o) * time.Second).In(loc)
		if wallOf(c).Equal(wall) && (first.IsZero() || c.Before(first)) {
			first = c
		}
	}
	if !first.IsZero() {
		return first
	}
	return wall.Add(-time.Duration(before) * time.Second).In(loc)
}

// wallOf returns t's wall date and time written in UTC.
func wallOf(t time.Time) time.Time {
	_, off := t.Zone()
	return t.UTC().Add(time.Duration(off) * time.Second)
}

func civilDays(t time.Time) int {
	y, m, d := t.Date()
	return floorDiv(int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix()), 86400)
}

func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
