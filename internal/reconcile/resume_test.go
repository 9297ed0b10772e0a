package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/spend"
)

func TestResumeOverTheCapIsPausedAgainByTheNextRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Given a workload paused at 1,290 of 1,000 by a record that is long
	// out of the poll window
	f := newFixture(t, options{})
	f.workload(t, "w-over", 1000)
	f.webhook(t, "over-1", "w-over", 1290, t0.Add(-time.Minute))
	f.run(t)
	f.clock.Advance(15 * time.Minute)
	f.run(t)

	// When the operator resumes it on purpose without raising the cap
	w, err := f.spend.Caps.ForceResume(ctx, "w-over", "oncall@example", "drain the queue")
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := f.spend.Caps.Admission(ctx, "w-over"); !a.Allowed {
		t.Fatalf("admission right after a forced resume = %+v", a)
	}

	// Then the next run, with no record of it in the window, pauses it
	// again and pages under the new cap epoch
	f.clock.Advance(5 * time.Minute)
	run := f.run(t)
	a, err := f.spend.Caps.Admission(ctx, "w-over")
	if err != nil || a.Allowed || a.Status != string(spend.StatusPaused) {
		t.Fatalf("admission after the next run = %+v, %v", a, err)
	}
	if _, err := f.outbox.Get(ctx, spend.DedupKey("w-over", spend.ActionPause, w.CapEpoch, 0)); err != nil {
		t.Fatalf("no pause page in epoch %d: %v (decisions %v)", w.CapEpoch, err, run.Decisions)
	}
}
