package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
)

func TestClassify(t *testing.T) {
	r, err := reconcile.New(reconcile.Config{Spend: nopSpend(), Export: nopExport{}, DB: nopDB{}, Table: "t",
		Pages: nopPages{}, ReconRoutingKey: "rk"})
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	tests := []struct {
		name     string
		w        spend.Workload
		tier     reconcile.Tier
		interval time.Duration
		reason   string
	}{
		{"paused is near its cap", spend.Workload{Status: spend.StatusPaused, Total: 1012, Cap: 1000},
			reconcile.TierNearCap, 5 * time.Minute, "paused at total 1012, cap 1000"},
		{"at the ratio is near its cap", spend.Workload{Status: spend.StatusActive, Total: 800, Cap: 1000},
			reconcile.TierNearCap, 5 * time.Minute, "total 800 >= 0.80 x cap 1000"},
		{"below the ratio with recent usage is active", spend.Workload{Status: spend.StatusActive, Total: 799, Cap: 1000,
			LastAccepted: spend.LastEvent{AcceptedAt: now.Add(-time.Hour)}}, reconcile.TierActive, 15 * time.Minute, "within 6h"},
		{"new without usage is active", spend.Workload{Status: spend.StatusActive, Cap: 1000, CreatedAt: now.Add(-time.Hour)},
			reconcile.TierActive, 15 * time.Minute, "no usage yet"},
		{"old without usage is quiet", spend.Workload{Status: spend.StatusActive, Cap: 1000, CreatedAt: now.Add(-48 * time.Hour)},
			reconcile.TierQuiet, time.Hour, "no usage since creation"},
		{"usage long ago is quiet", spend.Workload{Status: spend.StatusActive, Total: 10, Cap: 1000,
			LastAccepted: spend.LastEvent{AcceptedAt: now.Add(-7 * time.Hour)}}, reconcile.TierQuiet, time.Hour, "no usage since 2026-11-29T20:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given a workload, when it is classified
			tier, interval, reason := r.Classify(tc.w, now)

			// Then its tier, interval and reason follow its risk
			if tier != tc.tier || interval != tc.interval || !strings.Contains(reason, tc.reason) {
				t.Fatalf("Classify = %s, %s, %q; want %s, %s, ~%q", tier, interval, reason, tc.tier, tc.interval, tc.reason)
			}
		})
	}
}

func TestRiskPartitionedSchedule(t *testing.T) {
	t.Parallel()
	// Given a workload near its cap, an active one and a quiet one
	f := newFixture(t, options{})
	ctx := context.Background()
	f.workload(t, "hot", 100)
	f.workload(t, "busy", 100_000)
	f.workload(t, "idle", 100)
	f.webhook(t, "hot-0", "hot", 85, t0.Add(-time.Hour))
	f.clock.Advance(-7 * time.Hour)
	f.webhook(t, "idle-0", "idle", 1, t0.Add(-8*time.Hour))
	f.clock.Advance(7 * time.Hour)
	f.usage(t, "busy-0", "busy", 5, t0.Add(-10*time.Minute), published)
	f.usage(t, "busy-0b", "busy", 1, t0.Add(time.Minute), published)

	// When runs fire at the base rate for 20 minutes
	var runs []reconcile.Run
	for range 5 {
		runs = append(runs, f.run(t))
		f.clock.Advance(5 * time.Minute)
	}

	// Then the near-cap workload gets a reconciliation record every run, the
	// active one every 15 minutes, and the quiet one once
	for _, tc := range []struct {
		id      string
		records int
		tier    reconcile.Tier
	}{{"hot", 5, reconcile.TierNearCap}, {"busy", 2, reconcile.TierActive}, {"idle", 1, reconcile.TierQuiet}} {
		rr, err := f.spend.Recon.ReconRuns(ctx, tc.id, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(rr) != tc.records {
			t.Errorf("%s: %d reconciliation records, want %d", tc.id, len(rr), tc.records)
		}
		sc, found, err := f.rec.Store().Schedule(ctx, tc.id)
		if err != nil || !found || sc.Tier != tc.tier {
			t.Errorf("%s: schedule = %+v, %v, %v", tc.id, sc, found, err)
		}
		w, _ := f.spend.Workloads.Get(ctx, tc.id)
		if len(rr) > 0 && !w.NextReconAt.Equal(rr[0].NextReconAt) {
			t.Errorf("%s: next reconciliation %s, record says %s", tc.id, w.NextReconAt, rr[0].NextReconAt)
		}
	}
	// And the active workload's second record carries the record folded
	// in a run it was not due in
	busy, _ := f.spend.Recon.ReconRuns(ctx, "busy", 10)
	if len(busy) != 2 || busy[0].Missed != 1 || busy[1].Missed != 1 || busy[0].Tier != string(reconcile.TierActive) {
		t.Errorf("busy records = %+v", busy)
	}

	// When the active workload's total reaches 80% of its cap
	f.usage(t, "busy-1", "busy", 80_000, f.clock.Now().Add(-5*time.Minute), published)
	f.run(t)

	// Then its interval change is recorded with the reason and time
	changes, err := f.rec.Store().IntervalChanges(ctx, "busy", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 2 {
		t.Fatalf("changes = %+v", changes)
	}
	c := changes[0]
	if c.From != reconcile.TierActive || c.To != reconcile.TierNearCap || c.ToInterval != 5*time.Minute ||
		c.FromInterval != 15*time.Minute || !c.At.Equal(f.clock.Now()) || c.Reason != "total 80006 >= 0.80 x cap 100000" {
		t.Fatalf("change = %+v", c)
	}
	if got := f.metricValues(t, reconcile.MetricIntervalChange, "Tier", string(reconcile.TierNearCap)); len(got) != 2 {
		t.Fatalf("interval change metrics to near_cap = %v", got)
	}
	if runs[0].Reconciled != 3 || runs[1].Reconciled != 1 {
		t.Fatalf("reconciled per run = %d, %d; want 3, 1", runs[0].Reconciled, runs[1].Reconciled)
	}
}
