package reconcile

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookline/hookline/internal/spend"
)

// Tier is a workload's reconciliation risk class.
type Tier string

// Tiers, from the most to the least often reconciled.
const (
	// TierNearCap workloads are at or over NearCapRatio of their cap, or
	// paused: they are reconciled on every run.
	TierNearCap Tier = "near_cap"
	// TierActive workloads had usage within QuietAfter.
	TierActive Tier = "active"
	// TierQuiet workloads had none for QuietAfter.
	TierQuiet Tier = "quiet"
)

// Classify returns the tier a workload belongs in at now, its interval and
// the reason, in words an operator reads.
func (r *Reconciler) Classify(w spend.Workload, now time.Time) (Tier, time.Duration, string) {
	c := r.cfg
	switch {
	case w.Status == spend.StatusPaused:
		return TierNearCap, c.BaseInterval, fmt.Sprintf("paused at total %d, cap %d", w.Total, w.Cap)
	case w.NearCap(c.NearCapRatio):
		return TierNearCap, c.BaseInterval, fmt.Sprintf("total %d >= %.2f x cap %d", w.Total, c.NearCapRatio, w.Cap)
	}
	last := w.LastAccepted.AcceptedAt
	switch {
	case !last.IsZero() && now.Sub(last) < c.QuietAfter:
		return TierActive, c.ActiveInterval, fmt.Sprintf("total %d < %.2f x cap %d; usage accepted %s, within %s",
			w.Total, c.NearCapRatio, w.Cap, last.UTC().Format(time.RFC3339), c.QuietAfter)
	case last.IsZero() && now.Sub(w.CreatedAt) < c.QuietAfter:
		return TierActive, c.ActiveInterval, fmt.Sprintf("created %s, no usage yet", w.CreatedAt.UTC().Format(time.RFC3339))
	case last.IsZero():
		return TierQuiet, c.QuietInterval, fmt.Sprintf("no usage since creation %s (quiet after %s)",
			w.CreatedAt.UTC().Format(time.RFC3339), c.QuietAfter)
	}
	return TierQuiet, c.QuietInterval, fmt.Sprintf("no usage since %s (quiet after %s)",
		last.UTC().Format(time.RFC3339), c.QuietAfter)
}

// publishSchedule tells the spend path when this reconciler runs next and
// which workloads it reconciles on every run, so the deadline a page names
// is the schedule's own ([spend.RunSchedule]). Runs fall every BaseInterval.
func (r *Reconciler) publishSchedule(ctx context.Context, run *Run) error {
	rs := spend.RunSchedule{NextRun: run.StartedAt.Add(r.cfg.BaseInterval), Every: r.cfg.BaseInterval,
		NearCapRatio: r.cfg.NearCapRatio}
	if err := r.cfg.Spend.Recon.PublishSchedule(ctx, rs); err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	return nil
}

// planned is one workload's place in this run.
type planned struct {
	w        spend.Workload
	sched    Schedule
	tier     Tier
	interval time.Duration
	// due workloads get a reconciliation record, a new deadline and their
	// deferred records resolved in this run.
	due bool
	// What the deferred step did for the workload.
	reattributed int64
	decisions    []string
	// rechecked are the cap actions the run took on the workload's total
	// alone (a workload resumed over its cap is paused again).
	rechecked []string
}

// plan classifies every workload that is not retired, records each change
// of tier, and decides which are due in this run. Workloads are planned
// up to Concurrency at once.
func (r *Reconciler) plan(ctx context.Context, run *Run) (map[string]*planned, error) {
	ws, err := r.cfg.Spend.Workloads.List(ctx)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	out := make(map[string]*planned, len(ws))
	err = each(ctx, r.cfg.Concurrency, ws, func(ctx context.Context, w spend.Workload) error {
		if w.Status == spend.StatusRetired {
			return nil
		}
		p, err := r.planOne(ctx, run, w)
		if err != nil {
			return err
		}
		mu.Lock()
		out[w.ID] = p
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// planOne classifies one workload, records a change of its tier, and
// decides whether it is due.
func (r *Reconciler) planOne(ctx context.Context, run *Run, w spend.Workload) (*planned, error) {
	now := run.StartedAt
	sc, found, err := r.store.Schedule(ctx, w.ID)
	if err != nil {
		return nil, err
	}
	tier, interval, reason := r.Classify(w, now)
	p := &planned{w: w, sched: sc, tier: tier, interval: interval}
	if !found || sc.Tier != tier || sc.Interval != interval {
		ch := IntervalChange{WorkloadID: w.ID, From: sc.Tier, To: tier, FromInterval: sc.Interval,
			ToInterval: interval, Reason: reason, At: now, RunID: run.RunID}
		changed, err := r.store.ChangeTier(ctx, sc, found, ch)
		if err != nil {
			return nil, err
		}
		if changed {
			r.log.InfoContext(ctx, "reconcile interval change", "workload", w.ID, "from", string(sc.Tier),
				"to", string(tier), "interval", interval, "reason", reason)
			r.emitChange(ch)
			// A shorter interval takes effect now.
			if !found || interval < sc.Interval {
				p.due = true
			}
		}
	}
	if tier == TierNearCap || !sc.NextDue.After(now) {
		p.due = true
	}
	return p, nil
}

// reconcileWorkloads writes a reconciliation record and the next deadline
// for every due workload, and carries the counts of the others forward,
// up to Concurrency workloads at once.
func (r *Reconciler) reconcileWorkloads(ctx context.Context, run *Run, f *fold, plan map[string]*planned) error {
	ids := make([]string, 0, len(plan))
	for id := range plan {
		ids = append(ids, id)
	}
	var reconciled atomic.Int64
	err := each(ctx, r.cfg.Concurrency, ids, func(ctx context.Context, id string) error {
		done, err := r.reconcileWorkload(ctx, run, f, id, plan[id])
		if done {
			reconciled.Add(1)
		}
		return err
	})
	run.Reconciled += int(reconciled.Load())
	slices.Sort(ids)
	for _, id := range ids {
		run.Decisions = append(run.Decisions, plan[id].rechecked...)
	}
	return err
}

// recheck takes the cap action a due workload's total calls for, whether
// or not one of its records was in the window: a workload resumed over its
// cap is paused again, with a page.
func (r *Reconciler) recheck(ctx context.Context, p *planned) error {
	ds, err := r.cfg.Spend.Caps.Recheck(ctx, p.w)
	if err != nil {
		return fmt.Errorf("reconcile: cap check of %s: %w", p.w.ID, err)
	}
	for _, d := range ds {
		p.rechecked = append(p.rechecked, d.Line)
		r.log.WarnContext(ctx, "reconcile cap action on the total", "workload", p.w.ID, "action", d.Action,
			"attributed", d.Attributed, "cap", d.Cap, "epoch", d.CapEpoch)
	}
	return nil
}

// reconcileWorkload reconciles one workload; it reports whether the
// workload was due and got its reconciliation record.
func (r *Reconciler) reconcileWorkload(ctx context.Context, run *Run, f *fold, id string, p *planned) (bool, error) {
	counts := f.of(id)
	if !p.due {
		if counts.zero() {
			return false, nil
		}
		return false, r.store.AddPending(ctx, id, counts, time.Time{}, time.Time{})
	}
	if err := r.recheck(ctx, p); err != nil {
		return false, err
	}
	next := run.StartedAt.Add(p.interval)
	total := p.sched.Pending
	total.add(counts)
	ds := f.decisionsOf(id)
	ds = append(ds, p.decisions...)
	ds = append(ds, p.rechecked...)
	rr := spend.ReconRun{WorkloadID: id, StartedAt: run.StartedAt, FinishedAt: r.now(),
		Records: total.Records, Missed: total.Missed, Duplicates: total.Matched + total.Repeats,
		Disagreements: total.Disagreements, Deferred: total.Deferred, NextReconAt: next,
		Note:  fmt.Sprintf("tier %s every %s; %d repeats from the overlap", p.tier, p.interval, total.Repeats),
		RunID: run.RunID, Since: run.Since, Until: run.Until,
		CursorBefore: run.CursorBefore, CursorAfter: run.CursorAfter, Matched: total.Matched,
		Unseen: total.Unseen, Reattributed: p.reattributed,
		Decisions: ds, Tier: string(p.tier), Interval: p.interval}
	if !p.sched.LastReconciled.IsZero() {
		rr.Since = p.sched.LastReconciled.Add(-r.cfg.Lag - r.cfg.Overlap)
	}
	if err := r.cfg.Spend.Recon.PutReconRun(ctx, rr); err != nil {
		return false, err
	}
	// Add this run's counts and take away everything reported, so a
	// concurrent run's addition survives.
	if err := r.store.AddPending(ctx, id, negate(p.sched.Pending), run.StartedAt, next); err != nil {
		return false, err
	}
	return true, nil
}

// each runs fn for every item, up to n at once, and returns the first
// error; once one has failed, no further item starts.
func each[T any](ctx context.Context, n int, items []T, fn func(context.Context, T) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, max(n, 1))
	var wg sync.WaitGroup
	for _, it := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(ctx, it); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}
