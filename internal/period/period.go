package period

import (
	"fmt"
	"strings"
	"time"
)

// Period is one period of a [Recurrence]: it holds Start and excludes
// End. Both are in the recurrence's zone. The lifetime period of [None]
// starts at the zero time and has a zero End, meaning it never ends.
type Period struct {
	Start time.Time
	End   time.Time
}

// Lifetime is the one period of [None]: from the beginning of time
// (the zero [time.Time]) to forever (a zero End).
var Lifetime = Period{}

// Unbounded reports whether p never ends (the lifetime period).
func (p Period) Unbounded() bool { return p.End.IsZero() }

// Contains reports whether Start <= t < End.
func (p Period) Contains(t time.Time) bool {
	return !t.Before(p.Start) && (p.Unbounded() || t.Before(p.End))
}

// Equal reports whether p and q are the same instants, whatever their
// locations.
func (p Period) Equal(q Period) bool { return p.Start.Equal(q.Start) && p.End.Equal(q.End) }

// String is the period for people, an ISO 8601 interval in its zone:
// "2026-12-01T00:00:00-08:00/2027-01-01T00:00:00-08:00". The lifetime
// period is "0001-01-01T00:00:00Z/..".
func (p Period) String() string {
	if p.Unbounded() {
		return p.Start.Format(time.RFC3339) + "/" + openEnd
	}
	return p.Start.Format(time.RFC3339) + "/" + p.End.Format(time.RFC3339)
}

// idLayout is fixed width for the years 0001 to 9999, so IDs sort as
// their starts do.
const (
	idLayout = "2006-01-02T15:04:05Z"
	openEnd  = ".."
)

// ID is the period's storage key: its start and end in UTC, an ISO 8601
// interval of fixed width, "2026-12-01T08:00:00Z/2027-01-01T08:00:00Z".
// It names the period exactly without its recurrence (two periods with
// one start but different ends, as after a change of period, differ),
// and IDs sort by start. The lifetime period is
// "0001-01-01T00:00:00Z/..". [ParseID] reads it back.
func (p Period) ID() string {
	end := openEnd
	if !p.Unbounded() {
		end = p.End.UTC().Format(idLayout)
	}
	return p.Start.UTC().Format(idLayout) + "/" + end
}

// ParseID reads an [Period.ID]. The period comes back in UTC; use
// [Period.In] for the recurrence's zone.
func ParseID(id string) (Period, error) {
	start, end, ok := strings.Cut(id, "/")
	bad := func(reason string) (Period, error) {
		return Period{}, &FieldError{Field: "period_id", Value: id, Reason: reason}
	}
	if !ok {
		return bad("want start/end")
	}
	s, err := time.Parse(idLayout, start)
	if err != nil {
		return bad("start is not " + idLayout)
	}
	p := Period{Start: s}
	if end == openEnd {
		if !s.IsZero() {
			return bad("only the lifetime period is open")
		}
		return p, nil
	}
	if p.End, err = time.Parse(idLayout, end); err != nil {
		return bad("end is not " + idLayout)
	}
	if !p.Start.Before(p.End) {
		return bad("end is not after start")
	}
	return p, nil
}

// In returns p with both instants in loc.
func (p Period) In(loc *time.Location) Period {
	q := Period{Start: p.Start.In(loc)}
	if !p.Unbounded() {
		q.End = p.End.In(loc)
	}
	return q
}

// Close is the instant after which usage of p can no longer change the
// invoice's decision: p's end plus grace, the provider's invoice
// finalisation delay (a grace below zero counts as zero). The lifetime
// period never closes: Close returns the zero time.
func Close(p Period, grace time.Duration) time.Time {
	if p.Unbounded() {
		return time.Time{}
	}
	return p.End.Add(max(grace, 0))
}

// GoString helps test failures name both instants.
func (p Period) GoString() string { return fmt.Sprintf("period.Period(%s)", p) }
