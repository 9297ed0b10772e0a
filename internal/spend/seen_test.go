package spend

import (
	"context"
	"testing"
	"time"
)

// TestAgeCountsFromTheFirstSighting: a record's deferral deadline and its
// confirmation marker count from when hookline first saw it (the intake's
// received_at), not from when a worker got to it, nor from when the usage
// happened; and a record no export holds waits for no confirmation.
func TestAgeCountsFromTheFirstSighting(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.workload(t, "w-seen", 1000, 0)
	seen := f.now.Add(-40 * time.Minute) // redriven from the DLQ 40 min later

	// Given a deferred record, seen 40 minutes ago
	u := usage("rec-seen-defer", "acct-nobody", 5)
	u.SeenAt = seen
	if d := f.apply(t, u).Deferred; d == nil || !d.Deadline.Equal(seen.Add(maxAge)) {
		t.Fatalf("deferred = %+v, want the deadline %s", d, seen.Add(maxAge))
	}

	// Given an applied record that happened 20 days before it was seen
	u = usage("rec-seen-old", "w-seen", 5)
	u.OccurredAt, u.SeenAt = seen.Add(-20*24*time.Hour), seen
	f.apply(t, u)
	markers, err := f.s.Recon.UnconfirmedBefore(context.Background(), f.now)
	if err != nil || len(markers) != 1 || !markers[0].Due.Equal(seen) {
		t.Fatalf("markers = %+v, %v; want one due at its sighting", markers, err)
	}

	// Given an applied record of a source no export holds
	u = usage("rec-seen-ce", "w-seen", 5)
	u.Unreconciled, u.Source, u.Meter, u.Unit = true, "meters", "tokens", "units"
	f.apply(t, u)
	if markers, _ := f.s.Recon.UnconfirmedBefore(context.Background(), f.now.Add(time.Hour)); len(markers) != 1 {
		t.Fatalf("markers = %+v, want still one", markers)
	}
	e, err := f.s.Ledger.Entry(context.Background(), "rec-seen-ce")
	if err != nil || e.Source != "meters" || e.Meter != "tokens" || e.Unit != "units" || f.total(t, "w-seen") != 10 {
		t.Fatalf("entry %+v, %v", e, err)
	}
}
