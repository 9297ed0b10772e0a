package spend

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/period"
)

// Boundary actions: the decision recorded when a workload its cap paused
// reaches a new period ([BoundaryPolicy]).
const (
	ActionResumeAtBoundary = "resume_at_boundary"
	ActionStayAtBoundary   = "stay_at_boundary"
)

// rollTo moves workload id to the period that holds at, when its stored
// current period is an earlier one: the boundary. The first record (or
// reconciliation run) of the new period does it, exactly once, whoever
// crosses first: the move is conditioned on the stored period, total,
// cap epoch and status it was read with. It returns the workload as read
// after the move, and keeps the cache of its period.
func (s *core) rollTo(ctx context.Context, id string, at time.Time) (Workload, error) {
	for range periodAttempts {
		w, err := s.get(ctx, id)
		if err != nil {
			return Workload{}, err
		}
		if w.periodErr != nil {
			return Workload{}, w.periodErr
		}
		if w.Periods.Lifetime() || w.Status == StatusRetired {
			return w, nil
		}
		p, err := w.Periods.At(at)
		if err != nil {
			return Workload{}, err
		}
		if p.ID() <= w.PeriodID {
			return w, nil
		}
		if err := s.roll(ctx, w, p); err != nil {
			return Workload{}, err
		}
	}
	return Workload{}, fmt.Errorf("spend: workload %s: cross into a new period: %w", id, errWorkloadMoved)
}

// roll is one attempt at w's boundary into period p, in one transaction:
//
//   - the workload's item: its current period becomes p with a total of
//     zero, its cap epoch grows by one (so the new period's cap pages
//     under new dedup keys) and its escalation level is zero; a workload
//     its cap paused becomes active when its policy is resume; a change
//     of period pending from this boundary takes effect
//     (period_change.go);
//   - the item of the period it leaves (PERIOD#<old>) adds the period's
//     final total and keeps its cap and close;
//   - for a paused workload, the decision (resume or stay) and its page.
//
// A cancelled transaction is not an error: the caller reads again.
func (s *core) roll(ctx context.Context, w Workload, p period.Period) error {
	now := s.now()
	old, err := w.Period()
	if err != nil {
		return err
	}
	upd := expression.Set(expression.Name("period_id"), expression.Value(p.ID())).
		Set(expression.Name("prev_period_id"), expression.Value(w.PeriodID)).
		Set(expression.Name("total"), expression.Value(0)).
		Set(expression.Name("esc_level"), expression.Value(0)).
		Set(expression.Name("updated_at"), expression.Value(ddb.Stamp(now))).
		Add(expression.Name("cap_epoch"), expression.Value(1))
	cond := expression.Name("period_id").Equal(expression.Value(w.PeriodID)).
		And(expression.Name("total").Equal(expression.Value(w.Total))).
		And(expression.Name("cap_epoch").Equal(expression.Value(w.CapEpoch))).
		And(expression.Name("status").Equal(expression.Value(string(w.Status))))
	upd, cond = applyPending(upd, cond, w, p)
	var decision []types.TransactWriteItem
	if w.Status == StatusPaused {
		action := ActionStayAtBoundary
		if w.Periods.policy() == AtBoundaryResume {
			action = ActionResumeAtBoundary
			upd = upd.Set(expression.Name("status"), expression.Value(string(StatusActive)))
		}
		sk := boundarySK(w.CapEpoch)
		upd = upd.Set(expression.Name("last_decision"), expression.Value(sk))
		if decision, err = s.boundaryDecision(w, action, sk, old, p, now); err != nil {
			return err
		}
	}
	wl, err := updateItem(s.workloads, workloadKey(w.ID), upd, &cond)
	if err != nil {
		return err
	}
	closed := expression.Add(expression.Name("total"), expression.Value(w.Total)).
		Set(expression.Name("workload_id"), expression.Value(w.ID)).
		Set(expression.Name("period_id"), expression.Value(w.PeriodID)).
		Set(expression.Name("cap"), expression.Value(w.Cap)).
		Set(expression.Name("ended_at"), expression.Value(ddb.Stamp(now))).
		Set(expression.Name("updated_at"), expression.Value(ddb.Stamp(now)))
	prev, err := updateItem(s.workloads, periodKey(w.ID, w.PeriodID), closed, nil)
	if err != nil {
		return err
	}
	err = s.transact(ctx, append([]types.TransactWriteItem{wl, prev}, decision...))
	if _, _, ok := cancelled(err); ok {
		return nil // another process crossed first, or the workload moved: read again
	}
	if err != nil {
		return fmt.Errorf("spend: workload %s: cross into period %s: %w", w.ID, p, err)
	}
	s.log.InfoContext(ctx, "spend period boundary", "workload", w.ID, "from", old.String(), "to", p.String(),
		"total", w.Total, "status", w.Status)
	return nil
}

// boundarySK is the sort key of a boundary decision: after every
// decision of the cap epoch that ends with the period.
func boundarySK(epoch int64) string { return fmt.Sprintf("%s%08d#boundary", prefixDecision, epoch) }

// boundaryDecision is a paused workload's decision at its boundary into
// p, and the page that tells its owner: the period it leaves, its final
// total and cap, and what the policy did.
func (s *core) boundaryDecision(w Workload, action, sk string, old, p period.Period, now time.Time) ([]types.TransactWriteItem, error) {
	last := w.LastAccepted
	d := Decision{WorkloadID: w.ID, Action: action, EventID: last.EventID, RecordID: last.RecordID,
		Attributed: w.Total, Cap: w.Cap, Step: w.EscalationLevel, CapEpoch: w.CapEpoch,
		ObservedAt: now.UTC(), DecidedAt: now.UTC(), DedupKey: DedupKey(w.ID, action, w.CapEpoch, 0),
		Line: PageLine(action, w.ID, w.Total, w.Cap, last.EventID, last.RecordID, now) + " period=" + p.String() +
			" previous=" + old.String(),
		LastAccepted: last}
	item, err := attributevalue.MarshalMap(decisionItem{PK: WorkloadPK(w.ID), SK: sk, WorkloadID: w.ID, Action: action,
		EventID: d.EventID, RecordID: d.RecordID, Attributed: d.Attributed, Cap: d.Cap, Step: d.Step, CapEpoch: d.CapEpoch,
		ObservedAt: ddb.Stamp(now), DecidedAt: ddb.Stamp(now), DedupKey: d.DedupKey, Line: d.Line,
		LastEventID: last.EventID, LastRecordID: last.RecordID})
	if err != nil {
		return nil, fmt.Errorf("spend: encode boundary decision: %w", err)
	}
	ev := s.capPage(d, w)
	ev.Payload.Severity, ev.Payload.Class = pager.SeverityInfo, "spend_period"
	if action == ActionStayAtBoundary {
		ev.Payload.Severity = pager.SeverityWarning
	}
	ev.Payload.CustomDetails["period"], ev.Payload.CustomDetails["previous_period"] = p.String(), old.String()
	page, err := s.pages.EnqueueItem(ev, now)
	if err != nil {
		return nil, fmt.Errorf("spend: boundary page: %w", err)
	}
	return []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(s.ledger), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)")}}, page}, nil
}

// updateItem is a transaction's update of key in table, with an optional
// condition.
func updateItem(table string, key map[string]types.AttributeValue, upd expression.UpdateBuilder, cond *expression.ConditionBuilder) (types.TransactWriteItem, error) {
	b := expression.NewBuilder().WithUpdate(upd)
	if cond != nil {
		b = b.WithCondition(*cond)
	}
	expr, err := b.Build()
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(table), Key: key,
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()}}, nil
}

// LateLine is the page line of late usage: usage of a period that
// arrived after its close, when it could no longer change that
// invoice's cap decision.
//
//	spend late usage workload=workload-7 period=2026-10-31T00:00:00-07:00/2026-11-30T00:00:00-08:00 units=40 record=ur_9 closed=2026-11-30T09:00:00Z
func LateLine(kind, workloadID string, p period.Period, units int64, recordID string, closed time.Time) string {
	return fmt.Sprintf("spend %s workload=%s period=%s units=%d record=%s closed=%s",
		kind, workloadID, p, units, recordID, closed.UTC().Format(time.RFC3339))
}

// Late usage kinds, as the page line names them.
const (
	lateUsage = "late usage"
	lateDown  = "late revision down"
)

// pageLate pages workload id's owner that usage of tg's period arrived
// after the period's close: once per workload and period, in the name of
// the record that first did, with its amount. The period's item keeps
// that the page went, conditioned on it not having gone, in the page's
// transaction; the late units themselves were added with the record.
func (s *core) pageLate(ctx context.Context, id string, tg target, u Usage) error {
	return s.pageLateAs(ctx, id, tg, u, u.Units, lateUsage, "late_paged_at", "spend-late:")
}

// pageLateDown pages a provider's downward revision of a bucket in a
// period past its close, as pageLate pages late usage: once per workload
// and period, with the amount it went down by.
func (s *core) pageLateDown(ctx context.Context, id string, tg target, u Usage, down int64) error {
	return s.pageLateAs(ctx, id, tg, u, down, lateDown, "late_down_paged_at", "spend-late-down:")
}

func (s *core) pageLateAs(ctx context.Context, id string, tg target, u Usage, amount int64, kind, mark, dedupPrefix string) error {
	w, err := s.get(ctx, id)
	if err != nil {
		return fmt.Errorf("late usage page: %w", err)
	}
	p, err := period.ParseID(tg.period)
	if err != nil {
		return err
	}
	if z := w.Periods.Recurrence.Zone; z != nil {
		p = p.In(z)
	}
	now := s.now()
	line := LateLine(kind, id, p, amount, u.RecordID, tg.close)
	dedup := dedupPrefix + id + ":" + tg.period
	ev := pager.Event{RoutingKey: w.RoutingKey, EventAction: pager.ActionTrigger, DedupKey: dedup,
		Payload: &pager.Payload{Summary: line, Source: s.source, Severity: pager.SeverityWarning, Timestamp: now.UTC(),
			Component: id, Group: w.Owner, Class: "spend_late_usage",
			CustomDetails: map[string]any{"workload": id, "period": p.String(), "units": amount, "record": u.RecordID,
				"event": u.EventID, "closed": tg.close.UTC().Format(time.RFC3339), "kind": kind, "owner": w.Owner}}}
	page, err := s.pages.EnqueueItem(ev, now)
	if err != nil {
		return fmt.Errorf("late usage page: %w", err)
	}
	cond := expression.AttributeNotExists(expression.Name(mark))
	upd := expression.Set(expression.Name(mark), expression.Value(ddb.Stamp(now))).
		Set(expression.Name(mark+"_units"), expression.Value(amount)).
		Set(expression.Name(mark+"_record"), expression.Value(u.RecordID)).
		Set(expression.Name("workload_id"), expression.Value(id)).
		Set(expression.Name("period_id"), expression.Value(tg.period))
	it, err := updateItem(s.workloads, periodKey(id, tg.period), upd, &cond)
	if err != nil {
		return err
	}
	err = s.transact(ctx, []types.TransactWriteItem{it, page})
	if _, _, ok := cancelled(err); ok {
		return nil // paged already
	}
	if err != nil {
		return fmt.Errorf("late usage page %s: %w", dedup, err)
	}
	s.log.WarnContext(ctx, "spend late usage", "workload", id, "period", p.String(), "units", amount,
		"record", u.RecordID, "kind", kind)
	return nil
}

// PeriodView is one period of a workload as explain and admission show
// it: its bounds in the workload's zone, its close, total and cap, and the
// usage that arrived after its close.
type PeriodView struct {
	Period period.Period
	Close  time.Time
	Total  int64
	// Cap is the cap when the period ended (the workload's cap for the
	// current period); 0 when no boundary recorded it.
	Cap int64
	// LateUnits is the usage that arrived after the close; LatePagedAt
	// when it was paged (once), and LateDownPagedAt when a downward
	// revision after the close was.
	LateUnits       int64
	LatePagedAt     time.Time
	LateDownPagedAt time.Time
}

// periodItem is the stored form of a past period (PERIOD#<period ID>).
type periodItem struct {
	PeriodID        string `dynamodbav:"period_id"`
	Total           int64  `dynamodbav:"total"`
	Cap             int64  `dynamodbav:"cap"`
	LateUnits       int64  `dynamodbav:"late_units"`
	LatePagedAt     string `dynamodbav:"late_paged_at"`
	LateDownPagedAt string `dynamodbav:"late_down_paged_at"`
}

// Periods returns workload id's current period and the one before it
// (absent for a lifetime total, and for a workload still in its first
// period), as of now: a current period the clock has left with no record
// since reads as the period that holds now, with a total of zero, and the
// one it left as the previous. Past periods are kept for as long as the
// workload (no expiry; at least 13 months, see docs/design.md).
func (s *Explainer) Periods(ctx context.Context, id string) (current, previous *PeriodView, err error) {
	w, err := s.get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if w.Periods.Lifetime() {
		return nil, nil, w.periodErr
	}
	cur, stored, err := s.periodNow(w)
	if err != nil {
		return nil, nil, err
	}
	current = &PeriodView{Period: cur, Close: period.Close(cur, w.Periods.Grace), Cap: w.Cap}
	prevID := w.PrevPeriodID
	if stored {
		current.Total = w.Total
	} else {
		prevID = w.PeriodID // the period the clock left, still holding its total
	}
	if prevID == "" {
		return current, nil, nil
	}
	p, err := period.ParseID(prevID)
	if err != nil {
		return nil, nil, err
	}
	p = p.In(w.Periods.Recurrence.Zone)
	previous = &PeriodView{Period: p, Close: period.Close(p, w.Periods.Grace)}
	it, found, err := ddb.Get[periodItem](ctx, s.db, &dynamodb.GetItemInput{TableName: aws.String(s.workloads),
		Key: periodKey(id, prevID), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, nil, fmt.Errorf("spend: period %s of %s: %w", prevID, id, err)
	}
	if !stored {
		previous.Total, previous.Cap = w.Total, w.Cap
	}
	if found {
		previous.Total += it.Total
		previous.Cap = max(previous.Cap, it.Cap)
		previous.LateUnits = it.LateUnits
		previous.LatePagedAt, previous.LateDownPagedAt = ddb.ParseStamp(it.LatePagedAt), ddb.ParseStamp(it.LateDownPagedAt)
	}
	return current, previous, nil
}

// periodNow is the period of w that holds now, and whether it is the one
// w's total counts (false: the clock crossed a boundary no record or run
// has crossed yet).
func (s *core) periodNow(w Workload) (period.Period, bool, error) {
	p, err := w.Periods.At(s.now())
	if err != nil {
		return period.Period{}, false, err
	}
	return p, p.ID() <= w.PeriodID, nil
}

// atBoundary is w as its next boundary would leave it, for a read that
// must not wait for a record to cross it (admission): a total of zero,
// and active again when its cap paused it and its policy is resume.
func (w Workload) atBoundary() Workload {
	w.Total, w.EscalationLevel = 0, 0
	if w.Status == StatusPaused && w.Periods.policy() == AtBoundaryResume {
		w.Status = StatusActive
	}
	w.Override = Override{}
	return w
}
