package period

import (
	"fmt"
	"strings"
	"time"
)

// Straddles reports whether the bucket [start, start+width) holds a
// boundary of r strictly inside it, so that its sum would belong to two
// periods. [FitsBuckets] proves at start that no bucket of a source
// does.
func (r Recurrence) Straddles(start time.Time, width time.Duration) (bool, error) {
	if r.Interval == None || width <= 0 {
		return false, r.ready()
	}
	p, err := r.PeriodAt(start)
	if err != nil {
		return false, err
	}
	return p.End.Before(start.Add(width)), nil
}

// Horizon is how far past its anchor [FitsBuckets] checks a recurrence's
// boundaries (it also checks the year before the anchor). The zoneinfo
// states every rule a zone will follow within it; a rule changed by a
// later zoneinfo is checked again at the next start.
const Horizon = 100 * 365 * 24 * time.Hour

// FitsBuckets returns nil when no sums bucket of width, aligned on the
// wall clock of bucketZone (nil is UTC, as every provider aligns them),
// straddles a boundary of r: every boundary from a year before r's
// anchor to [Horizon] after it is a bucket start. Otherwise it returns a
// [*StraddleError] naming the fields and the first boundary that falls
// inside a bucket. width must divide a day into whole seconds (1m, 1h,
// 1d); other widths are an [ErrBadConfig]. [None] fits every width.
//
// Within a stretch where neither zone changes its offset, the boundaries
// share one time of day and so one remainder modulo width; only the
// first can differ, when a gap moved it. So the check reads the first
// boundaries of each such stretch, not every day of a century.
func FitsBuckets(r Recurrence, width time.Duration, bucketZone *time.Location) error {
	if width <= 0 || width%time.Second != 0 || (24*time.Hour)%width != 0 {
		return &FieldError{Field: "width", Value: width.String(), Reason: "must divide a day into whole seconds (1m, 1h, 24h)"}
	}
	if err := r.ready(); err != nil || r.Interval == None {
		return err
	}
	if bucketZone == nil {
		bucketZone = time.UTC
	}
	from, until := r.Anchor.AddDate(-1, 0, 0), r.Anchor.Add(Horizon)
	for s := from; s.Before(until); {
		e := earliest(offsetEnd(s, r.Zone), offsetEnd(s, bucketZone), until)
		p, err := r.PeriodAt(s)
		if err != nil {
			return err
		}
		if p.Start.Equal(s) && !aligned(p.Start, width, bucketZone) {
			return r.straddle(p.Start, width, bucketZone)
		}
		for range 2 {
			if !p.End.Before(e) {
				break
			}
			if !aligned(p.End, width, bucketZone) {
				return r.straddle(p.End, width, bucketZone)
			}
			if p, err = r.Next(p); err != nil {
				return err
			}
		}
		s = e
	}
	return nil
}

// offsetEnd is the next instant after t at which loc may change its
// offset, or the far future. [time.Time.ZoneBounds] can answer t itself
// at a year's end beyond the zoneinfo's last transition (Go 1.26); the
// next day is then a safe stop, as no day holds more than two
// boundaries and FitsBuckets reads every boundary of a stretch that
// short.
func offsetEnd(t time.Time, loc *time.Location) time.Time {
	_, end := t.In(loc).ZoneBounds()
	switch {
	case end.IsZero():
		return time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	case !end.After(t):
		return t.Add(24 * time.Hour)
	}
	return end
}

func earliest(ts ...time.Time) time.Time {
	first := ts[0]
	for _, t := range ts[1:] {
		if t.Before(first) {
			first = t
		}
	}
	return first
}

// aligned reports whether b is a bucket start: its wall time in zone is
// a whole number of widths since the Unix epoch.
func aligned(b time.Time, width time.Duration, zone *time.Location) bool {
	_, off := b.In(zone).Zone()
	w := int64(width / time.Second)
	return (b.Unix()+int64(off))%w == 0
}

func (r Recurrence) straddle(b time.Time, width time.Duration, zone *time.Location) error {
	return &StraddleError{Recurrence: r, Width: width, BucketZone: zone.String(), Boundary: b}
}

// StraddleError is a recurrence whose boundary falls inside a sums
// bucket. It wraps [ErrStraddle].
type StraddleError struct {
	Recurrence Recurrence
	Width      time.Duration
	BucketZone string
	Boundary   time.Time // the first boundary inside a bucket, in the recurrence's zone
}

// Fields names the configuration fields that together cause the
// straddle: the recurrence's and the source's bucket width.
func (e *StraddleError) Fields() []string { return []string{"period", "anchor", "time_zone", "width"} }

func (e *StraddleError) Error() string {
	return fmt.Sprintf("period: %s buckets (%s) straddle the boundary %s of period %s: change one of %s so that boundaries fall on bucket starts (a UTC midnight anchor and time zone UTC fit every width)",
		e.Width, e.BucketZone, e.Boundary.Format(time.RFC3339), e.Recurrence, strings.Join(e.Fields(), ", "))
}

// Unwrap returns [ErrStraddle].
func (e *StraddleError) Unwrap() error { return ErrStraddle }
