package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/usagein"
)

// WorkloadView is a workload as the CLI shows it. It has no routing key:
// that is a credential and never printed.
type WorkloadView struct {
	ID              string          `json:"id"`
	Owner           string          `json:"owner"`
	Status          string          `json:"status"`
	Total           int64           `json:"total"`
	Cap             int64           `json:"cap"`
	Step            int64           `json:"step"`
	Hold            bool            `json:"hold"`
	CapEpoch        int64           `json:"cap_epoch"`
	EscalationLevel int64           `json:"escalation_level"`
	LastAccepted    spend.LastEvent `json:"last_accepted"`
	NextReconAt     time.Time       `json:"next_recon_at"`
	// Override* record the last resume over the cap (workload resume
	// --force): who, why, when, and the cap epoch it opened.
	OverrideBy     string    `json:"override_by,omitempty"`
	OverrideReason string    `json:"override_reason,omitempty"`
	OverrideAt     time.Time `json:"override_at,omitzero"`
	OverrideEpoch  int64     `json:"override_epoch,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// ViewWorkload drops the routing key from w.
func ViewWorkload(w spend.Workload) WorkloadView {
	return WorkloadView{ID: w.ID, Owner: w.Owner, Status: string(w.Status), Total: w.Total, Cap: w.Cap, Step: w.Step,
		Hold: w.Hold, CapEpoch: w.CapEpoch, EscalationLevel: w.EscalationLevel, LastAccepted: w.LastAccepted,
		NextReconAt: w.NextReconAt, OverrideBy: w.Override.By, OverrideReason: w.Override.Reason,
		OverrideAt: w.Override.At, OverrideEpoch: w.Override.Epoch, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt}
}

// MarshalJSON writes the view with lower snake_case member names, its last
// accepted event's included.
func (v WorkloadView) MarshalJSON() ([]byte, error) {
	type plain WorkloadView
	return snakeJSON(plain(v))
}

// ReconRunView is a reconciliation run with the interval it scheduled.
type ReconRunView struct {
	spend.ReconRun
	// Interval is NextReconAt minus the run's end: the interval this run
	// chose. IntervalChanged is true when it differs from the previous
	// run's.
	Interval        time.Duration `json:"interval_ns"`
	IntervalChanged bool          `json:"interval_changed"`
	// Applied and Redriven repeat Missed and Reattributed under the names
	// earlier builds printed, for scripts that read them. They go once
	// no run record of an earlier build is left to explain (its retention,
	// 35 days, after the release that renamed them).
	Applied  int64 `json:"applied"`
	Redriven int64 `json:"redriven"`
}

// Runbook is the runbook on one screen for a workload: what caused its
// last action, its total and cap, the last accepted event, what is pending
// and when reconciliation will prove or disprove it.
type Runbook struct {
	AsOf     time.Time    `json:"as_of"`
	Workload WorkloadView `json:"workload"`
	// LastAction is the latest cap decision, if any; Cause the ledger entry
	// of the usage record that took it.
	LastAction *spend.Decision `json:"last_action,omitempty"`
	Cause      *spend.Entry    `json:"cause,omitempty"`
	// CauseDelta and CauseBucket are set instead of Cause when the action
	// was taken by a delta of a bucket of a provider's sums (a poll's
	// revision, "<bucket>#rev<n>", or a record's raise of the bucket).
	CauseDelta      *spend.Delta               `json:"cause_delta,omitempty"`
	CauseBucket     *spend.Bucket              `json:"cause_bucket,omitempty"`
	LastAccepted    spend.LastEvent            `json:"last_accepted"`
	PendingDeferred int64                      `json:"pending_deferred"`
	UnknownDeferred int64                      `json:"unknown_deferred"`
	Deferred        []spend.DeferredRecord     `json:"deferred"`
	Decisions       []spend.Decision           `json:"decisions"`
	Disagreements   []spend.DisagreementRecord `json:"disagreements"`
	ReconRuns       []ReconRunView             `json:"recon_runs"`
	// IntervalChanges are the reconciler's recorded changes of this
	// workload's tier and interval, newest first, each with its reason.
	IntervalChanges []reconcile.IntervalChange `json:"interval_changes"`
	NextReconAt     time.Time                  `json:"next_recon_at"`
	// Proof says when reconciliation will prove or disprove the total.
	Proof string `json:"proof"`
	// Buckets are the latest buckets of providers of sums, newest first,
	// and Alerts the latest threshold alerts.
	Buckets []spend.Bucket `json:"buckets,omitempty"`
	Alerts  []spend.Alert  `json:"alerts,omitempty"`
	// Period and PreviousPeriod are the workload's current and previous
	// billing periods, with their totals, caps, closes and late usage;
	// absent for a lifetime total.
	Period         *spend.PeriodView `json:"period,omitempty"`
	PreviousPeriod *spend.PeriodView `json:"previous_period,omitempty"`
}

// NewRunbook builds the runbook of an explanation at now.
func NewRunbook(x spend.Explanation, now time.Time) Runbook {
	r := Runbook{AsOf: now.UTC(), Workload: ViewWorkload(x.Workload), Cause: x.Cause, LastAccepted: x.LastAccepted,
		PendingDeferred: x.PendingDeferred, UnknownDeferred: x.UnknownDeferred, Deferred: x.Deferred,
		Decisions: x.Decisions, Disagreements: x.Disagreements, NextReconAt: x.NextReconAt,
		Buckets: x.Buckets, Alerts: x.Alerts, Period: x.Period, PreviousPeriod: x.PreviousPeriod}
	if len(x.Decisions) > 0 {
		d := x.Decisions[0]
		r.LastAction = &d
	}
	for i, run := range x.ReconRuns {
		v := ReconRunView{ReconRun: run, Interval: interval(run), Applied: run.Missed, Redriven: run.Reattributed}
		if i+1 < len(x.ReconRuns) {
			prev := interval(x.ReconRuns[i+1])
			v.IntervalChanged = v.Interval != 0 && prev != 0 && prev != v.Interval
		}
		r.ReconRuns = append(r.ReconRuns, v)
	}
	r.Proof = proof(x.NextReconAt, now)
	return r
}

func interval(run spend.ReconRun) time.Duration {
	end := run.FinishedAt
	if end.IsZero() {
		end = run.StartedAt
	}
	if run.NextReconAt.IsZero() || end.IsZero() {
		return 0
	}
	return run.NextReconAt.Sub(end).Round(time.Second)
}

func proof(next, now time.Time) string {
	switch {
	case next.IsZero():
		return "no reconciliation is scheduled: the total is unproven until the next poll covers it"
	case next.After(now):
		return fmt.Sprintf("reconciliation proves or disproves the total at %s (in %s)", stamp(next), since(now, next))
	default:
		return fmt.Sprintf("reconciliation is overdue: it was due at %s (%s ago)", stamp(next), since(next, now))
	}
}

// EventRunbook explains one event or usage record. Its JSON member names,
// nested ones included, are lower snake_case.
type EventRunbook struct {
	ID       string                `json:"id"`
	Entry    *spend.Entry          `json:"entry,omitempty"`
	Deferred *spend.DeferredRecord `json:"deferred,omitempty"`
	// DeferredState is what became of a deferral: open, overdue, paged,
	// held or resolved, and when.
	DeferredState *DeferralView    `json:"deferred_state,omitempty"`
	Decisions     []spend.Decision `json:"decisions"`
	Workload      *Runbook         `json:"workload,omitempty"`
	// Quarantined is the record as the ledger refused it, if it did.
	Quarantined *spend.QuarantineRecord `json:"quarantined,omitempty"`
	// Intake is the usage event's intake record, if there is one.
	Intake *IntakeView `json:"intake,omitempty"`
	// Delta and Bucket are a bucket's delta and its bucket, when the ID
	// names one (a top-up's page names it as its record).
	Delta  *spend.Delta  `json:"delta,omitempty"`
	Bucket *spend.Bucket `json:"bucket,omitempty"`
}

// Deferral states, as [DeferralView] names them.
const (
	DeferralOpen     = "open"
	DeferralOverdue  = "overdue"
	DeferralPaged    = "paged"
	DeferralHeld     = "held"
	DeferralResolved = "resolved"
)

// DeferralView is the state of a deferred record at a point in time.
type DeferralView struct {
	State      string    `json:"state"`
	Deadline   time.Time `json:"deadline"`
	PagedKey   string    `json:"paged_key,omitempty"`
	PagedAt    time.Time `json:"paged_at,omitzero"`
	HeldAt     time.Time `json:"held_at,omitzero"`
	HoldReason string    `json:"hold_reason,omitempty"`
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
}

// ViewDeferral names the state of a deferral at now: resolved, held or
// paged once reconciliation did so, overdue past its deadline before it
// has, else open.
func ViewDeferral(st spend.DeferredState, now time.Time) DeferralView {
	d := st.Record
	v := DeferralView{Deadline: d.Deadline, PagedKey: st.PagedKey, PagedAt: st.PagedAt, HeldAt: st.HeldAt,
		HoldReason: st.HoldReason, ResolvedAt: d.ResolvedAt}
	switch {
	case d.Status == DeferralResolved:
		v.State = DeferralResolved
	case !st.HeldAt.IsZero():
		v.State = DeferralHeld
	case st.PagedKey != "":
		v.State = DeferralPaged
	case !d.Deadline.After(now):
		v.State = DeferralOverdue
	default:
		v.State = DeferralOpen
	}
	return v
}

// Text is the deferral's state in words.
func (v DeferralView) Text() string {
	switch v.State {
	case DeferralResolved:
		return fmt.Sprintf("status resolved at %s", stamp(v.ResolvedAt))
	case DeferralHeld:
		return fmt.Sprintf("status held at %s (%s); deadline %s", stamp(v.HeldAt), v.HoldReason, stamp(v.Deadline))
	case DeferralPaged:
		return fmt.Sprintf("status paged at %s (%s); deadline %s", stamp(v.PagedAt), v.PagedKey, stamp(v.Deadline))
	case DeferralOverdue:
		return fmt.Sprintf("status overdue since %s: the next reconciliation run pages or holds it", stamp(v.Deadline))
	}
	return fmt.Sprintf("status open, deadline %s", stamp(v.Deadline))
}

// MarshalJSON writes the runbook with lower snake_case member names.
func (r EventRunbook) MarshalJSON() ([]byte, error) {
	type plain EventRunbook
	return snakeJSON(plain(r))
}

// MarshalJSON writes the runbook with lower snake_case member names.
func (r Runbook) MarshalJSON() ([]byte, error) {
	type plain Runbook
	return snakeJSON(plain(r))
}

// snakeJSON marshals v with every object member name in lower snake_case
// (RecordID becomes record_id), so records of the spend path, which carry
// no JSON tags, read like the rest of the CLI's JSON.
func snakeJSON(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	return json.Marshal(snakeKeys(tree))
}

func snakeKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[snakeName(k)] = snakeKeys(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = snakeKeys(e)
		}
		return x
	}
	return v
}

// snakeName turns a Go field name into lower snake_case: an underscore
// before each word, where a word starts at an upper-case letter after a
// lower-case one or a digit, or at the last capital of an initialism
// followed by lower case (IDFoo: id_foo).
func snakeName(k string) string {
	rs := []rune(k)
	var b strings.Builder
	for i, r := range rs {
		if !unicode.IsUpper(r) {
			b.WriteRune(r)
			continue
		}
		if i > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// ExplainSources are what an explanation is assembled from: the spend
// path's [spend.Explainer] and the reconciler's interval changes
// ([reconcile.Store] is one).
type ExplainSources struct {
	Spend     *spend.Explainer
	Intervals interface {
		IntervalChanges(ctx context.Context, workloadID string, limit int) ([]reconcile.IntervalChange, error)
	}
	// Intake, if set, is read for the usage event's intake record under
	// UsageSource: when it was received and how it was attributed.
	Intake interface {
		Get(ctx context.Context, source, eventID string) (intake.Record, bool, error)
	}
	UsageSource string
}

// ExplainWorkload assembles the runbook of a workload at now: the spend
// path's explanation and the reconciler's last ten interval changes.
func ExplainWorkload(ctx context.Context, src ExplainSources, id string, now time.Time) (Runbook, error) {
	x, err := src.Spend.Explain(ctx, id)
	if err != nil {
		return Runbook{}, err
	}
	r := NewRunbook(x, now)
	if d := r.LastAction; d != nil && r.Cause == nil && spend.IsDeltaID(d.RecordID) {
		delta, b, err := src.Spend.BucketDelta(ctx, d.RecordID)
		switch {
		case err == nil:
			r.CauseDelta, r.CauseBucket = &delta, &b
		case !errors.Is(err, spend.ErrNotFound):
			return Runbook{}, fmt.Errorf("ops: cause of %s: %w", id, err)
		}
	}
	if r.IntervalChanges, err = src.Intervals.IntervalChanges(ctx, id, 10); err != nil {
		return Runbook{}, fmt.Errorf("ops: interval changes of %s: %w", id, err)
	}
	return r, nil
}

// ExplainEvent assembles the runbook of an event or usage record at now.
// An event that the intake recorded but the ledger has not seen (still
// queued, or dead-lettered) is explained by its intake record alone.
func ExplainEvent(ctx context.Context, src ExplainSources, id string, now time.Time) (EventRunbook, error) {
	x, err := src.Spend.ExplainEvent(ctx, id)
	missing := errors.Is(err, spend.ErrNotFound)
	if err != nil && !missing {
		return EventRunbook{}, err
	}
	r := NewEventRunbook(id, x, now)
	if r.Intake, err = intakeView(ctx, src, eventIDOf(id, x)); err != nil {
		return EventRunbook{}, err
	}
	if missing && r.Intake == nil {
		return EventRunbook{}, fmt.Errorf("ops: explain %s: %w", id, spend.ErrNotFound)
	}
	return r, nil
}

// eventIDOf is the webhook event ID of an explanation: the one its ledger
// entry, deferral or quarantine names, else the ID asked for.
func eventIDOf(id string, x spend.EventExplanation) string {
	switch {
	case x.Entry != nil && x.Entry.EventID != "":
		return x.Entry.EventID
	case x.Deferred != nil && x.Deferred.EventID != "":
		return x.Deferred.EventID
	case x.Quarantined != nil && x.Quarantined.EventID != "":
		return x.Quarantined.EventID
	}
	return id
}

// IntakeView is the part of a usage event's intake record an operator
// reads: when it came, whether it was enqueued, its attribution, and the
// deliveries of its ID that came with another payload.
type IntakeView struct {
	Key                 string    `json:"key"`
	ReceivedAt          time.Time `json:"received_at"`
	Status              string    `json:"status"`
	Attribution         string    `json:"attribution,omitempty"`
	AttributionWorkload string    `json:"attribution_workload,omitempty"`
	AttributionReason   string    `json:"attribution_reason,omitempty"`
	AttributedAt        time.Time `json:"attributed_at,omitzero"`
	// Conflict is set when deliveries of the event's ID came with another
	// payload than the one recorded: acknowledged, and not counted.
	Conflict *ConflictView `json:"conflict,omitempty"`
}

// ConflictView is what an intake record says of the deliveries of its
// event ID that carried another payload ([intake.Store.NoteConflict]):
// how many came, the last one's time and hash, and, for usage, the units
// counted (the record's) beside the last conflicting delivery's. Units
// are -1 where the payload is not a usage message or was not kept.
type ConflictView struct {
	Count       int64     `json:"count"`
	LastAt      time.Time `json:"last_at"`
	LastSHA256  string    `json:"last_sha256"`
	Units       int64     `json:"units"`
	LastUnits   int64     `json:"last_units"`
	LastPayload bool      `json:"last_payload_kept"`
}

func intakeView(ctx context.Context, src ExplainSources, eventID string) (*IntakeView, error) {
	if src.Intake == nil || src.UsageSource == "" {
		return nil, nil
	}
	rec, found, err := src.Intake.Get(ctx, src.UsageSource, eventID)
	if err != nil {
		return nil, fmt.Errorf("ops: intake record of %s: %w", eventID, err)
	}
	if !found {
		return nil, nil
	}
	return &IntakeView{Key: rec.PK, ReceivedAt: parseIntakeTime(rec.ReceivedAt), Status: rec.Status,
		Attribution: string(rec.Attribution), AttributionWorkload: rec.AttributionWorkload,
		AttributionReason: rec.AttributionReason, AttributedAt: parseIntakeTime(rec.AttributedAt),
		Conflict: viewConflict(rec)}, nil
}

// viewConflict is rec's conflict, nil when it has none.
func viewConflict(rec intake.Record) *ConflictView {
	if rec.Conflicts == 0 {
		return nil
	}
	return &ConflictView{Count: rec.Conflicts, LastAt: parseIntakeTime(rec.ConflictAt), LastSHA256: rec.ConflictSHA256,
		Units: usageUnits(rec.Payload), LastUnits: usageUnits(rec.ConflictPayload), LastPayload: rec.ConflictPayload != ""}
}

// usageUnits reads the units of a usage message, -1 when it is none.
func usageUnits(payload string) int64 {
	if payload == "" {
		return -1
	}
	msg, err := usagein.DecodeMessage([]byte(payload), time.Time{})
	if err != nil {
		return -1
	}
	return msg.Units
}

// Text is the conflict in one line.
func (c ConflictView) Text() string {
	line := fmt.Sprintf("conflict: %d conflicting deliveries of this ID were acknowledged and not counted; the last at %s",
		c.Count, stamp(c.LastAt))
	if c.LastUnits >= 0 {
		line += fmt.Sprintf(" carried %d units", c.LastUnits)
	} else {
		line += " (payload sha256 " + c.LastSHA256 + ")"
	}
	if c.Units >= 0 {
		line += fmt.Sprintf("; the first value, %d units, is what counts", c.Units)
	}
	return line
}

// parseIntakeTime reads an intake record's time; "" is the zero time.
func parseIntakeTime(v string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, v)
	return t
}

// Text is the intake record in one line, and a second for its
// conflicting deliveries when there were any.
func (v IntakeView) Text() string {
	line := fmt.Sprintf("intake %s: received %s, %s; ", v.Key, stamp(v.ReceivedAt), v.Status)
	switch {
	case v.Attribution == "":
		line += "not attributed yet (queued, or in the usage DLQ: hookline dlq peek usage-dlq)"
	case v.AttributionWorkload != "":
		line += fmt.Sprintf("attribution %s to %s at %s", v.Attribution, v.AttributionWorkload, stamp(v.AttributedAt))
	default:
		line += fmt.Sprintf("attribution %s at %s", v.Attribution, stamp(v.AttributedAt))
	}
	if v.AttributionReason != "" {
		line += " (" + v.AttributionReason + ")"
	}
	if v.Conflict != nil {
		line += "\n" + v.Conflict.Text()
	}
	return line
}

// NewEventRunbook builds the runbook of an event explanation at now.
func NewEventRunbook(id string, x spend.EventExplanation, now time.Time) EventRunbook {
	r := EventRunbook{ID: id, Entry: x.Entry, Deferred: x.Deferred, Decisions: x.Decisions, Quarantined: x.Quarantined,
		Delta: x.Delta, Bucket: x.Bucket}
	if x.Deferred != nil {
		st := spend.DeferredState{Record: *x.Deferred}
		if x.DeferredState != nil {
			st = *x.DeferredState
		}
		v := ViewDeferral(st, now)
		r.DeferredState = &v
	}
	if x.Workload != nil {
		wr := NewRunbook(*x.Workload, now)
		r.Workload = &wr
	}
	return r
}

// WriteText writes the runbook for a terminal.
func (r Runbook) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	wl := r.Workload
	fmt.Fprintf(tw, "workload\t%s  status=%s  owner=%s\n", wl.ID, wl.Status, wl.Owner)
	fmt.Fprintf(tw, "attributed\t%d of cap %d%s  (step %d, cap epoch %d, hold %t)\n", wl.Total, wl.Cap, overBy(wl.Total, wl.Cap), wl.Step, wl.CapEpoch, wl.Hold)
	writePeriod(tw, "period", r.Period, r.AsOf)
	writePeriod(tw, "previous period", r.PreviousPeriod, r.AsOf)
	if wl.OverrideEpoch > 0 && wl.OverrideEpoch == wl.CapEpoch {
		fmt.Fprintf(tw, "override\tresumed over the cap by %s at %s: %s; the next reconciliation run pauses it again while it is over\n",
			wl.OverrideBy, stamp(wl.OverrideAt), wl.OverrideReason)
	}
	if d := r.LastAction; d != nil {
		fmt.Fprintf(tw, "last action\t%s at %s: %s\n", d.Action, stamp(d.DecidedAt), d.Line)
		fmt.Fprintf(tw, "caused by\t%s\n", r.cause(d))
	} else {
		fmt.Fprintf(tw, "last action\tnone: no cap action in this workload's history\n")
	}
	fmt.Fprintf(tw, "last accepted\t%s\n", lastEvent(r.LastAccepted))
	fmt.Fprintf(tw, "pending\t%d units deferred for this workload in %d records; %d units system-wide with no workload\n",
		r.PendingDeferred, len(r.Deferred), r.UnknownDeferred)
	fmt.Fprintf(tw, "proof\t%s\n", r.Proof)
	tw.Flush()
	if len(r.ReconRuns) > 0 {
		fmt.Fprintln(w, "\nreconciliation runs (newest first)")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  STARTED\tRECORDS\tMISSED\tDUPLICATES\tDISAGREE\tDEFERRED\tNEXT\tINTERVAL\tNOTE")
		for _, run := range r.ReconRuns {
			iv := "-"
			if run.Interval > 0 {
				iv = run.Interval.String()
				if run.IntervalChanged {
					iv += " (changed)"
				}
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", stamp(run.StartedAt), run.Records, run.Missed,
				run.Duplicates, run.Disagreements, run.Deferred, stamp(run.NextReconAt), iv, run.Note)
		}
		tw.Flush()
	}
	if len(r.IntervalChanges) > 0 {
		fmt.Fprintln(w, "\nreconciliation interval changes (newest first)")
		for _, c := range r.IntervalChanges {
			fmt.Fprintf(w, "  %s  %s -> %s, every %s: %s\n", stamp(c.At), orDash(string(c.From)), c.To, c.ToInterval, c.Reason)
		}
	}
	if len(r.Decisions) > 0 {
		fmt.Fprintln(w, "\ndecisions (newest first)")
		for _, d := range r.Decisions {
			fmt.Fprintf(w, "  %s  %s\n", stamp(d.DecidedAt), d.Line)
		}
	}
	if len(r.Disagreements) > 0 {
		fmt.Fprintln(w, "\ndisagreements (newest first)")
		for _, d := range r.Disagreements {
			fmt.Fprintf(w, "  %s  record %s: kept %d units on %s via %s; other %d units on %s via %s\n", stamp(d.RecordedAt), d.RecordID,
				d.Kept.Units, d.Kept.WorkloadID, d.Kept.Path, d.Other.Units, d.Other.WorkloadID, d.Other.Path)
		}
	}
	if len(r.Deferred) > 0 {
		fmt.Fprintln(w, "\ndeferred for this workload")
		for _, d := range r.Deferred {
			fmt.Fprintf(w, "  record %s: %d units, %s, owner %s, deadline %s\n", d.RecordID, d.Units, d.Reason, d.Owner, stamp(d.Deadline))
		}
	}
	writeBuckets(w, r.Buckets)
	writeAlerts(w, r.Alerts)
	return nil
}

// writePeriod prints one billing period of a workload: its bounds in the
// workload's zone, total and cap, close, and the usage after its close.
func writePeriod(w io.Writer, name string, p *spend.PeriodView, now time.Time) {
	if p == nil {
		return
	}
	closes := "closes"
	if !now.Before(p.Close) {
		closes = "closed"
	}
	capText := "-"
	if p.Cap > 0 {
		capText = fmt.Sprint(p.Cap)
	}
	late := "no late usage"
	switch {
	case p.LateUnits > 0 && !p.LatePagedAt.IsZero():
		late = fmt.Sprintf("late usage %d units (paged %s)", p.LateUnits, stamp(p.LatePagedAt))
	case p.LateUnits > 0:
		late = fmt.Sprintf("late usage %d units", p.LateUnits)
	}
	if !p.LateDownPagedAt.IsZero() {
		late += fmt.Sprintf("; revised down after close (paged %s)", stamp(p.LateDownPagedAt))
	}
	fmt.Fprintf(w, "%s\t%s  total %d of cap %s, %s %s, %s\n", name, p.Period, p.Total, capText, closes, stamp(p.Close), late)
}

// writeBuckets prints a workload's recent buckets of providers of sums.
func writeBuckets(w io.Writer, bs []spend.Bucket) {
	if len(bs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nbuckets of providers of sums (newest first; counted = max(webhook, provider))")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  BUCKET\tMETER\tSOURCE\tWEBHOOK W\tPROVIDER P\tP*\tCOUNTED\tREVISIONS\tSTATE")
	for _, b := range bs {
		p := "-"
		if b.PSeen {
			p = fmt.Sprint(b.PLatest)
		}
		state := "open"
		switch {
		case b.Settled && b.Gap != 0:
			state = fmt.Sprintf("settled, gap %+d paged", b.Gap)
		case b.Settled:
			state = "settled"
		case b.Provisional:
			state = "open, provisional"
		}
		fmt.Fprintf(tw, "  [%s,%s) %s\t%s\t%s/%s/%s\t%d\t%s\t%d\t%d\t%d (%d down)\t%s\n", stamp(b.Start), stamp(b.End), b.TZ,
			b.Meter, b.Source, b.Account, b.Mode, b.W, p, b.PStar, b.Counted, b.Revisions, b.Downs, state)
	}
	tw.Flush()
}

// writeAlerts prints a workload's recent threshold alerts.
func writeAlerts(w io.Writer, as []spend.Alert) {
	if len(as) == 0 {
		return
	}
	fmt.Fprintln(w, "\nthreshold alerts (newest first)")
	for _, a := range as {
		verdict := "ledger at or above it"
		if a.Paged {
			verdict = "ledger below it: paged"
		}
		fmt.Fprintf(w, "  %s  event %s alert %s meter %s: provider counted at least %d since %s (%s); ledger %d, %s\n",
			stamp(a.ReceivedAt), a.EventID, orDash(a.AlertID), a.Meter, a.Value, stamp(a.Since), a.SinceFrom, a.Ledger, verdict)
	}
}

// WriteText writes the event's runbook for a terminal: a record the
// ledger only quarantined is shown as such.
func (r EventRunbook) WriteText(w io.Writer) error {
	if r.Delta != nil && r.Bucket != nil {
		writeDelta(w, *r.Delta, *r.Bucket)
		if r.Workload != nil {
			fmt.Fprintln(w)
			return r.Workload.WriteText(w)
		}
		return nil
	}
	if r.Intake != nil {
		fmt.Fprintln(w, r.Intake.Text())
		if r.Entry == nil && r.Deferred == nil && r.Quarantined == nil {
			return nil
		}
	}
	if r.Quarantined != nil && r.Entry == nil && r.Deferred == nil {
		writeQuarantine(w, r.Quarantined)
		return nil
	}
	if err := r.writeEntry(w); err != nil {
		return err
	}
	if r.Quarantined != nil {
		writeQuarantine(w, r.Quarantined)
	}
	return nil
}

// writeQuarantine prints a record the ledger refused: what it said, why it
// was refused, and who was paged.
func writeQuarantine(w io.Writer, q *spend.QuarantineRecord) {
	fmt.Fprintf(w, "event %s: record %s, %d units for ref %s via %s QUARANTINED at %s: the ledger refused it, no total changed\n",
		orDash(q.EventID), q.RecordID, q.Units, q.WorkloadRef, q.Path, q.QuarantinedAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "reason\t%s\n", q.Reason)
	fmt.Fprintf(w, "paged\t%s (reconciliation owner %s), once; a corrected record needs a new record ID\n", q.DedupKey, q.Owner)
}

func (r EventRunbook) writeEntry(w io.Writer) error {
	switch {
	case r.Entry != nil:
		e := r.Entry
		fmt.Fprintf(w, "event %s: record %s, %d units attributed to %s (ref %s) via %s, observed %s, accepted %s\n",
			orDash(e.EventID), e.RecordID, e.Units, e.WorkloadID, e.WorkloadRef, strings.Join(paths(e), "+"), stamp(e.ObservedAt), stamp(e.AcceptedAt))
	case r.Deferred != nil:
		d := r.Deferred
		state := fmt.Sprintf("status %s, deadline %s", d.Status, stamp(d.Deadline))
		if r.DeferredState != nil {
			state = r.DeferredState.Text()
		}
		fmt.Fprintf(w, "event %s: record %s, %d units DEFERRED (%s, ref %s), owner %s, %s\n",
			orDash(d.EventID), d.RecordID, d.Units, d.Reason, d.WorkloadRef, d.Owner, state)
	default:
		fmt.Fprintf(w, "%s: nothing recorded\n", r.ID)
	}
	for _, d := range r.Decisions {
		fmt.Fprintf(w, "this event took: %s\n", d.Line)
	}
	if r.Workload != nil {
		fmt.Fprintln(w)
		return r.Workload.WriteText(w)
	}
	return nil
}

func paths(e *spend.Entry) []string {
	if len(e.Paths) > 0 {
		return e.Paths
	}
	return []string{e.Path}
}

// cause is the line of the record that took decision d: its ledger
// entry, or the bucket's delta it names.
func (r Runbook) cause(d *spend.Decision) string {
	if d.Action == spend.ActionSetPeriod {
		return "an operator's change of period (workload set-period), in force from the end of the period it was made in"
	}
	e := r.Cause
	if e == nil && r.CauseDelta != nil && r.CauseBucket != nil {
		x := r.CauseDelta
		return fmt.Sprintf("record %s: %+d units found by %s at %s; the bucket then counted %d",
			x.ID, x.Amount, deltaFound(*x), stamp(x.At), x.Counted)
	}
	if e == nil {
		return fmt.Sprintf("record %s (event %s), %d units, observed %s; its ledger entry is not found",
			d.RecordID, orDash(d.EventID), d.Units, stamp(d.ObservedAt))
	}
	return fmt.Sprintf("record %s (event %s), %d units via %s, observed %s, accepted %s",
		e.RecordID, orDash(e.EventID), e.Units, strings.Join(paths(e), "+"), stamp(e.ObservedAt), stamp(e.AcceptedAt))
}

func lastEvent(l spend.LastEvent) string {
	if l.RecordID == "" && l.EventID == "" {
		return "none yet"
	}
	return fmt.Sprintf("event %s, record %s, %d units via %s, observed %s, accepted %s",
		orDash(l.EventID), l.RecordID, l.Units, l.Path, stamp(l.ObservedAt), stamp(l.AcceptedAt))
}

func overBy(total, capUnits int64) string {
	if total > capUnits {
		return fmt.Sprintf(" (over by %d)", total-capUnits)
	}
	return ""
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func since(from, to time.Time) string {
	return to.Sub(from).Round(time.Second).String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeDelta prints one delta of a bucket of a provider of sums.
func writeDelta(w io.Writer, d spend.Delta, b spend.Bucket) {
	fmt.Fprintf(w, "delta %s: %+d units to %s, found by %s at %s; the bucket then counted %d\n",
		d.ID, d.Amount, b.WorkloadID, deltaFound(d), stamp(d.At), d.Counted)
	fmt.Fprintf(w, "bucket [%s,%s) %s meter %s of %s/%s/%s: webhook W=%d, provider latest %d, highest P*=%d, counted %d, %d revisions (%d down)\n",
		stamp(b.Start), stamp(b.End), b.TZ, b.Meter, b.Source, b.Account, b.Mode, b.W, b.PLatest, b.PStar, b.Counted,
		b.Revisions, b.Downs)
}

// deltaFound says which path found a delta.
func deltaFound(d spend.Delta) string {
	found := "the webhook record " + d.Record
	switch {
	case d.Cause == spend.PathPoll && d.Record != "":
		found = "the export's record " + d.Record
	case d.Cause == spend.PathPoll:
		found = "the reconciler's poll of the provider's sums"
	}
	if n := len(d.Records); n > 1 {
		found += fmt.Sprintf(" and %d more records of its batch (%s)", n-1, strings.Join(d.Records[1:], ", "))
	}
	return found
}
