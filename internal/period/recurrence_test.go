package period_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/period"
)

func zone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := period.ParseZone(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func instant(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// rec builds a recurrence from its flags' form.
func rec(t testing.TB, interval, anchor, zoneName string) period.Recurrence {
	t.Helper()
	r, err := period.Config{Period: interval, Anchor: anchor, TimeZone: zoneName}.Recurrence()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPeriodAt(t *testing.T) {
	const la, utc = "America/Los_Angeles", "UTC"
	tests := []struct {
		name                   string
		interval, anchor, zone string
		at                     string
		wantStart, wantEnd     string
		wantHours              float64 // the period's length, when it says something
	}{
		// Month: the anchor's day, or the last day of a shorter month.
		{name: "jan 31 anchor: february ends on the 28th", interval: "month", anchor: "2026-01-31T00:00:00", zone: utc,
			at: "2026-02-15T00:00:00Z", wantStart: "2026-01-31T00:00:00Z", wantEnd: "2026-02-28T00:00:00Z"},
		{name: "jan 31 anchor: back to the 31st in march", interval: "month", anchor: "2026-01-31T00:00:00", zone: utc,
			at: "2026-03-01T00:00:00Z", wantStart: "2026-02-28T00:00:00Z", wantEnd: "2026-03-31T00:00:00Z"},
		{name: "jan 31 anchor: april 30", interval: "month", anchor: "2026-01-31T00:00:00", zone: utc,
			at: "2026-04-15T00:00:00Z", wantStart: "2026-03-31T00:00:00Z", wantEnd: "2026-04-30T00:00:00Z"},
		{name: "start is inclusive", interval: "month", anchor: "2026-01-31T00:00:00", zone: utc,
			at: "2026-04-30T00:00:00Z", wantStart: "2026-04-30T00:00:00Z", wantEnd: "2026-05-31T00:00:00Z"},
		{name: "end is exclusive", interval: "month", anchor: "2026-01-31T00:00:00", zone: utc,
			at: "2026-04-29T23:59:59Z", wantStart: "2026-03-31T00:00:00Z", wantEnd: "2026-04-30T00:00:00Z"},
		{name: "jan 31 anchor: feb 29 in a leap year", interval: "month", anchor: "2026-01-31T00:00:00", zone: utc,
			at: "2028-03-01T00:00:00Z", wantStart: "2028-02-29T00:00:00Z", wantEnd: "2028-03-31T00:00:00Z"},
		{name: "30th anchor", interval: "month", anchor: "2026-01-30T00:00:00", zone: utc,
			at: "2026-03-05T00:00:00Z", wantStart: "2026-02-28T00:00:00Z", wantEnd: "2026-03-30T00:00:00Z"},
		{name: "29th anchor in a common year", interval: "month", anchor: "2027-01-29T00:00:00", zone: utc,
			at: "2027-03-01T00:00:00Z", wantStart: "2027-02-28T00:00:00Z", wantEnd: "2027-03-29T00:00:00Z"},
		{name: "instant before a future anchor", interval: "month", anchor: "2030-05-31T00:00:00", zone: utc,
			at: "2026-06-15T00:00:00Z", wantStart: "2026-05-31T00:00:00Z", wantEnd: "2026-06-30T00:00:00Z"},
		{name: "time of day is part of the anchor", interval: "month", anchor: "2026-01-15T17:30:05", zone: utc,
			at: "2026-02-15T17:30:04Z", wantStart: "2026-01-15T17:30:05Z", wantEnd: "2026-02-15T17:30:05Z"},
		{name: "los angeles month across spring forward", interval: "month", anchor: "2026-01-31T00:00:00", zone: la,
			at: "2026-03-15T12:00:00-07:00", wantStart: "2026-02-28T00:00:00-08:00", wantEnd: "2026-03-31T00:00:00-07:00"},
		{name: "los angeles month across fall back", interval: "month", anchor: "2026-01-31T00:00:00", zone: la,
			at: "2026-11-15T12:00:00-08:00", wantStart: "2026-10-31T00:00:00-07:00", wantEnd: "2026-11-30T00:00:00-08:00"},
		{name: "london month in summer", interval: "month", anchor: "2026-01-31T00:00:00", zone: "Europe/London",
			at: "2026-04-10T00:00:00Z", wantStart: "2026-03-31T00:00:00+01:00", wantEnd: "2026-04-30T00:00:00+01:00"},
		{name: "kathmandu +05:45 month", interval: "month", anchor: "2026-01-31T00:00:00", zone: "Asia/Kathmandu",
			at: "2026-02-10T00:00:00Z", wantStart: "2026-01-31T00:00:00+05:45", wantEnd: "2026-02-28T00:00:00+05:45"},

		// Year: Feb 29 falls on Feb 28 in a common year.
		{name: "feb 29 anchor in a common year", interval: "year", anchor: "2028-02-29T00:00:00", zone: utc,
			at: "2029-06-01T00:00:00Z", wantStart: "2029-02-28T00:00:00Z", wantEnd: "2030-02-28T00:00:00Z"},
		{name: "feb 29 anchor back in a leap year", interval: "year", anchor: "2028-02-29T00:00:00", zone: utc,
			at: "2031-12-31T00:00:00Z", wantStart: "2031-02-28T00:00:00Z", wantEnd: "2032-02-29T00:00:00Z"},
		{name: "feb 29 anchor before the anchor", interval: "year", anchor: "2028-02-29T00:00:00", zone: utc,
			at: "2028-01-01T00:00:00Z", wantStart: "2027-02-28T00:00:00Z", wantEnd: "2028-02-29T00:00:00Z"},

		// Week: the anchor's weekday and time of day.
		{name: "week on wednesdays at 09:00 across spring forward", interval: "week", anchor: "2026-01-07T09:00:00", zone: la,
			at: "2026-03-10T00:00:00-07:00", wantStart: "2026-03-04T09:00:00-08:00", wantEnd: "2026-03-11T09:00:00-07:00", wantHours: 167},

		// Day: 23 or 25 hours across daylight saving.
		{name: "los angeles spring forward day is 23h", interval: "day", anchor: "2026-01-01T00:00:00", zone: la,
			at: "2026-03-08T12:00:00-07:00", wantStart: "2026-03-08T00:00:00-08:00", wantEnd: "2026-03-09T00:00:00-07:00", wantHours: 23},
		{name: "los angeles fall back day is 25h", interval: "day", anchor: "2026-01-01T00:00:00", zone: la,
			at: "2026-11-01T12:00:00-08:00", wantStart: "2026-11-01T00:00:00-07:00", wantEnd: "2026-11-02T00:00:00-08:00", wantHours: 25},
		{name: "lord howe spring forward day is 23.5h", interval: "day", anchor: "2026-01-01T00:00:00", zone: "Australia/Lord_Howe",
			at: "2026-10-04T12:00:00+11:00", wantStart: "2026-10-04T00:00:00+10:30", wantEnd: "2026-10-05T00:00:00+11:00", wantHours: 23.5},
		{name: "lord howe fall back day is 24.5h", interval: "day", anchor: "2026-01-01T00:00:00", zone: "Australia/Lord_Howe",
			at: "2026-04-05T12:00:00+10:30", wantStart: "2026-04-05T00:00:00+11:00", wantEnd: "2026-04-06T00:00:00+10:30", wantHours: 24.5},

		// A boundary at a wall time the zone skips moves forward by the gap.
		{name: "02:30 in the los angeles gap becomes 03:30 PDT", interval: "day", anchor: "2026-01-01T02:30:00", zone: la,
			at: "2026-03-08T12:00:00-07:00", wantStart: "2026-03-08T03:30:00-07:00", wantEnd: "2026-03-09T02:30:00-07:00", wantHours: 23},
		{name: "the day before the los angeles gap ends at 03:30 PDT", interval: "day", anchor: "2026-01-01T02:30:00", zone: la,
			at: "2026-03-08T01:00:00-08:00", wantStart: "2026-03-07T02:30:00-08:00", wantEnd: "2026-03-08T03:30:00-07:00", wantHours: 24},
		{name: "01:30 in the london gap becomes 02:30 BST", interval: "day", anchor: "2026-01-01T01:30:00", zone: "Europe/London",
			at: "2026-03-29T12:00:00+01:00", wantStart: "2026-03-29T02:30:00+01:00", wantEnd: "2026-03-30T01:30:00+01:00"},
		{name: "02:15 in the lord howe gap becomes 02:45", interval: "day", anchor: "2026-01-01T02:15:00", zone: "Australia/Lord_Howe",
			at: "2026-10-04T12:00:00+11:00", wantStart: "2026-10-04T02:45:00+11:00", wantEnd: "2026-10-05T02:15:00+11:00"},

		// A boundary at a wall time the zone shows twice is its first instant.
		{name: "01:30 twice in los angeles is PDT", interval: "day", anchor: "2026-01-01T01:30:00", zone: la,
			at: "2026-11-01T01:45:00-08:00", wantStart: "2026-11-01T01:30:00-07:00", wantEnd: "2026-11-02T01:30:00-08:00", wantHours: 25},
		{name: "01:30 twice in london is BST", interval: "day", anchor: "2026-01-01T01:30:00", zone: "Europe/London",
			at: "2026-10-25T12:00:00Z", wantStart: "2026-10-25T01:30:00+01:00", wantEnd: "2026-10-26T01:30:00Z", wantHours: 25},
		{name: "01:45 twice in lord howe is +11", interval: "day", anchor: "2026-01-01T01:45:00", zone: "Australia/Lord_Howe",
			at: "2026-04-05T12:00:00+10:30", wantStart: "2026-04-05T01:45:00+11:00", wantEnd: "2026-04-06T01:45:00+10:30", wantHours: 24.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a recurrence from its flags
			r := rec(t, tt.interval, tt.anchor, tt.zone)
			at := instant(t, tt.at)

			// When the period at the instant is asked for
			p, err := r.PeriodAt(at)
			if err != nil {
				t.Fatal(err)
			}

			// Then it is the expected one, in the recurrence's zone, and holds the instant
			want := period.Period{Start: instant(t, tt.wantStart), End: instant(t, tt.wantEnd)}
			if !p.Equal(want) {
				t.Fatalf("PeriodAt(%s) = %s, want %s", tt.at, p, want)
			}
			if got := p.String(); got != tt.wantStart+"/"+tt.wantEnd {
				t.Errorf("String() = %s, want %s/%s", got, tt.wantStart, tt.wantEnd)
			}
			if !p.Contains(at) {
				t.Errorf("%s does not contain %s", p, tt.at)
			}
			if tt.wantHours != 0 {
				if h := p.End.Sub(p.Start).Hours(); h != tt.wantHours {
					t.Errorf("period is %vh, want %vh", h, tt.wantHours)
				}
			}
		})
	}
}

func TestMonthAnchoredOnThe31stWalksLikeStripe(t *testing.T) {
	// Given a month anchored on Jan 31 in Los Angeles
	r := rec(t, "month", "2026-01-31T00:00:00", "America/Los_Angeles")
	p, err := r.PeriodAt(r.Anchor)
	if err != nil {
		t.Fatal(err)
	}
	// When it is walked forward for 26 periods
	want := []string{
		"2026-01-31", "2026-02-28", "2026-03-31", "2026-04-30", "2026-05-31", "2026-06-30",
		"2026-07-31", "2026-08-31", "2026-09-30", "2026-10-31", "2026-11-30", "2026-12-31",
		"2027-01-31", "2027-02-28", "2027-03-31", "2027-04-30", "2027-05-31", "2027-06-30",
		"2027-07-31", "2027-08-31", "2027-09-30", "2027-10-31", "2027-11-30", "2027-12-31",
		"2028-01-31", "2028-02-29", "2028-03-31",
	}
	// Then the starts are the 31st or the month's last day, at local midnight, and back again
	for i, w := range want {
		if got := p.Start.Format("2006-01-02T15:04:05"); got != w+"T00:00:00" {
			t.Fatalf("period %d starts %s, want %s", i, got, w)
		}
		back, err := r.Prev(mustNext(t, r, p))
		if err != nil || !back.Equal(p) {
			t.Fatalf("Prev(Next(%s)) = %s, %v", p, back, err)
		}
		p = mustNext(t, r, p)
	}
}

func mustNext(t testing.TB, r period.Recurrence, p period.Period) period.Period {
	t.Helper()
	n, err := r.Next(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNoneIsOneLifetimePeriod(t *testing.T) {
	// Given a workload stored before periods existed (no fields)
	r, err := period.Config{}.Recurrence()
	if err != nil {
		t.Fatal(err)
	}
	// Then every instant is in the lifetime period, which never ends or closes
	for _, at := range []string{"0001-01-01T00:00:00Z", "2026-02-28T08:00:00Z", "9998-12-31T23:59:59Z"} {
		p, err := r.PeriodAt(instant(t, at))
		if err != nil || !p.Equal(period.Lifetime) || !p.Contains(instant(t, at)) {
			t.Fatalf("PeriodAt(%s) = %s, %v; want the lifetime period", at, p, err)
		}
	}
	if _, err := r.Next(period.Lifetime); !errors.Is(err, period.ErrUnbounded) {
		t.Errorf("Next(lifetime) = %v, want ErrUnbounded", err)
	}
	if _, err := r.Prev(period.Lifetime); !errors.Is(err, period.ErrUnbounded) {
		t.Errorf("Prev(lifetime) = %v, want ErrUnbounded", err)
	}
	if got := period.Close(period.Lifetime, time.Hour); !got.IsZero() {
		t.Errorf("Close(lifetime) = %s, want never (zero)", got)
	}
	if got, want := period.Lifetime.ID(), "0001-01-01T00:00:00Z/.."; got != want {
		t.Errorf("ID = %s, want %s", got, want)
	}
}

func TestPeriodAtRefusesWhatItCannotAnswer(t *testing.T) {
	tests := []struct {
		name string
		r    period.Recurrence
		at   time.Time
		want error
	}{
		{name: "no zone", r: period.Recurrence{Interval: period.Month, Anchor: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
			at: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), want: period.ErrBadConfig},
		{name: "no anchor", r: period.Recurrence{Interval: period.Day, Zone: time.UTC},
			at: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), want: period.ErrBadConfig},
		{name: "unknown interval", r: period.Recurrence{Interval: 9, Zone: time.UTC, Anchor: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
			at: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), want: period.ErrBadConfig},
		{name: "year 10000", r: period.Recurrence{Interval: period.Day, Zone: time.UTC, Anchor: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
			at: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), want: period.ErrOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.r.PeriodAt(tt.at); !errors.Is(err, tt.want) {
				t.Fatalf("PeriodAt = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestFarInstantsSettleWithinTheStepBound(t *testing.T) {
	// Given day periods anchored in year 1 (Jan 2) and an instant in year 9998
	r := rec(t, "day", "0001-01-02T00:00:00", "UTC")
	at := time.Date(9998, 6, 1, 12, 0, 0, 0, time.UTC)
	// Then the period is found directly, not by walking 3.6 million days
	p, err := r.PeriodAt(at)
	if err != nil {
		t.Fatal(err)
	}
	if want := "9998-06-01T00:00:00Z/9998-06-02T00:00:00Z"; p.ID() != want {
		t.Fatalf("ID = %s, want %s", p.ID(), want)
	}
}

func TestIDIsExactSortableAndReadBack(t *testing.T) {
	r := rec(t, "month", "2026-01-31T00:00:00", "America/Los_Angeles")
	p, err := r.PeriodAt(instant(t, "2026-03-01T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.ID(), "2026-02-28T08:00:00Z/2026-03-31T07:00:00Z"; got != want {
		t.Fatalf("ID = %s, want %s", got, want)
	}
	back, err := period.ParseID(p.ID())
	if err != nil || !back.Equal(p) {
		t.Fatalf("ParseID(%s) = %s, %v", p.ID(), back, err)
	}
	if back.In(r.Zone).String() != p.String() {
		t.Errorf("In(zone) = %s, want %s", back.In(r.Zone), p)
	}
	prev := p
	for range 30 {
		next := mustNext(t, r, prev)
		if next.ID() <= prev.ID() {
			t.Fatalf("IDs out of order: %s then %s", prev.ID(), next.ID())
		}
		prev = next
	}
	for _, bad := range []string{"", "2026-02-28T08:00:00Z", "2026-02-28T08:00:00Z/..", "2026-03-31T07:00:00Z/2026-02-28T08:00:00Z", "2026-02-28/2026-03-31"} {
		if _, err := period.ParseID(bad); !period.IsBadConfig(err) {
			t.Errorf("ParseID(%q) = %v, want a bad config error", bad, err)
		}
	}
}

func TestCloseIsEndPlusGrace(t *testing.T) {
	p := period.Period{Start: instant(t, "2026-11-30T08:00:00Z"), End: instant(t, "2026-12-31T08:00:00Z")}
	if got, want := period.Close(p, time.Hour), instant(t, "2026-12-31T09:00:00Z"); !got.Equal(want) {
		t.Errorf("Close(1h) = %s, want %s", got, want)
	}
	if got := period.Close(p, -time.Hour); !got.Equal(p.End) {
		t.Errorf("Close(-1h) = %s, want the end %s", got, p.End)
	}
}
