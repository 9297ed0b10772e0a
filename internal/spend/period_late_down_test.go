package spend

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/period"
)

func TestADownwardRevisionAfterTheClosePagesOncePerPeriod(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := localaws.StartForTest(t)
	f := newSumsFixture(t, env, env.DynamoDB)
	utcMonth, err := ParsePeriods(period.Config{Period: "month", Anchor: "2026-01-01T00:00:00", TimeZone: "UTC"}, "1h", "")
	if err != nil {
		t.Fatal(err)
	}
	nov := period.Period{Start: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	hour := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	f.now = hour.Add(90 * time.Minute)
	f.periodWorkload(t, "wl-down", 1_000_000, 0, utcMonth)
	stripe := testSources(t)["stripe-test"]
	key := KeyOf(stripe, stripe.Meters["api"], "wl-down", hour)
	observe := func(value int64, run string) {
		t.Helper()
		if _, err := f.s.Buckets.Observe(ctx, Observation{Key: key, Value: value, RunID: run}); err != nil {
			t.Fatal(err)
		}
	}
	// Given a Stripe hour bucket of November at 700, and December begun
	observe(700, "run-1")
	f.now = nov.End.Add(10 * time.Minute)
	f.apply(t, usageAt("rec-dec", "wl-down", 1, f.now))

	// When the provider revises November's bucket down before the close
	// (its end and an hour's grace), then after it twice more
	observe(650, "run-2")
	f.now = nov.End.Add(2 * time.Hour)
	observe(500, "run-3")
	observe(400, "run-4")

	// Then one late-revision page goes for November, with the first
	// revision after the close and its amount (700 at its highest, 500)
	pages := f.pages(t, "spend-late-down:")
	if len(pages) != 1 {
		t.Fatalf("%d late-revision pages, want 1", len(pages))
	}
	rev := pollDeltaID(key, 3)
	want := LateLine("late revision down", "wl-down", nov, 200, rev, nov.End.Add(time.Hour))
	if got := pages[0].Event.Payload.Summary; got != want {
		t.Fatalf("page line\n got %s\nwant %s", got, want)
	}
	// and explain shows it on November; a meter that does not follow
	// downward revisions keeps November's total, and December's is its own
	_, prev, err := f.s.Explainer.Periods(ctx, "wl-down")
	if err != nil {
		t.Fatal(err)
	}
	if prev == nil || !prev.Period.Equal(nov) || prev.Total != 700 || prev.LateDownPagedAt.IsZero() {
		t.Fatalf("November = %+v, want 700 with a late revision paged", prev)
	}
	if got := f.total(t, "wl-down"); got != 1 {
		t.Fatalf("December = %d, want 1", got)
	}
}
