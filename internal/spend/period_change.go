package spend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/period"
)

// ActionSetPeriod is the decision recorded when a workload's period is
// changed ([Caps.SetPeriod]).
const ActionSetPeriod = "set_period"

// PeriodChange is a change of a workload's recurrence: Recurrence is in
// force from From, the end of the period that was current when it was
// made.
type PeriodChange struct {
	Recurrence period.Recurrence
	From       time.Time
}

// PeriodChangeLine is the decision line of a change of period: the
// recurrence it changes to, the instant it takes effect (in the zone of
// the period it ends) and the recurrence before it.
//
//	spend period change workload=workload-7 to=month anchored 2027-01-01T00:00:00 America/New_York from=2026-12-31T00:00:00-08:00 was=month anchored 2026-01-31T00:00:00 America/Los_Angeles
func PeriodChangeLine(workloadID string, to period.Recurrence, from time.Time, was period.Recurrence) string {
	return fmt.Sprintf("spend period change workload=%s to=%s from=%s was=%s", workloadID, to, from.Format(time.RFC3339), was)
}

// SetPeriod changes workload id's period (its interval, anchor and zone;
// the grace and boundary policy stay) at the end of its current period,
// and records the decision. It returns the change. The current period
// keeps its bounds, its total and its cap: the invoice it protects was
// set up under them, and splitting it would leave two partial periods
// that match no provider's invoice. The boundary applies the change: the
// first period after it starts at that boundary and ends at the new
// recurrence's next boundary, and whole periods of the new recurrence
// follow. Late records of periods before the change still count by the
// recurrence they were in. A second change before the boundary replaces
// the first.
//
// A lifetime total has no boundary to change at, and none (a lifetime
// total) is not a period to change to: both are [ErrInvalidWorkload], as
// is a recurrence the buckets of a sums source would straddle
// ([*SourceStraddleError]). An unknown workload is [ErrUnknownWorkload].
func (s *Caps) SetPeriod(ctx context.Context, id string, to period.Recurrence) (PeriodChange, error) {
	if to.Interval == period.None {
		return PeriodChange{}, fmt.Errorf("spend: set period of %s: %w: none has no boundaries; give day, week, month or year", id, ErrInvalidWorkload)
	}
	if err := to.Validate(); err != nil {
		return PeriodChange{}, fmt.Errorf("spend: set period of %s: %w: %w", id, ErrInvalidWorkload, err)
	}
	if err := s.fitsSources(Periods{Recurrence: to}); err != nil {
		return PeriodChange{}, fmt.Errorf("spend: set period of %s: %w", id, err)
	}
	for range periodAttempts {
		// The change is made in the period that holds now: a boundary the
		// clock has passed with no record since is crossed first.
		w, err := s.rollTo(ctx, id, s.now())
		if err != nil {
			return PeriodChange{}, fmt.Errorf("spend: set period of %s: %w", id, err)
		}
		if w.Periods.Lifetime() {
			return PeriodChange{}, fmt.Errorf("spend: set period of %s: %w: a lifetime total has no boundary to change at; create a workload with a period",
				id, ErrInvalidWorkload)
		}
		change, ok, err := s.setPeriod(ctx, w, to)
		if err != nil {
			return PeriodChange{}, fmt.Errorf("spend: set period of %s: %w", id, err)
		}
		if ok {
			s.log.InfoContext(ctx, "spend period change", "workload", id, "to", to.String(), "from", change.From)
			return change, nil
		}
	}
	return PeriodChange{}, fmt.Errorf("spend: set period of %s: %w", id, errWorkloadMoved)
}

// setPeriod is one attempt at SetPeriod: the pending change on w's item,
// conditioned on its current period, and its decision, in one
// transaction. It reports false when the workload crossed a boundary
// meanwhile.
func (s *core) setPeriod(ctx context.Context, w Workload, to period.Recurrence) (PeriodChange, bool, error) {
	cur, err := w.Period()
	if err != nil {
		return PeriodChange{}, false, err
	}
	now := s.now()
	from := cur.End.In(w.Periods.Recurrence.Zone)
	change := PeriodChange{Recurrence: to, From: from}
	c := to.Config()
	upd := expression.Set(expression.Name("pending_period"), expression.Value(c.Period)).
		Set(expression.Name("pending_anchor"), expression.Value(c.Anchor)).
		Set(expression.Name("pending_time_zone"), expression.Value(c.TimeZone)).
		Set(expression.Name("pending_from"), expression.Value(ddb.Stamp(from))).
		Set(expression.Name("updated_at"), expression.Value(ddb.Stamp(now)))
	cond := expression.Name("period_id").Equal(expression.Value(w.PeriodID))
	wl, err := updateItem(s.workloads, workloadKey(w.ID), upd, &cond)
	if err != nil {
		return PeriodChange{}, false, err
	}
	item, err := attributevalue.MarshalMap(decisionItem{PK: WorkloadPK(w.ID),
		SK:         fmt.Sprintf("%s%08d#period#%s", prefixDecision, w.CapEpoch, ddb.Stamp(now)),
		WorkloadID: w.ID, Action: ActionSetPeriod, Attributed: w.Total, Cap: w.Cap, CapEpoch: w.CapEpoch,
		ObservedAt: ddb.Stamp(now), DecidedAt: ddb.Stamp(now),
		Line: PeriodChangeLine(w.ID, to, from, w.Periods.Recurrence)})
	if err != nil {
		return PeriodChange{}, false, fmt.Errorf("encode period change: %w", err)
	}
	err = s.transact(ctx, []types.TransactWriteItem{wl, {Put: &types.Put{TableName: aws.String(s.ledger), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)")}}})
	if _, _, ok := cancelled(err); ok {
		return PeriodChange{}, false, nil
	}
	if err != nil {
		return PeriodChange{}, false, err
	}
	return change, true, nil
}

// pendingStored is a workload item's pending change as stored.
type pendingStored struct{ period, anchor, zone, from string }

// applyPending makes the roll into p apply w's pending change when p is
// at or after its From: the pending recurrence becomes the one in force
// since From, and the one it replaces is kept as Was. The roll holds the
// pending change as it read it, so a change made meanwhile is not lost.
func applyPending(upd expression.UpdateBuilder, cond expression.ConditionBuilder, w Workload, p period.Period) (expression.UpdateBuilder, expression.ConditionBuilder) {
	if w.pending.from == "" {
		cond = cond.And(expression.AttributeNotExists(expression.Name("pending_from")))
	} else {
		cond = cond.And(expression.Name("pending_from").Equal(expression.Value(w.pending.from))).
			And(expression.Name("pending_period").Equal(expression.Value(w.pending.period))).
			And(expression.Name("pending_anchor").Equal(expression.Value(w.pending.anchor))).
			And(expression.Name("pending_time_zone").Equal(expression.Value(w.pending.zone)))
	}
	pc := w.Periods.Pending
	if pc == nil || p.Start.Before(pc.From) {
		return upd, cond
	}
	to, was := pc.Recurrence.Config(), w.Periods.Recurrence.Config()
	upd = upd.Set(expression.Name("period"), expression.Value(to.Period)).
		Set(expression.Name("anchor"), expression.Value(to.Anchor)).
		Set(expression.Name("time_zone"), expression.Value(to.TimeZone)).
		Set(expression.Name("period_since"), expression.Value(w.pending.from)).
		Set(expression.Name("was_period"), expression.Value(was.Period)).
		Set(expression.Name("was_anchor"), expression.Value(was.Anchor)).
		Set(expression.Name("was_time_zone"), expression.Value(was.TimeZone))
	return upd, cond
}

// changesOf reads the stored changes of period onto p: the pending one
// (unless it is the one applied), and the recurrence before the one in
// force.
func (it workloadItem) changesOf(p *Periods) error {
	var errs []error
	if it.PendingPeriod != "" && it.PendingFrom != it.PeriodSince {
		rec, err := period.Config{Period: it.PendingPeriod, Anchor: it.PendingAnchor, TimeZone: it.PendingTimeZone}.Recurrence()
		from := ddb.ParseStamp(it.PendingFrom)
		if err == nil && from.IsZero() {
			err = fmt.Errorf("pending_from %q is not a time", it.PendingFrom)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("stored pending period: %w", err))
		} else {
			p.Pending = &PeriodChange{Recurrence: rec, From: from}
		}
	}
	if it.WasPeriod != "" {
		rec, err := period.Config{Period: it.WasPeriod, Anchor: it.WasAnchor, TimeZone: it.WasTimeZone}.Recurrence()
		since := ddb.ParseStamp(it.PeriodSince)
		if err == nil && since.IsZero() {
			err = fmt.Errorf("period_since %q is not a time", it.PeriodSince)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("stored earlier period: %w", err))
		} else {
			p.Was, p.Since = &rec, since
		}
	}
	return errors.Join(errs...)
}
