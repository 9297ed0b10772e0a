package spend

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/pager"
)

// Cap actions.
const (
	ActionPause    = "pause"
	ActionEscalate = "escalate"
)

// Decision is the durable record of one cap action.
type Decision struct {
	WorkloadID string
	Action     string
	// EventID and RecordID name the usage record whose Apply took the
	// action; EventID is empty for a record seen only by polling.
	EventID  string
	RecordID string
	Units    int64
	// Attributed is the workload's total when the action was decided.
	Attributed int64
	Cap        int64
	// Step is the escalation step k (total > cap + k*step); for a pause,
	// the step already passed when it paused.
	Step       int64
	CapEpoch   int64
	ObservedAt time.Time
	DecidedAt  time.Time
	DedupKey   string
	// Line is the page's one-line summary.
	Line         string
	LastAccepted LastEvent
	NextReconAt  time.Time
}

// PageLine is the one-line form of a cap page. It names the webhook event
// when there is one, and the usage record always:
//
//	spend cap action=pause workload=workload-7 attributed=1012 cap=1000 event=evt_123 record=ur_123 observed=2026-11-30T03:17:00Z
//	spend cap action=pause workload=workload-7 attributed=1012 cap=1000 record=ur_123 observed=2026-11-30T03:17:00Z
func PageLine(action, workloadID string, attributed, capUnits int64, eventID, recordID string, observed time.Time) string {
	event := ""
	if eventID != "" {
		event = " event=" + eventID
	}
	return fmt.Sprintf("spend cap action=%s workload=%s attributed=%d cap=%d%s record=%s observed=%s",
		action, workloadID, attributed, capUnits, event, recordID, observed.UTC().Format(time.RFC3339))
}

// DedupKey is the page dedup key of a cap action: workload, action, cap
// epoch and, for an escalation, its step.
func DedupKey(workloadID, action string, epoch, step int64) string {
	k := "spend-cap:" + workloadID + ":" + action + ":e" + strconv.FormatInt(epoch, 10)
	if action == ActionEscalate {
		k += ":k" + strconv.FormatInt(step, 10)
	}
	return k
}

// stepOf is the highest k with total > cap + k*step (0 without a step).
func stepOf(w Workload) int64 {
	if w.Step <= 0 || w.Total <= w.Cap {
		return 0
	}
	return (w.Total - w.Cap - 1) / w.Step
}

// nextAction is the cap action w calls for, if any.
func nextAction(w Workload) (string, int64) {
	if !w.OverCap() {
		return "", 0
	}
	k := stepOf(w)
	switch {
	case w.Status == StatusActive:
		return ActionPause, k
	case w.Status == StatusPaused && k > w.EscalationLevel:
		return ActionEscalate, k
	}
	return "", 0
}

// enforce takes the cap action w calls for. Of concurrent Applies that call
// for the same action, exactly one wins the conditional transaction; a
// loser reads the workload again, since it may now call for another action.
func (s *core) enforce(ctx context.Context, w Workload, u Usage, ledgerAt time.Time) ([]Decision, error) {
	var won []Decision
	for range 4 {
		action, k := nextAction(w)
		if action == "" {
			return won, nil
		}
		d, ok, err := s.decide(ctx, w, u, action, k)
		if err != nil {
			return won, err
		}
		if ok {
			s.metrics.Duration(MetricLedgerToEnforcement, s.now().Sub(ledgerAt), map[string]string{"Action": action})
			s.log.InfoContext(ctx, "spend cap action", "action", action, "workload", w.ID,
				"attributed", d.Attributed, "cap", d.Cap, "event", d.EventID, "record", d.RecordID, "epoch", d.CapEpoch, "step", k)
			return append(won, d), nil
		}
		if w, err = s.asWorkloads().Get(ctx, w.ID); err != nil {
			return won, err
		}
	}
	return won, nil
}

// decide commits one cap action: the workload update (conditioned on the
// state it was decided from), the decision and its page, in one
// transaction. It reports false when another Apply got there first.
func (s *core) decide(ctx context.Context, w Workload, u Usage, action string, k int64) (Decision, bool, error) {
	now := s.now()
	// Over its cap, the workload is reconciled on the reconciler's next run.
	next, err := s.nextReconciliation(ctx, w)
	if err != nil {
		return Decision{}, false, err
	}
	w.NextReconAt = next
	if u.EventID == "" {
		if u.EventID, err = s.knownEvent(ctx, u.RecordID); err != nil {
			return Decision{}, false, err
		}
	}
	d := Decision{WorkloadID: w.ID, Action: action, EventID: u.EventID, RecordID: u.RecordID, Units: u.Units,
		Attributed: w.Total, Cap: w.Cap, Step: k, CapEpoch: w.CapEpoch, ObservedAt: u.ObservedAt.UTC(),
		DecidedAt: now.UTC(), DedupKey: DedupKey(w.ID, action, w.CapEpoch, k),
		Line:         PageLine(action, w.ID, w.Total, w.Cap, u.EventID, u.RecordID, u.ObservedAt),
		LastAccepted: w.LastAccepted, NextReconAt: w.NextReconAt}
	if w.PeriodID != "" {
		// The cap is the period's: the page names it after the seed's
		// fields, in its zone.
		p, err := w.Period()
		if err != nil {
			return Decision{}, false, err
		}
		d.Line += " period=" + p.String()
	}
	sk := decisionSK(w.CapEpoch, k)

	cond := expression.Name("cap_epoch").Equal(expression.Value(w.CapEpoch)).
		And(expression.Name("cap").Equal(expression.Value(w.Cap)))
	upd := expression.Set(expression.Name("esc_level"), expression.Value(k)).
		Set(expression.Name("last_decision"), expression.Value(sk)).
		Set(expression.Name("next_recon_at"), expression.Value(ddb.Stamp(next))).
		Set(expression.Name("updated_at"), expression.Value(ddb.Stamp(now)))
	if action == ActionPause {
		cond = cond.And(expression.Name("status").Equal(expression.Value(string(StatusActive))))
		upd = upd.Set(expression.Name("status"), expression.Value(string(StatusPaused)))
	} else {
		cond = cond.And(expression.Name("status").Equal(expression.Value(string(StatusPaused)))).
			And(expression.Name("esc_level").LessThan(expression.Value(k)))
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return d, false, err
	}
	di := decisionItem{PK: WorkloadPK(w.ID), SK: sk, WorkloadID: w.ID, Action: action, EventID: u.EventID,
		RecordID: u.RecordID, Units: u.Units, Attributed: d.Attributed, Cap: d.Cap, Step: k, CapEpoch: w.CapEpoch,
		ObservedAt: ddb.Stamp(u.ObservedAt), DecidedAt: ddb.Stamp(now), DedupKey: d.DedupKey, Line: d.Line,
		LastEventID: w.LastAccepted.EventID, LastRecordID: w.LastAccepted.RecordID, NextReconAt: ddb.Stamp(w.NextReconAt)}
	if u.EventID != "" {
		di.GSI1PK, di.GSI1SK = eventPK(u.EventID), sk
	}
	item, err := attributevalue.MarshalMap(di)
	if err != nil {
		return d, false, fmt.Errorf("spend: encode decision: %w", err)
	}
	page, err := s.pages.EnqueueItem(s.capPage(d, w), now)
	if err != nil {
		return d, false, fmt.Errorf("spend: cap page: %w", err)
	}
	err = s.transact(ctx, []types.TransactWriteItem{
		{Update: &types.Update{TableName: aws.String(s.workloads), Key: workloadKey(w.ID),
			UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()}},
		{Put: &types.Put{TableName: aws.String(s.ledger), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		page,
	})
	if _, _, ok := cancelled(err); ok {
		return d, false, nil
	}
	if err != nil {
		return d, false, fmt.Errorf("spend: %s workload %s: %w", action, w.ID, err)
	}
	return d, true, nil
}

// knownEvent is the webhook event ID known for a record that reached the
// decision without one (through the poll): the event its ledger entry
// kept, when the webhook applied it first, or the event its deferral kept.
// "" when none is known.
func (s *core) knownEvent(ctx context.Context, recordID string) (string, error) {
	if recordID == "" {
		return "", nil
	}
	e, err := s.entry(ctx, recordID)
	if err == nil && e.EventID != "" {
		return e.EventID, nil
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		return "", fmt.Errorf("spend: event of %s: %w", recordID, err)
	}
	d, err := s.asLedger().GetDeferred(ctx, recordID)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("spend: event of %s: %w", recordID, err)
	}
	return d.EventID, nil
}

// capPage is the page of a cap action, routed to the workload's owner.
func (s *core) capPage(d Decision, w Workload) pager.Event {
	details := map[string]any{
		"action": d.Action, "workload": d.WorkloadID, "attributed": d.Attributed, "cap": d.Cap,
		"event": d.EventID, "record": d.RecordID, "observed": d.ObservedAt.Format(time.RFC3339),
		"cap_epoch": d.CapEpoch, "step": d.Step, "owner": w.Owner,
		"last_accepted_event": map[string]any{
			"event": w.LastAccepted.EventID, "record": w.LastAccepted.RecordID,
			"observed": formatOptional(w.LastAccepted.ObservedAt)},
		"next_reconciliation": formatOptional(w.NextReconAt),
	}
	return pager.Event{RoutingKey: w.RoutingKey, EventAction: pager.ActionTrigger, DedupKey: d.DedupKey,
		Payload: &pager.Payload{Summary: d.Line, Source: s.source, Severity: pager.SeverityCritical,
			Timestamp: d.DecidedAt, Component: d.WorkloadID, Group: w.Owner, Class: "spend_cap",
			CustomDetails: details}}
}

func formatOptional(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// Admission is the answer to "may this workload start new work?".
type Admission struct {
	Allowed    bool
	Reason     string
	Attributed int64
	Cap        int64
	Status     string
	// Period is the current period (empty for a lifetime total), in the
	// workload's zone, and PeriodEnd its end: Attributed is its total.
	Period    string
	PeriodEnd time.Time
}

// Admission reasons.
const (
	ReasonSpendCap = "spend_cap"
	ReasonRetired  = "retired"
)

// Admission tells whether workload id may start new work: not when it is
// paused (spend_cap), nor when its total is over its cap whatever its
// status says (spend_cap), nor when it is retired. Only an operator's
// [Caps.ForceResume] admits work over the cap, and only in the cap
// epoch it opened. An unknown workload gives [ErrUnknownWorkload].
//
// The total is the current period's. When the clock has crossed a
// boundary that no record or reconciliation run has crossed yet, the
// answer is the new period's as the boundary will make it (a total of
// zero; a workload its cap paused is admitted when its policy is resume)
// without writing anything: admission only reads.
func (s *Caps) Admission(ctx context.Context, id string) (Admission, error) {
	w, err := s.get(ctx, id)
	if err != nil {
		return Admission{}, err
	}
	var a Admission
	if !w.Periods.Lifetime() {
		p, stored, err := s.periodNow(w)
		if err != nil {
			return Admission{}, err
		}
		if !stored {
			w = w.atBoundary()
		}
		a.Period, a.PeriodEnd = p.String(), p.End
	}
	a.Allowed, a.Attributed, a.Cap, a.Status = true, w.Total, w.Cap, string(w.Status)
	switch {
	case w.Status == StatusRetired:
		a.Allowed, a.Reason = false, ReasonRetired
	case w.Status == StatusPaused, w.OverCap() && !w.overridden():
		a.Allowed, a.Reason = false, ReasonSpendCap
	}
	return a, nil
}

// recheck takes the cap action w calls for with no new usage: after a cap
// change, or when reconciliation finds a workload resumed over its cap. The
// page names the last accepted record as the one that tipped it.
func (s *core) recheck(ctx context.Context, w Workload) ([]Decision, error) {
	if action, _ := nextAction(w); action == "" {
		return nil, nil
	}
	last := w.LastAccepted
	u := Usage{EventID: last.EventID, RecordID: last.RecordID, Units: last.Units, Path: last.Path,
		ObservedAt: last.ObservedAt}
	if u.ObservedAt.IsZero() {
		u.ObservedAt = s.now()
	}
	return s.enforce(ctx, w, u, s.now())
}

// Recheck takes the cap action w calls for although no record arrived: a
// workload resumed over its cap is paused again, with a page. A workload
// whose period the clock has left first crosses its boundary (so a
// reconciliation run, not only a record, starts the new period). It reads
// the workload again only when w calls for an action or a boundary.
func (s *Caps) Recheck(ctx context.Context, w Workload) ([]Decision, error) {
	if !w.Periods.Lifetime() && w.Status != StatusRetired {
		if _, stored, err := s.periodNow(w); err != nil || !stored {
			if err != nil {
				return nil, err
			}
			if w, err = s.rollTo(ctx, w.ID, s.now()); err != nil {
				return nil, err
			}
		}
	}
	if action, _ := nextAction(w); action == "" {
		return nil, nil
	}
	fresh, err := s.asWorkloads().Get(ctx, w.ID)
	if err != nil {
		return nil, err
	}
	return s.recheck(ctx, fresh)
}
