package spend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/period"
)

// Status is a workload's state.
type Status string

// Workload statuses.
const (
	StatusActive  Status = "active"
	StatusPaused  Status = "paused"
	StatusRetired Status = "retired"
)

// Workload is a registered workload with its running total.
type Workload struct {
	ID    string
	Owner string
	// RoutingKey is the PagerDuty routing key of the owner. It is a credential:
	// never log or print it.
	RoutingKey string
	Cap        int64
	// Step is the escalation step: one more page each time the total passes
	// Cap + k*Step for a new k. Zero turns escalation off.
	Step   int64
	Status Status
	// Hold asks reconciliation to hold, rather than page, this workload's
	// unresolved amounts past their deadline.
	Hold     bool
	Total    int64
	CapEpoch int64
	// EscalationLevel is the highest step k paged in this cap epoch.
	EscalationLevel int64
	LastAccepted    LastEvent
	// LastDecision is the sort key of the latest decision, if any.
	LastDecision string
	NextReconAt  time.Time
	// Override is the operator's last resume over the cap, if any.
	Override  Override
	CreatedAt time.Time
	UpdatedAt time.Time
	// Periods is the billing period the cap applies to; the zero value
	// is a lifetime total. Total counts the period PeriodID names (empty
	// for a lifetime total), the latest one a record or a boundary
	// reached; PrevPeriodID is the one before it.
	Periods      Periods
	PeriodID     string
	PrevPeriodID string
	periodErr    error
	// pending is the stored change of period as read, which the roll
	// into a new period holds (period_change.go).
	pending pendingStored
}

// Period is the period w's Total counts ([period.Lifetime] for a
// lifetime total), in w's zone.
func (w Workload) Period() (period.Period, error) {
	if w.PeriodID == "" {
		return period.Lifetime, nil
	}
	p, err := period.ParseID(w.PeriodID)
	if err != nil {
		return period.Period{}, fmt.Errorf("spend: workload %s: %w", w.ID, err)
	}
	if z := w.Periods.Recurrence.Zone; z != nil {
		p = p.In(z)
	}
	return p, nil
}

// Override records a resume made on purpose while the total was over the
// cap ([Caps.ForceResume]): who, why, when, and the cap epoch it
// opened. It admits work in that epoch only, until the next reconciliation
// run or the next accepted record pauses the workload again.
type Override struct {
	By     string
	Reason string
	At     time.Time
	Epoch  int64
}

// overridden reports whether an operator's override admits w over its cap.
func (w Workload) overridden() bool {
	return w.Status == StatusActive && w.Override.Epoch > 0 && w.Override.Epoch == w.CapEpoch
}

// OverCap reports whether w's total is over its cap: the rule that trips a
// pause, refuses a resume and refuses admission.
func (w Workload) OverCap() bool { return w.Total > w.Cap }

// LastEvent is the last usage record accepted into a workload's total.
type LastEvent struct {
	EventID    string
	RecordID   string
	Units      int64
	Path       string
	ObservedAt time.Time
	AcceptedAt time.Time
}

// NewWorkload defines a workload for [Workloads.CreateWorkload].
type NewWorkload struct {
	ID         string
	Owner      string
	RoutingKey string
	Cap        int64
	Step       int64
	Hold       bool
	// Periods is the billing period of the cap; the zero value is a
	// lifetime total.
	Periods Periods
}

func (n NewWorkload) validate() error {
	if err := ValidWorkloadID(n.ID); err != nil {
		return err
	}
	var errs []error
	if n.ID == "" || n.Owner == "" || n.RoutingKey == "" {
		errs = append(errs, errors.New("ID, Owner and RoutingKey are required"))
	}
	if n.Cap <= 0 {
		errs = append(errs, errors.New("Cap must be positive"))
	}
	if n.Step < 0 {
		errs = append(errs, errors.New("Step must not be negative"))
	}
	if err := n.Periods.validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidWorkload, errors.Join(errs...))
	}
	return nil
}

// CreateWorkload registers an active workload with a zero total, and an
// alias from its own ID, in one transaction, retried while it meets a
// running one. Its first reconciliation is the reconciler's next run (see
// [RunSchedule]). A workload with a period starts in the period that
// holds now; one whose period the buckets of a configured sums source
// would straddle is refused with a [*SourceStraddleError].
func (s *Workloads) CreateWorkload(ctx context.Context, n NewWorkload) (Workload, error) {
	if err := n.validate(); err != nil {
		return Workload{}, err
	}
	if err := s.fitsSources(n.Periods); err != nil {
		return Workload{}, fmt.Errorf("spend: create workload %s: %w", n.ID, err)
	}
	next, err := s.nextReconciliation(ctx, Workload{})
	if err != nil {
		return Workload{}, fmt.Errorf("spend: create workload %s: %w", n.ID, err)
	}
	now := ddb.Stamp(s.now())
	wi := workloadItem{PK: WorkloadPK(n.ID), SK: skWorkload, GSI1PK: workloadsPartition, GSI1SK: n.ID,
		ID: n.ID, Owner: n.Owner, RoutingKey: n.RoutingKey, Cap: n.Cap, Step: n.Step, Status: string(StatusActive),
		Hold: n.Hold, NextReconAt: ddb.Stamp(next),
		CreatedAt: now, UpdatedAt: now}
	wi.setPeriods(n.Periods)
	if !n.Periods.Lifetime() {
		p, err := n.Periods.At(s.now())
		if err != nil {
			return Workload{}, fmt.Errorf("spend: create workload %s: %w", n.ID, err)
		}
		wi.PeriodID = p.ID()
	}
	wItem, err := attributevalue.MarshalMap(wi)
	if err != nil {
		return Workload{}, fmt.Errorf("spend: encode workload %s: %w", n.ID, err)
	}
	aItem, err := s.aliasItem(n.ID, n.ID, now)
	if err != nil {
		return Workload{}, err
	}
	err = s.transact(ctx, []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.workloads), Item: wItem, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{Put: &types.Put{TableName: aws.String(s.workloads), Item: aItem, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	})
	if failed, _, ok := cancelled(err); ok {
		if len(failed) > 0 && failed[0] {
			return Workload{}, fmt.Errorf("spend: create workload %s: %w", n.ID, ErrWorkloadExists)
		}
		return Workload{}, fmt.Errorf("spend: create workload %s: %w", n.ID, ErrAliasTaken)
	}
	if err != nil {
		return Workload{}, fmt.Errorf("spend: create workload %s: %w", n.ID, err)
	}
	return wi.workload(), nil
}

func (s *core) aliasItem(ref, id, now string) (map[string]types.AttributeValue, error) {
	item, err := attributevalue.MarshalMap(aliasItem{PK: aliasPK(ref), SK: skAlias,
		GSI1PK: aliasesPK(id), GSI1SK: ref, Ref: ref, WorkloadID: id, CreatedAt: now})
	if err != nil {
		return nil, fmt.Errorf("spend: encode alias %s: %w", ref, err)
	}
	return item, nil
}

// AddAlias maps a provider workload reference to workload id. Adding the
// same mapping again is not an error; mapping a reference that already
// names another workload is [ErrAliasTaken].
func (s *Workloads) AddAlias(ctx context.Context, ref, id string) error {
	if ref == "" || id == "" {
		return fmt.Errorf("spend: %w: alias needs a reference and a workload", ErrInvalidWorkload)
	}
	item, err := s.aliasItem(ref, id, ddb.Stamp(s.now()))
	if err != nil {
		return err
	}
	err = s.transact(ctx, []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.workloads), Key: workloadKey(id),
			ConditionExpression: aws.String("attribute_exists(pk)")}},
		{Put: &types.Put{TableName: aws.String(s.workloads), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	})
	failed, _, ok := cancelled(err)
	switch {
	case err == nil:
		return nil
	case !ok:
		return fmt.Errorf("spend: add alias %s: %w", ref, err)
	case len(failed) > 0 && failed[0]:
		return fmt.Errorf("spend: add alias %s to %s: %w", ref, id, ErrUnknownWorkload)
	}
	got, found, err := s.resolveID(ctx, ref)
	if err != nil {
		return err
	}
	if found && got == id {
		return nil
	}
	return fmt.Errorf("spend: add alias %s to %s: %w", ref, id, ErrAliasTaken)
}

// resolveID returns the workload ID a reference maps to.
func (s *core) resolveID(ctx context.Context, ref string) (string, bool, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.workloads),
		Key: aliasKey(ref), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return "", false, fmt.Errorf("spend: resolve %s: %w", ref, err)
	}
	if len(out.Item) == 0 {
		return "", false, nil
	}
	var al aliasItem
	if err := attributevalue.UnmarshalMap(out.Item, &al); err != nil {
		return "", false, fmt.Errorf("spend: decode alias %s: %w", ref, err)
	}
	return al.WorkloadID, true, nil
}

// Resolve returns the workload a provider reference (or workload ID) maps
// to, or [ErrUnknownWorkload].
func (s *Workloads) Resolve(ctx context.Context, ref string) (Workload, error) {
	id, found, err := s.resolveID(ctx, ref)
	if err != nil {
		return Workload{}, err
	}
	if !found {
		return Workload{}, fmt.Errorf("spend: resolve %s: %w", ref, ErrUnknownWorkload)
	}
	return s.Get(ctx, id)
}

// Get returns a workload by ID (a consistent read), or [ErrUnknownWorkload].
func (s *Workloads) Get(ctx context.Context, id string) (Workload, error) {
	return s.get(ctx, id)
}

// get is [Workloads.Get], for every role.
func (s *core) get(ctx context.Context, id string) (Workload, error) {
	wi, err := getItem[workloadItem](ctx, s.db, s.workloads, workloadKey(id), "workload "+id, ErrUnknownWorkload)
	if err != nil {
		return Workload{}, err
	}
	w := wi.workload()
	s.periods.put(w)
	return w, nil
}

// List returns every registered workload, ordered by ID. The index gsi1
// holds the workloads' keys only (one partition, WORKLOADS, for the whole
// fleet, so it must not carry the running totals that every usage record
// changes): List reads the IDs from it and each workload item itself with
// consistent BatchGetItem reads.
func (s *Workloads) List(ctx context.Context) ([]Workload, error) {
	ids, err := s.indexKeys(ctx, workloadsPartition)
	if err != nil {
		return nil, fmt.Errorf("spend: list workloads: %w", err)
	}
	byID, err := s.workloadsByID(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("spend: list workloads: %w", err)
	}
	ws := make([]Workload, 0, len(ids))
	for _, id := range ids {
		if w, ok := byID[id]; ok { // deleted between the index and the read
			ws = append(ws, w)
		}
	}
	return ws, nil
}

// workloadsByID reads the workloads ids with consistent BatchGetItem
// reads, 100 a call. A workload that does not exist is absent from the
// map.
func (s *core) workloadsByID(ctx context.Context, ids []string) (map[string]Workload, error) {
	keys := make([]map[string]types.AttributeValue, len(ids))
	for i, id := range ids {
		keys[i] = workloadKey(id)
	}
	byID := make(map[string]Workload, len(ids))
	err := s.batchGet(ctx, s.workloads, keys, func(item map[string]types.AttributeValue) error {
		var wi workloadItem
		if err := attributevalue.UnmarshalMap(item, &wi); err != nil {
			return fmt.Errorf("decode workload: %w", err)
		}
		w := wi.workload()
		s.periods.put(w)
		byID[wi.ID] = w
		return nil
	})
	return byID, err
}

// indexKeys returns the gsi1sk of every item in the gsi1 partition pk, in
// order. It reads only keys, so it works whatever the index projects.
func (s *Workloads) indexKeys(ctx context.Context, pk string) ([]string, error) {
	var out []string
	err := queryItems(ctx, s.db, s.workloads, indexName, expression.Key("gsi1pk").Equal(expression.Value(pk)), true, 0,
		func(k indexKey) error {
			out = append(out, k.GSI1SK)
			return nil
		})
	return out, err
}

// indexKey is what every projection of gsi1 carries.
type indexKey struct {
	GSI1SK string `dynamodbav:"gsi1sk"`
}

// Aliases returns the references that map to workload id, its own ID
// included. An alias's index sort key is its reference, so the index's
// keys answer.
func (s *Workloads) Aliases(ctx context.Context, id string) ([]string, error) {
	refs, err := s.indexKeys(ctx, aliasesPK(id))
	if err != nil {
		return nil, fmt.Errorf("spend: aliases of %s: %w", id, err)
	}
	return refs, nil
}

// SetCap changes a workload's cap. A cap below the current total pauses the
// active workload at once, with a page, so admission refuses from now on.
func (s *Caps) SetCap(ctx context.Context, id string, capUnits int64) error {
	if capUnits <= 0 {
		return fmt.Errorf("spend: %w: cap must be positive", ErrInvalidWorkload)
	}
	if err := s.updateWorkload(ctx, id, "set cap",
		expression.Set(expression.Name("cap"), expression.Value(capUnits)), nil); err != nil {
		return err
	}
	w, err := s.get(ctx, id)
	if err != nil {
		return fmt.Errorf("spend: set cap %s, cap check: %w", id, err)
	}
	if _, err := s.recheck(ctx, w); err != nil {
		return fmt.Errorf("spend: set cap %s: %w", id, err)
	}
	return nil
}

// SetStep changes a workload's escalation step (0 turns escalation off).
func (s *Caps) SetStep(ctx context.Context, id string, step int64) error {
	if step < 0 {
		return fmt.Errorf("spend: %w: step must not be negative", ErrInvalidWorkload)
	}
	return s.updateWorkload(ctx, id, "set step",
		expression.Set(expression.Name("step"), expression.Value(step)), nil)
}

// SetHold changes a workload's hold policy for unresolved attribution.
func (s *Workloads) SetHold(ctx context.Context, id string, hold bool) error {
	return s.updateWorkload(ctx, id, "set hold",
		expression.Set(expression.Name("hold"), expression.Value(hold)), nil)
}

// setNextReconciliation records when reconciliation will next prove or
// disprove the workload's total.
func (s *core) setNextReconciliation(ctx context.Context, id string, at time.Time) error {
	return s.updateWorkload(ctx, id, "set next reconciliation",
		expression.Set(expression.Name("next_recon_at"), expression.Value(ddb.Stamp(at))), nil)
}

// Retire stops attribution to a workload: records that name it from now on
// are deferred with reason retired_workload.
func (s *Workloads) Retire(ctx context.Context, id string) error {
	return s.updateWorkload(ctx, id, "retire", statusSet(StatusRetired), nil)
}

// Resume is the operator's action that makes a paused workload active
// again. It increments the cap epoch and resets the escalation level, so a
// later crossing pages again under a new dedup key. A workload that is not
// paused gives [ErrNotPaused]; one whose total is still over its cap gives
// an [*OverCapError]: raise the cap first, or use [Caps.ForceResume].
func (s *Caps) Resume(ctx context.Context, id string) (Workload, error) {
	upd := expression.Set(expression.Name("status"), expression.Value(string(StatusActive))).
		Set(expression.Name("esc_level"), expression.Value(0)).
		Add(expression.Name("cap_epoch"), expression.Value(1))
	cond := expression.Name("status").Equal(expression.Value(string(StatusPaused))).
		And(expression.Name("total").LessThanEqual(expression.Name("cap")))
	err := s.updateWorkload(ctx, id, "resume", upd, &cond)
	if errors.Is(err, ErrNotPaused) {
		if w, gerr := s.get(ctx, id); gerr == nil && w.Status == StatusPaused && w.OverCap() {
			return Workload{}, &OverCapError{WorkloadID: id, Total: w.Total, Cap: w.Cap}
		}
	}
	if err != nil {
		return Workload{}, err
	}
	return s.get(ctx, id)
}

// ForceResume resumes a paused workload on purpose although its total is
// over its cap, and records who did it and why. The override holds only
// until the next reconciliation run, which checks the cap of every workload
// it reconciles and pauses this one again, with a page, while it is still
// over (as does the next accepted record). To resume for good, raise the
// cap with [Caps.SetCap] and call [Caps.Resume].
func (s *Caps) ForceResume(ctx context.Context, id, by, reason string) (Workload, error) {
	if strings.TrimSpace(by) == "" || strings.TrimSpace(reason) == "" {
		return Workload{}, fmt.Errorf("spend: force resume %s: %w: who and why are required", id, ErrInvalidWorkload)
	}
	w, err := s.get(ctx, id)
	if err != nil {
		return Workload{}, err
	}
	epoch := w.CapEpoch + 1
	upd := expression.Set(expression.Name("status"), expression.Value(string(StatusActive))).
		Set(expression.Name("esc_level"), expression.Value(0)).
		Set(expression.Name("cap_epoch"), expression.Value(epoch)).
		Set(expression.Name("override_by"), expression.Value(by)).
		Set(expression.Name("override_reason"), expression.Value(reason)).
		Set(expression.Name("override_at"), expression.Value(ddb.Stamp(s.now()))).
		Set(expression.Name("override_epoch"), expression.Value(epoch))
	cond := expression.Name("status").Equal(expression.Value(string(StatusPaused))).
		And(expression.Name("cap_epoch").Equal(expression.Value(w.CapEpoch)))
	if err := s.updateWorkload(ctx, id, "force resume", upd, &cond); err != nil {
		return Workload{}, err
	}
	s.log.WarnContext(ctx, "workload resumed over its cap", "workload", id, "total", w.Total, "cap", w.Cap,
		"by", by, "reason", reason, "epoch", epoch)
	return s.get(ctx, id)
}

// updateWorkload applies upd to an existing workload, with an optional
// extra condition. A failed extra condition on Resume is [ErrNotPaused].
func (s *core) updateWorkload(ctx context.Context, id, what string, upd expression.UpdateBuilder, extra *expression.ConditionBuilder) error {
	upd = upd.Set(expression.Name("updated_at"), expression.Value(ddb.Stamp(s.now())))
	cond := expression.AttributeExists(expression.Name("pk"))
	if extra != nil {
		cond = cond.And(*extra)
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("spend: %s %s: %w", what, id, err)
	}
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(s.workloads), Key: workloadKey(id),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}
	// A busy workload's item is nearly always in a running transaction.
	err = transactRetry.Write(ctx, func() error {
		_, err := s.db.UpdateItem(ctx, in)
		return err
	})
	if ddb.ConditionFailed(err) {
		if extra == nil {
			return fmt.Errorf("spend: %s %s: %w", what, id, ErrUnknownWorkload)
		}
		if _, gerr := s.asWorkloads().Get(ctx, id); gerr != nil {
			return fmt.Errorf("spend: %s: %w", what, gerr)
		}
		return fmt.Errorf("spend: %s %s: %w", what, id, ErrNotPaused)
	}
	if err != nil {
		return fmt.Errorf("spend: %s %s: %w", what, id, err)
	}
	return nil
}

// query runs a paginated Query and hands each item to fn. limit 0 means all.
func (s *core) query(ctx context.Context, table string, keyCond expression.KeyConditionBuilder, forward bool, limit int,
	fn func(map[string]types.AttributeValue) error) error {
	return s.queryOn(ctx, table, indexName, keyCond, forward, limit, fn)
}

func (s *core) queryOn(ctx context.Context, table, index string, keyCond expression.KeyConditionBuilder, forward bool, limit int,
	fn func(map[string]types.AttributeValue) error) error {
	return queryItems(ctx, s.db, table, index, keyCond, forward, limit, fn)
}

// queryItems hands fn each item of the query on table (or its index, when
// index is not "") decoded into a T, at most limit of them (0: all).
func queryItems[T any](ctx context.Context, db DB, table, index string, kc expression.KeyConditionBuilder, forward bool, limit int,
	fn func(T) error) error {
	in, err := ddb.KeyQuery(table, index, kc, forward)
	if err != nil {
		return err
	}
	n := 0
	return ddb.QueryEach(ctx, db, in, func(item T) (bool, error) {
		if err := fn(item); err != nil {
			return false, err
		}
		n++
		return limit == 0 || n < limit, nil
	})
}

func statusSet(s Status) expression.UpdateBuilder {
	return expression.Set(expression.Name("status"), expression.Value(string(s)))
}
