package spend

import (
	"context"
	"testing"
	"time"
)

func TestRunScheduleTicks(t *testing.T) {
	next := time.Date(2026, 12, 1, 19, 10, 0, 0, time.UTC)
	rs := RunSchedule{NextRun: next, Every: 5 * time.Minute}
	tests := []struct {
		name string
		at   time.Time
		want time.Time
	}{
		{name: "before the next run", at: next.Add(-2 * time.Minute), want: next},
		{name: "runs earlier than the next", at: next.Add(-7 * time.Minute), want: next.Add(-5 * time.Minute)},
		{name: "on a run", at: next.Add(10 * time.Minute), want: next.Add(10 * time.Minute)},
		{name: "between runs after it", at: next.Add(11 * time.Minute), want: next.Add(15 * time.Minute)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := rs.tickAtOrAfter(tc.at); !got.Equal(tc.want) {
				t.Errorf("tickAtOrAfter(%s) = %s, want %s", tc.at, got, tc.want)
			}
		})
	}
	if got := (RunSchedule{NextRun: next}).tickAtOrAfter(next.Add(time.Hour)); !got.Equal(next) {
		t.Errorf("without a rate = %s, want the next run", got)
	}
}

func TestNextReconciliationFollowsThePublishedSchedule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	// given no schedule published yet, a new workload's deadline is one
	// poll interval away
	f.workload(t, "w-sched-0", 1000, 0)
	if w, _ := f.s.Workloads.Get(ctx, "w-sched-0"); !w.NextReconAt.Equal(f.now.Add(15 * time.Minute)) {
		t.Errorf("deadline without a schedule = %s", w.NextReconAt)
	}
	// given a reconciler that runs every 5 minutes, next in 2
	if err := f.s.Recon.PublishSchedule(ctx, RunSchedule{NextRun: f.now.Add(2 * time.Minute), Every: 5 * time.Minute, NearCapRatio: 0.8}); err != nil {
		t.Fatal(err)
	}
	// when a workload is created, its first look is that run
	f.workload(t, "w-sched", 1000, 0)
	if w, _ := f.s.Workloads.Get(ctx, "w-sched"); !w.NextReconAt.Equal(f.now.Add(2 * time.Minute)) {
		t.Errorf("deadline at creation = %s, want the next run", w.NextReconAt)
	}
	// when its last reconciliation set a deadline between runs, the real
	// look is the first run at or after it
	if err := f.s.Recon.PutReconRun(ctx, ReconRun{WorkloadID: "w-sched", StartedAt: f.now, NextReconAt: f.now.Add(14 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	x, err := f.s.Explainer.Explain(ctx, "w-sched")
	if err != nil || !x.NextReconAt.Equal(f.now.Add(17*time.Minute)) {
		t.Errorf("explained deadline = %s, %v; want the run at +17m", x.NextReconAt, err)
	}
	// and once it is near its cap, the next run
	f.apply(t, usage("rec-sched", "w-sched", 850))
	x, err = f.s.Explainer.Explain(ctx, "w-sched")
	if err != nil || !x.NextReconAt.Equal(f.now.Add(2*time.Minute)) {
		t.Errorf("deadline near the cap = %s, %v; want the next run", x.NextReconAt, err)
	}
}
