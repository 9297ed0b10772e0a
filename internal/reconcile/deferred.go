package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/spend"
)

// UnresolvedSummary is the one-line summary of an unresolved-attribution
// page:
//
//	unresolved attribution amount=<units> oldest=<RFC3339 UTC> records=<n>
func UnresolvedSummary(units int64, oldest time.Time, records int) string {
	return fmt.Sprintf("unresolved attribution amount=%d oldest=%s records=%d",
		units, oldest.UTC().Format(time.RFC3339), records)
}

// UnresolvedDedupKey is the dedup key of the unresolved-attribution page of
// one owner for the run window ending at until.
func UnresolvedDedupKey(owner string, until time.Time) string {
	return "spend-unresolved:" + owner + ":" + until.UTC().Format("20060102T150405.000000000Z")
}

// maxPageRecords bounds the record IDs one page lists in its details.
const maxPageRecords = 50

// deferred reattributes deferred records whose reference now maps to a
// live workload (through [spend.Ledger.Reattribute]); past their deadline, it holds
// the unresolved ones whose workload holds, and pages the rest once, one
// page per owner for this run's window.
func (r *Reconciler) deferred(ctx context.Context, run *Run, plan map[string]*planned) error {
	now := run.StartedAt
	states, err := r.cfg.Spend.Recon.DeferredStates(ctx, time.Time{})
	if err != nil {
		return err
	}
	var open []spend.DeferredState
	toPage := map[string][]spend.DeferredRecord{}
	for _, st := range states {
		d := st.Record
		past := !d.Deadline.After(now)
		w, err := r.cfg.Spend.Workloads.Resolve(ctx, d.WorkloadRef)
		known := err == nil
		if err != nil && !errors.Is(err, spend.ErrUnknownWorkload) {
			return err
		}
		if known && w.Status != spend.StatusRetired {
			p := plan[w.ID]
			if past || p == nil || p.due {
				ok, err := r.reattribute(ctx, run, d, w, p)
				if err != nil {
					return err
				}
				if ok {
					continue
				}
			}
		}
		open = append(open, st)
		if !past || !st.HeldAt.IsZero() || st.PagedKey != "" {
			continue
		}
		if d.Hold || (known && w.Hold) {
			if err := r.hold(ctx, run, d, w); err != nil {
				return err
			}
			continue
		}
		toPage[d.Owner] = append(toPage[d.Owner], d)
	}
	owners := make([]string, 0, len(toPage))
	for o := range toPage {
		owners = append(owners, o)
	}
	slices.Sort(owners)
	for _, owner := range owners {
		if err := r.pageUnresolved(ctx, run, owner, toPage[owner]); err != nil {
			return err
		}
	}
	for _, st := range open {
		run.UnresolvedUnits += st.Record.Units
		if o := oldestOf(st.Record); run.UnresolvedOldest.IsZero() || o.Before(run.UnresolvedOldest) {
			run.UnresolvedOldest = o
		}
	}
	r.emitUnresolved(run, len(open))
	return nil
}

// reattribute applies a deferred record to the workload its reference now
// maps to. It reports false when the record stays deferred (or disagrees).
func (r *Reconciler) reattribute(ctx context.Context, run *Run, d spend.DeferredRecord, w spend.Workload, p *planned) (bool, error) {
	res, err := r.cfg.Spend.Ledger.Reattribute(ctx, d.RecordID)
	if err != nil {
		return false, fmt.Errorf("reconcile: reattribute %s: %w", d.RecordID, err)
	}
	if res.Outcome != spend.Applied && res.Outcome != spend.Duplicate {
		return false, nil
	}
	line := fmt.Sprintf("reattribute record=%s ref=%s workload=%s units=%d outcome=%s",
		d.RecordID, d.WorkloadRef, res.WorkloadID, d.Units, res.Outcome)
	run.Reattributed++
	run.Decisions = append(run.Decisions, line)
	for _, dec := range res.Decisions {
		run.Decisions = append(run.Decisions, dec.Line)
	}
	if p != nil {
		p.reattributed++
		p.decisions = append(p.decisions, line)
		for _, dec := range res.Decisions {
			p.decisions = append(p.decisions, dec.Line)
		}
	}
	r.log.InfoContext(ctx, "deferred usage attributed", "record", d.RecordID, "ref", d.WorkloadRef,
		"workload", w.ID, "units", d.Units, "outcome", string(res.Outcome))
	return true, nil
}

// hold records the hold decision of a record whose workload holds
// unresolved amounts past their deadline.
func (r *Reconciler) hold(ctx context.Context, run *Run, d spend.DeferredRecord, w spend.Workload) error {
	id := d.WorkloadID
	if id == "" {
		id = w.ID
	}
	reason := fmt.Sprintf("workload %s holds unresolved attribution; deadline %s passed (%s)",
		id, d.Deadline.UTC().Format(time.RFC3339), d.Reason)
	ok, err := r.cfg.Spend.Recon.HoldDeferred(ctx, d.RecordID, reason)
	if err != nil || !ok {
		return err
	}
	run.Held++
	run.Decisions = append(run.Decisions, fmt.Sprintf("hold record=%s workload=%s units=%d reason=%s",
		d.RecordID, id, d.Units, d.Reason))
	r.log.InfoContext(ctx, "unresolved usage held", "record", d.RecordID, "workload", id, "units", d.Units)
	return nil
}

// pageUnresolved sends one page for an owner's newly overdue records and
// marks each record with the page's dedup key. The page is enqueued before
// the marks, so a crash in between pages again rather than never.
func (r *Reconciler) pageUnresolved(ctx context.Context, run *Run, owner string, ds []spend.DeferredRecord) error {
	var units int64
	var oldest time.Time
	ids := make([]string, 0, min(len(ds), maxPageRecords))
	refs := map[string]int64{}
	for _, d := range ds {
		units += d.Units
		if o := oldestOf(d); oldest.IsZero() || o.Before(oldest) {
			oldest = o
		}
		if len(ids) < maxPageRecords {
			ids = append(ids, d.RecordID)
		}
		refs[d.WorkloadRef] += d.Units
	}
	dedup := UnresolvedDedupKey(owner, run.Until)
	summary := UnresolvedSummary(units, oldest, len(ds))
	ev := pager.Event{RoutingKey: r.cfg.ReconRoutingKey, EventAction: pager.ActionTrigger, DedupKey: dedup,
		Payload: &pager.Payload{Summary: summary, Source: r.cfg.Source, Severity: pager.SeverityError,
			Timestamp: run.StartedAt.UTC(), Component: "unattributed", Group: owner, Class: "spend_unresolved",
			CustomDetails: map[string]any{
				"owner": owner, "amount": units, "oldest": oldest.UTC().Format(time.RFC3339), "records": len(ds),
				"record_ids": ids, "units_by_ref": refs, "run": run.RunID,
				"window_since": run.Since.UTC().Format(time.RFC3339), "window_until": run.Until.UTC().Format(time.RFC3339),
			}}}
	if _, err := r.cfg.Pages.Enqueue(ctx, ev); err != nil {
		return fmt.Errorf("reconcile: unresolved page for %s: %w", owner, err)
	}
	for _, d := range ds {
		if err := r.cfg.Spend.Recon.MarkUnresolvedPaged(ctx, d.RecordID, dedup); err != nil {
			return err
		}
	}
	run.UnresolvedPaged += int64(len(ds))
	run.Decisions = append(run.Decisions, fmt.Sprintf("page %s: %s", dedup, summary))
	r.log.WarnContext(ctx, "unresolved attribution paged", "owner", owner, "amount", units,
		"records", len(ds), "oldest", oldest, "dedup", dedup)
	return nil
}

// oldestOf is the time a deferred record's age counts from.
func oldestOf(d spend.DeferredRecord) time.Time {
	for _, t := range []time.Time{d.OccurredAt, d.ObservedAt, d.DeferredAt} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}
