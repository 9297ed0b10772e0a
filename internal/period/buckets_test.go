package period_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/period"
)

func TestFitsBuckets(t *testing.T) {
	const day, hour = 24 * time.Hour, time.Hour
	tests := []struct {
		name                   string
		interval, anchor, zone string
		width                  time.Duration
		bucketZone             string // empty is UTC
		wantBoundary           string // the first boundary inside a bucket; empty fits
	}{
		{name: "utc month, utc day buckets", interval: "month", anchor: "2026-01-31T00:00:00", zone: "UTC", width: day},
		{name: "utc day at noon, utc day buckets", interval: "day", anchor: "2026-01-01T12:00:00", zone: "UTC", width: day,
			wantBoundary: "2025-01-01T12:00:00Z"},
		{name: "los angeles month, utc day buckets (openai costs)", interval: "month", anchor: "2026-01-31T00:00:00", zone: "America/Los_Angeles", width: day,
			wantBoundary: "2025-01-31T00:00:00-08:00"},
		{name: "los angeles month, utc hour buckets (stripe summaries)", interval: "month", anchor: "2026-01-31T00:00:00", zone: "America/Los_Angeles", width: hour},
		{name: "london month, utc day buckets: summer time", interval: "month", anchor: "2026-01-31T00:00:00", zone: "Europe/London", width: day,
			wantBoundary: "2025-03-31T00:00:00+01:00"},
		{name: "london year on jan 1, utc day buckets: always GMT", interval: "year", anchor: "2026-01-01T00:00:00", zone: "Europe/London", width: day},
		{name: "kolkata +05:30, hour buckets", interval: "month", anchor: "2026-01-31T00:00:00", zone: "Asia/Kolkata", width: hour,
			wantBoundary: "2025-01-31T00:00:00+05:30"},
		{name: "kolkata +05:30, 30 minute buckets", interval: "month", anchor: "2026-01-31T00:00:00", zone: "Asia/Kolkata", width: 30 * time.Minute},
		{name: "kathmandu +05:45, 30 minute buckets", interval: "week", anchor: "2026-01-05T00:00:00", zone: "Asia/Kathmandu", width: 30 * time.Minute,
			wantBoundary: "2025-01-06T00:00:00+05:45"},
		{name: "kathmandu +05:45, 15 minute buckets", interval: "week", anchor: "2026-01-05T00:00:00", zone: "Asia/Kathmandu", width: 15 * time.Minute},
		{name: "adelaide +09:30/+10:30, hour buckets", interval: "day", anchor: "2026-01-01T00:00:00", zone: "Australia/Adelaide", width: hour,
			wantBoundary: "2025-01-01T00:00:00+10:30"},
		{name: "lord howe shifts by 30 minutes, hour buckets", interval: "day", anchor: "2026-01-01T00:00:00", zone: "Australia/Lord_Howe", width: hour,
			wantBoundary: "2025-04-07T00:00:00+10:30"},
		{name: "lord howe, hour buckets on its own wall clock: only the gap-moved boundary", interval: "day", anchor: "2026-01-01T02:00:00", zone: "Australia/Lord_Howe",
			width: hour, bucketZone: "Australia/Lord_Howe", wantBoundary: "2025-10-05T02:30:00+11:00"},
		{name: "los angeles at 02:00, hour buckets: the gap moves it a whole hour", interval: "day", anchor: "2026-01-01T02:00:00", zone: "America/Los_Angeles", width: hour},
		{name: "los angeles month, los angeles day buckets", interval: "month", anchor: "2026-01-31T00:00:00", zone: "America/Los_Angeles", width: day, bucketZone: "America/Los_Angeles"},
		{name: "none fits anything", interval: "none", width: day},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a recurrence and a source's bucket width
			r := rec(t, tt.interval, tt.anchor, tt.zone)
			var bz *time.Location
			if tt.bucketZone != "" {
				bz = zone(t, tt.bucketZone)
			}

			// When the configuration is checked at start
			err := period.FitsBuckets(r, tt.width, bz)

			// Then it fits, or is refused naming the fields and the first straddled boundary
			if tt.wantBoundary == "" {
				if err != nil {
					t.Fatalf("FitsBuckets = %v, want nil", err)
				}
				return
			}
			var se *period.StraddleError
			if !errors.As(err, &se) || !errors.Is(err, period.ErrStraddle) {
				t.Fatalf("FitsBuckets = %v, want a *StraddleError", err)
			}
			if got := se.Boundary.Format(time.RFC3339); got != tt.wantBoundary {
				t.Errorf("boundary = %s, want %s", got, tt.wantBoundary)
			}
			if !slices.Equal(se.Fields(), []string{"period", "anchor", "time_zone", "width"}) {
				t.Errorf("fields = %v", se.Fields())
			}
			for _, part := range []string{"time_zone", "width", tt.zone, tt.wantBoundary} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not name %q", err, part)
				}
			}
			// And a bucket at that boundary's UTC grid does straddle it
			bucket := se.Boundary.Truncate(tt.width)
			if tt.bucketZone != "" {
				return // Truncate aligns in UTC only
			}
			if straddles, err := r.Straddles(bucket, tt.width); err != nil || !straddles {
				t.Errorf("Straddles(%s, %s) = %v, %v; want true", bucket.UTC(), tt.width, straddles, err)
			}
		})
	}
}

func TestFitsBucketsRefusesWidthsThatDoNotDivideADay(t *testing.T) {
	r := rec(t, "month", "2026-01-31T00:00:00", "UTC")
	for _, w := range []time.Duration{0, -time.Hour, 7 * time.Hour, 1500 * time.Millisecond, 48 * time.Hour} {
		if err := period.FitsBuckets(r, w, nil); !period.IsBadConfig(err) {
			t.Errorf("FitsBuckets(%s) = %v, want a bad config error", w, err)
		}
	}
}

func TestStraddles(t *testing.T) {
	// Given a Los Angeles month, whose boundary 2026-02-28T00:00:00-08:00 is 08:00 UTC
	r := rec(t, "month", "2026-01-31T00:00:00", "America/Los_Angeles")
	tests := []struct {
		name  string
		start string
		width time.Duration
		want  bool
	}{
		{name: "the utc day holding the boundary", start: "2026-02-28T00:00:00Z", width: 24 * time.Hour, want: true},
		{name: "the utc day before", start: "2026-02-27T00:00:00Z", width: 24 * time.Hour},
		{name: "the hour ending at the boundary", start: "2026-02-28T07:00:00Z", width: time.Hour},
		{name: "the hour starting at the boundary", start: "2026-02-28T08:00:00Z", width: time.Hour},
		{name: "a bucket across it by a second", start: "2026-02-28T07:59:59Z", width: 2 * time.Second, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Straddles(instant(t, tt.start), tt.width)
			if err != nil || got != tt.want {
				t.Fatalf("Straddles = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestFitsBucketsAgreesWithEveryBoundary checks FitsBuckets, which reads
// a few boundaries per stretch of constant offsets, against reading
// every boundary of its horizon.
func TestFitsBucketsAgreesWithEveryBoundary(t *testing.T) {
	rng := rand.New(rand.NewPCG(propertySeed, 1))
	widths := []time.Duration{time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 24 * time.Hour}
	configs := 30
	if testing.Short() {
		configs = 8
	}
	for c := range configs {
		loc := zone(t, propertyZones[rng.IntN(len(propertyZones))])
		bz := time.UTC
		if rng.IntN(4) == 0 {
			bz = loc // buckets on the zone's own wall clock
		}
		wall := randomWall(rng)
		if rng.IntN(2) == 0 {
			wall = wall.Truncate(24 * time.Hour) // midnight anchors fit more often
		}
		anchor, err := period.ParseAnchor(wall.Format("2006-01-02T15:04:05"), loc)
		if err != nil {
			continue
		}
		r, err := period.New(period.Interval(1+rng.IntN(4)), anchor, loc)
		if err != nil {
			t.Fatal(err)
		}
		width := widths[rng.IntN(len(widths))]

		var want time.Time // the first boundary that is not a bucket start
		from := r.Anchor.AddDate(-1, 0, 0)
		p, err := r.PeriodAt(from)
		if err != nil {
			t.Fatal(err)
		}
		boundary := p.Start
		if !boundary.Equal(from) {
			boundary = p.End
		}
		for until := r.Anchor.Add(period.Horizon); boundary.Before(until); boundary = p.End {
			_, off := boundary.In(bz).Zone()
			if (boundary.Unix()+int64(off))%int64(width/time.Second) != 0 {
				want = boundary
				break
			}
			if p, err = r.PeriodAt(boundary); err != nil {
				t.Fatal(err)
			}
		}
		err = period.FitsBuckets(r, width, bz)
		var se *period.StraddleError
		switch {
		case want.IsZero() && err != nil:
			t.Errorf("config %d: %s, %s buckets in %s: FitsBuckets = %v, but every boundary is a bucket start", c, r, width, bz, err)
		case !want.IsZero() && (!errors.As(err, &se) || !se.Boundary.Equal(want)):
			t.Errorf("config %d: %s, %s buckets in %s: FitsBuckets = %v, want the boundary %s", c, r, width, bz, err, want.Format(time.RFC3339))
		}
	}
}
