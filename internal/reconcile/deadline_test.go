package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/spend"
)

// lastReconciled is when the reconciler last wrote w's reconciliation record.
func (f *fixture) lastReconciled(t testing.TB, id string) time.Time {
	t.Helper()
	runs, err := f.spend.Recon.ReconRuns(context.Background(), id, 1)
	if err != nil || len(runs) != 1 {
		t.Fatalf("recon runs of %s = %v, %v", id, runs, err)
	}
	return runs[0].StartedAt
}

func TestPageDeadlineIsTheReconcilersNextLook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, options{})
	// Given a reconciler that ran at t0 and runs every 5 minutes
	f.run(t)

	// When a workload is created at t0+1m and trips its cap at t0+2m
	f.clock.Advance(time.Minute)
	f.workload(t, "w-new", 100)
	w, err := f.spend.Workloads.Get(ctx, "w-new")
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	res := f.webhook(t, "new-1", "w-new", 150, f.clock.Now())

	// Then both the workload's deadline and the page's are the next run,
	// t0+5m, and that run is the one that reconciles it
	want := t0.Add(5 * time.Minute)
	if !w.NextReconAt.Equal(want) {
		t.Errorf("deadline at creation = %s, want %s", w.NextReconAt, want)
	}
	if len(res.Decisions) != 1 || !res.Decisions[0].NextReconAt.Equal(want) {
		t.Fatalf("page deadline = %+v, want %s", res.Decisions, want)
	}
	f.clock.Advance(3 * time.Minute)
	f.run(t)
	if got := f.lastReconciled(t, "w-new"); !got.Equal(want) {
		t.Errorf("reconciled at %s, the page said %s", got, want)
	}
}

func TestPageDeadlineMovesWithTheTier(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{})
	f.workload(t, "w-tier", 1000)
	f.webhook(t, "tier-1", "w-tier", 100, t0)
	// Given an active workload reconciled at t0 (next due t0+15m)
	f.run(t)

	// When usage pushes it over its cap at t0+7m
	f.clock.Advance(7 * time.Minute)
	res := f.webhook(t, "tier-2", "w-tier", 950, f.clock.Now())

	// Then the page's deadline is the next run (t0+10m), where near-cap
	// workloads are reconciled, not the active tier's t0+15m
	want := t0.Add(10 * time.Minute)
	if len(res.Decisions) != 1 || !res.Decisions[0].NextReconAt.Equal(want) {
		t.Fatalf("page deadline = %+v, want %s", res.Decisions, want)
	}
	f.clock.Advance(3 * time.Minute)
	f.run(t)
	if got := f.lastReconciled(t, "w-tier"); !got.Equal(want) {
		t.Errorf("reconciled at %s, the page said %s", got, want)
	}
	w, err := f.spend.Workloads.Get(context.Background(), "w-tier")
	if err != nil || w.Status != spend.StatusPaused {
		t.Fatalf("workload = %+v, %v", w, err)
	}
}
