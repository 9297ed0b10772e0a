package spend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/period"
)

// Every record counts in the period that holds it: the workload's
// current total when that is the record's period, the item of a past
// period (WL#<id>/PERIOD#<period ID>, workloads table) when it is late,
// and a record of a later period first moves the workload to that period
// (period_roll.go). Every write to the current total is conditioned on
// the stored current period, and a late record's on the current period
// being later than its own, so a process whose cached period is stale
// (another one crossed the boundary) has its transaction cancelled and
// reads the workload again: a record is never counted in the wrong
// period.

// errWorkloadMoved means the workload changed between a transaction and
// the read that followed its cancellation (another process crossed a
// period boundary, or the cache of its period was stale): the record is
// unapplied and is tried again.
var errWorkloadMoved = errors.New("spend: workload changed during apply, retry")

// periodAttempts bounds how often one record is tried again because its
// workload moved to another period meanwhile.
const periodAttempts = 5

// target is where a record's units go.
type target struct {
	// period is the record's period ID; "" for a lifetime total.
	period string
	// late means the period is before the workload's current one: the
	// units go to the period's item, not to the current total.
	late bool
	// closed means the late period was past its close when the record
	// arrived: its usage can no longer change that invoice's decision.
	closed bool
	// close is the period's close (late periods only).
	close time.Time
}

// countedAt is the instant that decides u's period: when it occurred, or
// when it was observed when it carries no time. A record dated after now
// counts as of now, so a producer's fast clock cannot move a workload
// into a period that has not begun.
func (s *core) countedAt(u Usage) time.Time {
	at := u.OccurredAt
	if at.IsZero() {
		at = u.ObservedAt
	}
	if now := s.now(); at.IsZero() || at.After(now) {
		return now
	}
	return at
}

// targetAt is where a record of workload id counted at instant at goes,
// from the cached period of the workload. A record of a period after the
// workload's current one moves the workload to it first, once, whoever
// crosses first.
func (s *core) targetAt(ctx context.Context, id string, at time.Time) (target, error) {
	for range periodAttempts {
		cp := s.periods.get(id)
		if cp.periods.Lifetime() {
			return target{}, nil
		}
		p, err := cp.periods.At(at)
		if err != nil {
			return target{}, err
		}
		pid := p.ID()
		switch {
		case pid == cp.current:
			return target{period: pid}, nil
		case pid < cp.current:
			closes := period.Close(p, cp.periods.Grace)
			return target{period: pid, late: true, close: closes, closed: s.now().After(closes)}, nil
		}
		if _, err := s.rollTo(ctx, id, at); err != nil {
			return target{}, err
		}
	}
	return target{}, fmt.Errorf("spend: workload %s: %w", id, errWorkloadMoved)
}

// periodCond is the condition a write to the current total of a workload
// holds on its stored period: none at all for a lifetime total (as the
// earlier build's items have), else the record's period.
func periodCond(tg target) expression.ConditionBuilder {
	if tg.period == "" {
		return expression.AttributeNotExists(expression.Name("period_id"))
	}
	return expression.Name("period_id").Equal(expression.Value(tg.period))
}

// liveWorkload is the condition every write of a record holds on its
// workload: it exists and is not retired.
func liveWorkload() expression.ConditionBuilder {
	return expression.AttributeExists(expression.Name("pk")).
		And(expression.Name("status").NotEqual(expression.Value(string(StatusRetired))))
}

// lateCheck conditions a transaction of late records on their workload:
// live, and its current period later than every one of theirs (latest is
// the latest of their period IDs, which sort by start).
func (s *core) lateCheck(id, latest string) (types.TransactWriteItem, error) {
	cond := liveWorkload().And(expression.Name("period_id").GreaterThan(expression.Value(latest)))
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.workloads),
		Key: workloadKey(id), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()}}, nil
}

// prefixPeriod is the sort key prefix of a workload's past periods, in
// the workload's partition of the workloads table.
const prefixPeriod = "PERIOD#"

func periodKey(id, pid string) map[string]types.AttributeValue {
	return ddb.Key(WorkloadPK(id), prefixPeriod+pid)
}

// periodAdd adds units of late records (n of them) to the item of their
// past period; past its close they also count as late usage. It holds no
// condition: the workload's check in the same transaction does.
func (s *core) periodAdd(id string, tg target, units, n int64, now string) (types.TransactWriteItem, error) {
	upd := expression.Add(expression.Name("total"), expression.Value(units)).
		Add(expression.Name("late_records"), expression.Value(n)).
		Set(expression.Name("workload_id"), expression.Value(id)).
		Set(expression.Name("period_id"), expression.Value(tg.period)).
		Set(expression.Name("updated_at"), expression.Value(now))
	if tg.closed {
		upd = upd.Add(expression.Name("late_units"), expression.Value(units)).
			Set(expression.Name("last_late_at"), expression.Value(now))
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(s.workloads), Key: periodKey(id, tg.period),
		UpdateExpression: expr.Update(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()}}, nil
}

// totalItems are what a record (or a group of n records of one target)
// writes to its workload: the workload's item, whose cancellation means
// the workload is retired, vanished, over MaxTotal or in another period
// than tg was chosen for, and the items to append at the transaction's
// end, which hold no condition. For the current period (or a lifetime
// total) that is the total's update and nothing more, as before periods;
// for a late period a check of the workload and the period's addition.
func (s *core) totalItems(id string, tg target, units, n int64, last Usage, now string) (types.TransactWriteItem, []types.TransactWriteItem, error) {
	if !tg.late {
		wl, err := s.totalUpdate(id, tg, units, last, now)
		return wl, nil, err
	}
	check, err := s.lateCheck(id, tg.period)
	if err != nil {
		return types.TransactWriteItem{}, nil, err
	}
	add, err := s.periodAdd(id, tg, units, n, now)
	if err != nil {
		return types.TransactWriteItem{}, nil, err
	}
	return check, []types.TransactWriteItem{add}, nil
}
