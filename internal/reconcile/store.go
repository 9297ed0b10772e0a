package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/spend"
)

// DB is the DynamoDB client the [Store] uses.
type DB = ddb.API

var _ DB = (*dynamodb.Client)(nil)

// StoreConfig configures [NewStore].
type StoreConfig struct {
	DB DB
	// Table is the ledger table (LedgerTable in infra/template.yaml).
	Table string
}

// Validate reports every problem with c at once.
func (c StoreConfig) Validate() error {
	var errs []error
	if c.DB == nil {
		errs = append(errs, errors.New("DB is nil"))
	}
	if c.Table == "" {
		errs = append(errs, errors.New("Table is empty"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// Store keeps the reconciler's cursor, run records, and each workload's
// schedule and interval changes. Operators read it through [Store.Cursor],
// [Store.Runs], [Store.Schedule] and [Store.IntervalChanges].
type Store struct {
	db    DB
	table string
}

// changeRetry is ChangeTier's budget against conflicts and throttling.
var changeRetry = ddb.Retry{Attempts: 10, Base: 5 * time.Millisecond, Max: 250 * time.Millisecond}

// NewStore returns a Store for cfg.
func NewStore(cfg StoreConfig) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Store{db: cfg.DB, table: cfg.Table}, nil
}

// Cursor is the export position up to which every published record has
// been folded into the ledger.
type Cursor struct {
	Position  time.Time
	RunID     string
	UpdatedAt time.Time
}

type cursorItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Position  string `dynamodbav:"position"`
	RunID     string `dynamodbav:"run_id"`
	UpdatedAt string `dynamodbav:"updated_at"`
}

// Cursor reads the cursor (consistently); found is false before the first
// successful run.
func (s *Store) Cursor(ctx context.Context) (c Cursor, found bool, err error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table),
		Key: cursorKey(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Cursor{}, false, fmt.Errorf("reconcile: read cursor: %w", err)
	}
	if len(out.Item) == 0 {
		return Cursor{}, false, nil
	}
	var ci cursorItem
	if err := attributevalue.UnmarshalMap(out.Item, &ci); err != nil {
		return Cursor{}, false, fmt.Errorf("reconcile: decode cursor: %w", err)
	}
	return Cursor{Position: ddb.ParseStamp(ci.Position), RunID: ci.RunID, UpdatedAt: ddb.ParseStamp(ci.UpdatedAt)}, true, nil
}

// AdvanceCursor moves the cursor to next, on condition that it still holds
// the position this run read (or is still absent when found is false). A
// failed condition is [ErrLostRace]: another run committed first.
func (s *Store) AdvanceCursor(ctx context.Context, read Cursor, found bool, next time.Time, runID string, now time.Time) error {
	item, err := attributevalue.MarshalMap(cursorItem{PK: pkCursor, SK: skCursor, Position: ddb.Stamp(next),
		RunID: runID, UpdatedAt: ddb.Stamp(now)})
	if err != nil {
		return fmt.Errorf("reconcile: encode cursor: %w", err)
	}
	cond := expression.AttributeNotExists(expression.Name("pk"))
	if found {
		cond = expression.Name("position").Equal(expression.Value(ddb.Stamp(read.Position)))
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item,
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(),
		ExpressionAttributeValues: expr.Values()})
	if ddb.ConditionFailed(err) {
		return ErrLostRace
	}
	if err != nil {
		return fmt.Errorf("reconcile: advance cursor: %w", err)
	}
	return nil
}

// Run is the record of one reconciler run.
type Run struct {
	RunID      string
	StartedAt  time.Time
	FinishedAt time.Time
	// Outcome is "ok", "lost_race" or "failed".
	Outcome string
	// Error is the failure of a failed run.
	Error string
	// Since and Until bound the export window, by publication time.
	Since, Until              time.Time
	CursorBefore, CursorAfter time.Time
	Counts
	// Reattributed, UnresolvedPaged and Held count deferred records
	// attributed now that their reference resolves, named in an
	// unresolved-attribution page, and held.
	Reattributed, UnresolvedPaged, Held int64
	// UnresolvedUnits and UnresolvedOldest describe every open deferred
	// record after the run.
	UnresolvedUnits  int64
	UnresolvedOldest time.Time
	// Reconciled is how many workloads got a reconciliation record.
	Reconciled int
	// Decisions are one line per cap action, hold or page the run caused.
	Decisions []string
	Duration  time.Duration
}

// Counts counts records of the export window per class.
type Counts struct {
	Records int64
	// Missed were applied now: the webhook path had not delivered them.
	Missed int64
	// Matched were already in the ledger from the webhook path, same units
	// and workload.
	Matched int64
	// Repeats were already in the ledger from an earlier poll (the overlap).
	Repeats int64
	// Disagreements differ from the ledger entry in units or workload.
	Disagreements int64
	// Deferred could not be attributed to a workload.
	Deferred int64
	// Unseen are webhook entries marked unseen: the export lacks them past
	// the consistency horizon.
	Unseen int64
	// Quarantined were refused by the ledger (negative or oversized units,
	// missing fields, a total that would overflow): stored with the reason
	// and paged once to the reconciliation owner ([spend.Ledger.Quarantine]).
	Quarantined int64
}

func (c *Counts) add(o Counts) {
	c.Records += o.Records
	c.Missed += o.Missed
	c.Matched += o.Matched
	c.Repeats += o.Repeats
	c.Disagreements += o.Disagreements
	c.Deferred += o.Deferred
	c.Unseen += o.Unseen
	c.Quarantined += o.Quarantined
}

func (c Counts) zero() bool { return c == Counts{} }

type runItem struct {
	PK               string   `dynamodbav:"pk"`
	SK               string   `dynamodbav:"sk"`
	RunID            string   `dynamodbav:"run_id"`
	StartedAt        string   `dynamodbav:"started_at"`
	FinishedAt       string   `dynamodbav:"finished_at"`
	Outcome          string   `dynamodbav:"outcome"`
	Error            string   `dynamodbav:"error,omitempty"`
	Since            string   `dynamodbav:"since,omitempty"`
	Until            string   `dynamodbav:"until,omitempty"`
	CursorBefore     string   `dynamodbav:"cursor_before,omitempty"`
	CursorAfter      string   `dynamodbav:"cursor_after,omitempty"`
	Records          int64    `dynamodbav:"records"`
	Missed           int64    `dynamodbav:"missed"`
	Matched          int64    `dynamodbav:"matched"`
	Repeats          int64    `dynamodbav:"repeats"`
	Disagreements    int64    `dynamodbav:"disagreements"`
	Deferred         int64    `dynamodbav:"deferred"`
	Unseen           int64    `dynamodbav:"unseen"`
	Quarantined      int64    `dynamodbav:"quarantined"`
	Reattributed     int64    `dynamodbav:"reattributed"`
	UnresolvedPaged  int64    `dynamodbav:"unresolved_paged"`
	Held             int64    `dynamodbav:"held"`
	UnresolvedUnits  int64    `dynamodbav:"unresolved_units"`
	UnresolvedOldest string   `dynamodbav:"unresolved_oldest,omitempty"`
	Reconciled       int      `dynamodbav:"reconciled"`
	Decisions        []string `dynamodbav:"decisions,omitempty"`
	DurationMS       int64    `dynamodbav:"duration_ms"`

	// EarlierRedriven is Reattributed as builds before that name stored it
	// ("redriven"). It is read, never written, for the retention window
	// (35 days) after the upgrade; by then the latest run records are all
	// this build's.
	EarlierRedriven int64 `dynamodbav:"redriven,omitempty"`
}

// reattributed is the run's Reattributed count under either name.
func (ri runItem) reattributed() int64 { return cmp.Or(ri.Reattributed, ri.EarlierRedriven) }

// PutRun stores a run record.
func (s *Store) PutRun(ctx context.Context, r Run) error {
	item, err := attributevalue.MarshalMap(runItem{PK: pkRuns, SK: runSK(r.StartedAt, r.RunID),
		RunID: r.RunID, StartedAt: ddb.Stamp(r.StartedAt), FinishedAt: ddb.Stamp(r.FinishedAt), Outcome: r.Outcome,
		Error: r.Error, Since: ddb.Stamp(r.Since), Until: ddb.Stamp(r.Until), CursorBefore: ddb.Stamp(r.CursorBefore),
		CursorAfter: ddb.Stamp(r.CursorAfter), Records: r.Records, Missed: r.Missed, Matched: r.Matched,
		Repeats: r.Repeats, Disagreements: r.Disagreements, Deferred: r.Deferred, Unseen: r.Unseen,
		Quarantined:  r.Quarantined,
		Reattributed: r.Reattributed, UnresolvedPaged: r.UnresolvedPaged, Held: r.Held, UnresolvedUnits: r.UnresolvedUnits,
		UnresolvedOldest: ddb.Stamp(r.UnresolvedOldest), Reconciled: r.Reconciled, Decisions: r.Decisions,
		DurationMS: r.Duration.Milliseconds()})
	if err != nil {
		return fmt.Errorf("reconcile: encode run: %w", err)
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item}); err != nil {
		return fmt.Errorf("reconcile: put run %s: %w", r.RunID, err)
	}
	return nil
}

// Runs returns the latest run records, newest first.
func (s *Store) Runs(ctx context.Context, limit int) ([]Run, error) {
	kc := expression.Key("pk").Equal(expression.Value(pkRuns)).And(expression.Key("sk").BeginsWith(prefixRun))
	var runs []Run
	err := s.query(ctx, kc, false, limit, func(item map[string]types.AttributeValue) error {
		var ri runItem
		if err := attributevalue.UnmarshalMap(item, &ri); err != nil {
			return err
		}
		runs = append(runs, Run{RunID: ri.RunID, StartedAt: ddb.ParseStamp(ri.StartedAt), FinishedAt: ddb.ParseStamp(ri.FinishedAt),
			Outcome: ri.Outcome, Error: ri.Error, Since: ddb.ParseStamp(ri.Since), Until: ddb.ParseStamp(ri.Until),
			CursorBefore: ddb.ParseStamp(ri.CursorBefore), CursorAfter: ddb.ParseStamp(ri.CursorAfter),
			Counts: Counts{Records: ri.Records, Missed: ri.Missed, Matched: ri.Matched, Repeats: ri.Repeats,
				Disagreements: ri.Disagreements, Deferred: ri.Deferred, Unseen: ri.Unseen,
				Quarantined: ri.Quarantined},
			Reattributed: ri.reattributed(), UnresolvedPaged: ri.UnresolvedPaged, Held: ri.Held,
			UnresolvedUnits: ri.UnresolvedUnits, UnresolvedOldest: ddb.ParseStamp(ri.UnresolvedOldest),
			Reconciled: ri.Reconciled, Decisions: ri.Decisions, Duration: time.Duration(ri.DurationMS) * time.Millisecond})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reconcile: list runs: %w", err)
	}
	return runs, nil
}

// Schedule is a workload's reconciliation tier and when it is next due.
type Schedule struct {
	WorkloadID string
	Tier       Tier
	Interval   time.Duration
	// Reason and Since say why and since when the workload is in Tier.
	Reason string
	Since  time.Time
	// NextDue is when the workload next gets a reconciliation record.
	NextDue        time.Time
	LastReconciled time.Time
	// Pending counts records folded for the workload since its last
	// reconciliation record.
	Pending Counts
}

type scheduleItem struct {
	PK             string `dynamodbav:"pk"`
	SK             string `dynamodbav:"sk"`
	WorkloadID     string `dynamodbav:"workload_id"`
	Tier           string `dynamodbav:"tier"`
	Interval       int64  `dynamodbav:"interval_s"`
	Reason         string `dynamodbav:"reason"`
	Since          string `dynamodbav:"since"`
	NextDue        string `dynamodbav:"next_due,omitempty"`
	LastReconciled string `dynamodbav:"last_reconciled,omitempty"`
	Records        int64  `dynamodbav:"acc_records"`
	Missed         int64  `dynamodbav:"acc_missed"`
	Matched        int64  `dynamodbav:"acc_matched"`
	Repeats        int64  `dynamodbav:"acc_repeats"`
	Disagreements  int64  `dynamodbav:"acc_disagreements"`
	Deferred       int64  `dynamodbav:"acc_deferred"`
	Unseen         int64  `dynamodbav:"acc_unseen"`
}

// Schedule reads a workload's schedule; found is false before its first
// classification.
func (s *Store) Schedule(ctx context.Context, workloadID string) (sc Schedule, found bool, err error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table),
		Key: scheduleKey(workloadID), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Schedule{}, false, fmt.Errorf("reconcile: read schedule %s: %w", workloadID, err)
	}
	if len(out.Item) == 0 {
		return Schedule{}, false, nil
	}
	var si scheduleItem
	if err := attributevalue.UnmarshalMap(out.Item, &si); err != nil {
		return Schedule{}, false, fmt.Errorf("reconcile: decode schedule %s: %w", workloadID, err)
	}
	return Schedule{WorkloadID: si.WorkloadID, Tier: Tier(si.Tier), Interval: time.Duration(si.Interval) * time.Second,
		Reason: si.Reason, Since: ddb.ParseStamp(si.Since), NextDue: ddb.ParseStamp(si.NextDue),
		LastReconciled: ddb.ParseStamp(si.LastReconciled),
		Pending: Counts{Records: si.Records, Missed: si.Missed, Matched: si.Matched, Repeats: si.Repeats,
			Disagreements: si.Disagreements, Deferred: si.Deferred, Unseen: si.Unseen}}, true, nil
}

// IntervalChange is the durable record of one change of a workload's
// reconciliation tier and interval.
type IntervalChange struct {
	WorkloadID   string
	From, To     Tier
	FromInterval time.Duration
	ToInterval   time.Duration
	Reason       string
	At           time.Time
	RunID        string
}

type changeItem struct {
	PK           string `dynamodbav:"pk"`
	SK           string `dynamodbav:"sk"`
	WorkloadID   string `dynamodbav:"workload_id"`
	From         string `dynamodbav:"from_tier,omitempty"`
	To           string `dynamodbav:"to_tier"`
	FromInterval int64  `dynamodbav:"from_interval_s"`
	ToInterval   int64  `dynamodbav:"to_interval_s"`
	Reason       string `dynamodbav:"reason"`
	At           string `dynamodbav:"at"`
	RunID        string `dynamodbav:"run_id"`
}

// ChangeTier moves a workload to a new tier and records the change, in one
// transaction, on condition that its tier is still prev.Tier (absent when
// found is false). It reports false when another run changed it first. A
// cancellation by a conflict or throttling is retried, never taken for
// another run's change; when it persists the error wraps
// [ddb.ErrContended].
func (s *Store) ChangeTier(ctx context.Context, prev Schedule, found bool, ch IntervalChange) (bool, error) {
	upd := expression.Set(expression.Name("workload_id"), expression.Value(ch.WorkloadID)).
		Set(expression.Name("tier"), expression.Value(string(ch.To))).
		Set(expression.Name("interval_s"), expression.Value(int64(ch.ToInterval/time.Second))).
		Set(expression.Name("reason"), expression.Value(ch.Reason)).
		Set(expression.Name("since"), expression.Value(ddb.Stamp(ch.At)))
	cond := expression.AttributeNotExists(expression.Name("pk"))
	if found {
		cond = expression.Name("tier").Equal(expression.Value(string(prev.Tier)))
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return false, err
	}
	item, err := attributevalue.MarshalMap(changeItem{PK: spend.WorkloadPK(ch.WorkloadID), SK: changeSK(ch.At, ch.RunID),
		WorkloadID: ch.WorkloadID, From: string(ch.From), To: string(ch.To),
		FromInterval: int64(ch.FromInterval / time.Second), ToInterval: int64(ch.ToInterval / time.Second),
		Reason: ch.Reason, At: ddb.Stamp(ch.At), RunID: ch.RunID})
	if err != nil {
		return false, fmt.Errorf("reconcile: encode interval change: %w", err)
	}
	err = changeRetry.Transact(ctx, s.db, []types.TransactWriteItem{
		{Update: &types.Update{TableName: aws.String(s.table), Key: scheduleKey(ch.WorkloadID),
			UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: item}},
	})
	if failed, _, ok := ddb.Cancelled(err); ok && failed[0] {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reconcile: change tier of %s: %w", ch.WorkloadID, err)
	}
	return true, nil
}

// IntervalChanges returns a workload's latest interval changes, newest
// first.
func (s *Store) IntervalChanges(ctx context.Context, workloadID string, limit int) ([]IntervalChange, error) {
	kc := expression.Key("pk").Equal(expression.Value(spend.WorkloadPK(workloadID))).
		And(expression.Key("sk").BeginsWith(prefixChange))
	var out []IntervalChange
	err := s.query(ctx, kc, false, limit, func(item map[string]types.AttributeValue) error {
		var ci changeItem
		if err := attributevalue.UnmarshalMap(item, &ci); err != nil {
			return err
		}
		out = append(out, IntervalChange{WorkloadID: ci.WorkloadID, From: Tier(ci.From), To: Tier(ci.To),
			FromInterval: time.Duration(ci.FromInterval) * time.Second, ToInterval: time.Duration(ci.ToInterval) * time.Second,
			Reason: ci.Reason, At: ddb.ParseStamp(ci.At), RunID: ci.RunID})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reconcile: interval changes of %s: %w", workloadID, err)
	}
	return out, nil
}

// AddPending adds a run's counts to a workload's pending counts; a
// negative count subtracts what a reconciliation record has reported, so a
// concurrent addition is never lost. reconciled and nextDue, when set, are
// stored too.
func (s *Store) AddPending(ctx context.Context, workloadID string, c Counts, reconciled, nextDue time.Time) error {
	upd := expression.Add(expression.Name("acc_records"), expression.Value(c.Records)).
		Add(expression.Name("acc_missed"), expression.Value(c.Missed)).
		Add(expression.Name("acc_matched"), expression.Value(c.Matched)).
		Add(expression.Name("acc_repeats"), expression.Value(c.Repeats)).
		Add(expression.Name("acc_disagreements"), expression.Value(c.Disagreements)).
		Add(expression.Name("acc_deferred"), expression.Value(c.Deferred)).
		Add(expression.Name("acc_unseen"), expression.Value(c.Unseen))
	if !reconciled.IsZero() {
		upd = upd.Set(expression.Name("last_reconciled"), expression.Value(ddb.Stamp(reconciled)))
	}
	if !nextDue.IsZero() {
		upd = upd.Set(expression.Name("next_due"), expression.Value(ddb.Stamp(nextDue)))
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).
		WithCondition(expression.AttributeExists(expression.Name("pk"))).Build()
	if err != nil {
		return err
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.table),
		Key: scheduleKey(workloadID), UpdateExpression: expr.Update(),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(),
		ExpressionAttributeValues: expr.Values()})
	if err != nil {
		return fmt.Errorf("reconcile: update schedule of %s: %w", workloadID, err)
	}
	return nil
}

func negate(c Counts) Counts {
	return Counts{Records: -c.Records, Missed: -c.Missed, Matched: -c.Matched, Repeats: -c.Repeats,
		Disagreements: -c.Disagreements, Deferred: -c.Deferred, Unseen: -c.Unseen}
}

func (s *Store) query(ctx context.Context, kc expression.KeyConditionBuilder, forward bool, limit int,
	fn func(map[string]types.AttributeValue) error) error {
	in, err := ddb.KeyQuery(s.table, "", kc, forward)
	if err != nil {
		return err
	}
	n := 0
	return ddb.QueryEach(ctx, s.db, in, func(item ddb.Item) (bool, error) {
		if err := fn(item); err != nil {
			return false, err
		}
		n++
		return limit == 0 || n < limit, nil
	})
}
