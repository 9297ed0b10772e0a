package spend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookline/hookline/internal/ddb"
)

// RunSchedule is the reconciler's schedule as it publishes it at the start
// of every run: when it runs next, how often it runs, and the share of its
// cap at which a workload is reconciled on every run. The spend path
// derives each workload's next reconciliation deadline from it, so a page
// says when the reconciler will really look next.
type RunSchedule struct {
	NextRun      time.Time
	Every        time.Duration
	NearCapRatio float64
}

// runScheduleItem is the stored form of a [RunSchedule] in the ledger table.
type runScheduleItem struct {
	PK           string  `dynamodbav:"pk"`
	SK           string  `dynamodbav:"sk"`
	NextRun      string  `dynamodbav:"next_run_at"`
	EverySeconds int64   `dynamodbav:"every_s"`
	NearCapRatio float64 `dynamodbav:"near_cap_ratio"`
	UpdatedAt    string  `dynamodbav:"updated_at"`
}

// tickAtOrAfter is the first run at or after t: runs fall on NextRun plus
// a whole number of Every.
func (rs RunSchedule) tickAtOrAfter(t time.Time) time.Time {
	if rs.Every <= 0 {
		return rs.NextRun
	}
	d := t.Sub(rs.NextRun)
	n := d / rs.Every // rounds toward zero: up for a negative d
	if d > 0 && d%rs.Every != 0 {
		n++
	}
	return rs.NextRun.Add(n * rs.Every)
}

// NearCap reports whether the reconciler reconciles w on every run: it is
// paused, or its total is at least ratio of its cap.
func (w Workload) NearCap(ratio float64) bool {
	return w.Status == StatusPaused || float64(w.Total) >= ratio*float64(w.Cap)
}

// PublishSchedule records the reconciler's schedule; see [RunSchedule].
func (s *Recon) PublishSchedule(ctx context.Context, rs RunSchedule) error {
	item, err := attributevalue.MarshalMap(runScheduleItem{PK: pkRunSchedule, SK: pkRunSchedule,
		NextRun: ddb.Stamp(rs.NextRun), EverySeconds: int64(rs.Every / time.Second),
		NearCapRatio: rs.NearCapRatio, UpdatedAt: ddb.Stamp(s.now())})
	if err != nil {
		return fmt.Errorf("spend: encode run schedule: %w", err)
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.ledger), Item: item}); err != nil {
		return fmt.Errorf("spend: publish run schedule: %w", err)
	}
	return nil
}

// runSchedule reads the reconciler's published schedule, if any.
func (s *core) runSchedule(ctx context.Context) (RunSchedule, bool, error) {
	it, err := getItem[runScheduleItem](ctx, s.db, s.ledger, ddb.Key(pkRunSchedule, pkRunSchedule), "run schedule", ErrNotFound)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return RunSchedule{}, false, nil
		}
		return RunSchedule{}, false, err
	}
	return RunSchedule{NextRun: ddb.ParseStamp(it.NextRun), Every: time.Duration(it.EverySeconds) * time.Second,
		NearCapRatio: it.NearCapRatio}, true, nil
}

// nextReconciliation is when the reconciler will next look at w, from its
// published schedule: the next run for a workload it reconciles on every
// run (near its cap or paused), else the first run at or after the deadline
// its last reconciliation (or creation) set. Before the reconciler has ever
// run, it is one poll interval from now, the schedule's rate.
func (s *core) nextReconciliation(ctx context.Context, w Workload) (time.Time, error) {
	now := s.now()
	rs, found, err := s.runSchedule(ctx)
	if err != nil {
		return time.Time{}, err
	}
	if !found {
		if w.NextReconAt.After(now) {
			return w.NextReconAt, nil
		}
		return now.Add(s.contracts[PathPoll].Interval), nil
	}
	next := rs.tickAtOrAfter(now)
	if w.NearCap(rs.NearCapRatio) || w.NextReconAt.IsZero() {
		return next, nil
	}
	return rs.tickAtOrAfter(maxTime(next, w.NextReconAt)), nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
