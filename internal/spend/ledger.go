package spend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/pager"
)

// Usage is one provider usage record, as either path saw it.
type Usage struct {
	// RecordID is the provider's stable usage record ID: the ledger key.
	RecordID string
	// WorkloadRef is the provider's reference to the workload; an alias or
	// a workload ID.
	WorkloadRef string
	Units       int64
	OccurredAt  time.Time
	ObservedAt  time.Time
	// Path is "webhook" or "poll".
	Path string
	// EventID is the webhook event ID; empty on the poll path.
	EventID string
	// SeenAt is when hookline first saw the record (the intake's
	// received_at on the webhook path): its age, for the reconciler's
	// horizon and a deferral's deadline, counts from here. Zero means
	// ObservedAt.
	SeenAt time.Time
	// Source is the usage source it came from, and Meter and Unit what it
	// counts; empty for records of builds before meters.
	Source, Meter, Unit string
	// Unreconciled means no export the reconciler reads holds the record:
	// no confirmation marker is written for it, so it is never paged as
	// unseen by an export that cannot show it.
	Unreconciled bool
}

// seenAt is when hookline first saw u: SeenAt, else ObservedAt, else
// fallback.
func (u Usage) seenAt(fallback time.Time) time.Time {
	switch {
	case !u.SeenAt.IsZero():
		return u.SeenAt
	case !u.ObservedAt.IsZero():
		return u.ObservedAt
	}
	return fallback
}

// validate is the ledger's own check of a record, whichever path read it.
// Units must be at least 1: a zero-unit record attributes nothing and
// would use up its record ID, so it is refused (quarantined) like a
// negative one. The receiver reads a zero reading as no usage and never
// queues it to the ledger (usagein.OutcomeZero); the export decoding
// refuses it first.
func (u Usage) validate() error {
	var errs []error
	if u.RecordID == "" || u.WorkloadRef == "" {
		errs = append(errs, errors.New("RecordID and WorkloadRef are required"))
	}
	if u.Units < 1 {
		errs = append(errs, fmt.Errorf("spend: Units %d must be at least 1 (negative and zero units are refused)", u.Units))
	}
	if u.Units > MaxUnits {
		errs = append(errs, fmt.Errorf("spend: Units %d exceed the maximum 2^53", u.Units))
	}
	if u.Path != PathWebhook && u.Path != PathPoll {
		errs = append(errs, fmt.Errorf("spend: Path %q is not webhook or poll", u.Path))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidUsage, errors.Join(errs...))
	}
	return nil
}

// Outcome is what Apply did with a usage record.
type Outcome string

// Apply outcomes.
const (
	Applied      Outcome = "applied"
	Duplicate    Outcome = "duplicate"
	Disagreement Outcome = "disagreement"
	Deferred     Outcome = "deferred"
)

// Deferral reasons.
const (
	ReasonUnknownWorkload = "unknown_workload"
	ReasonRetiredWorkload = "retired_workload"
)

// Result is the outcome of one [Ledger.Apply].
type Result struct {
	Outcome Outcome
	// WorkloadID is the workload the reference resolved to, if any.
	WorkloadID string
	// Total is the workload's total read right after an Applied record.
	Total int64
	// Entry is the existing ledger entry on Duplicate and Disagreement.
	Entry *Entry
	// Deferred is the deferred record on Deferred.
	Deferred *DeferredRecord
	// Disagreement is the recorded disagreement on Disagreement.
	Disagreement *DisagreementRecord
	// Decisions are the pauses and escalations this Apply won.
	Decisions []Decision
}

// Entry is one ledger entry: a usage record's single effect.
type Entry struct {
	RecordID    string
	WorkloadID  string
	WorkloadRef string
	Units       int64
	EventID     string
	// Path is the path that applied it; Paths every path that saw it.
	Path       string
	Paths      []string
	OccurredAt time.Time
	ObservedAt time.Time
	AcceptedAt time.Time
	// SeenAt, Source, Meter and Unit are as in [Usage]; empty on entries
	// of builds before meters.
	SeenAt              time.Time
	Source, Meter, Unit string
	// Bucket names the bucket of a provider of sums that counts the
	// record; Absorbed is how many of its units the provider's earlier
	// value had already counted (they added nothing to the total).
	Bucket   string
	Absorbed int64
}

// DeferredRecord is a verified usage record that could not be attributed.
type DeferredRecord struct {
	RecordID    string
	WorkloadRef string
	// WorkloadID is set for a retired workload; empty for an unknown one.
	WorkloadID string
	Units      int64
	EventID    string
	Path       string
	Reason     string
	Owner      string
	Hold       bool
	// Status is "open" until the record is attributed, then "resolved".
	Status     string
	OccurredAt time.Time
	ObservedAt time.Time
	DeferredAt time.Time
	Deadline   time.Time
	ResolvedAt time.Time
}

// Version is one path's view of a usage record.
type Version struct {
	WorkloadID string
	Units      int64
	Path       string
	EventID    string
}

// DisagreementRecord is a usage record the two paths (or two deliveries)
// disagree on. Kept is the version in the ledger; Other was not applied.
type DisagreementRecord struct {
	RecordID   string
	Kept       Version
	Other      Version
	Owner      string
	DedupKey   string
	ObservedAt time.Time
	RecordedAt time.Time
}

// Apply folds one usage record into the ledger; see the package
// documentation for the outcomes. An error means the outcome is unknown and
// the caller should retry (Apply is idempotent).
func (s *Ledger) Apply(ctx context.Context, u Usage) (Result, error) {
	if err := u.validate(); err != nil {
		return Result{}, err
	}
	id, _, err := s.resolveID(ctx, u.WorkloadRef)
	if err != nil {
		return Result{}, err
	}
	return s.apply(ctx, u, id)
}

// ApplyResolved is [Ledger.Apply] for a record whose workload reference the
// caller resolved beforehand with [Workloads.ResolveRefs]: id is the workload
// the reference mapped to, or "" when it had no alias (the record is then
// deferred as unknown). The ledger transaction still checks that the
// workload exists and is not retired.
func (s *Ledger) ApplyResolved(ctx context.Context, u Usage, id string) (Result, error) {
	if err := u.validate(); err != nil {
		return Result{}, err
	}
	return s.apply(ctx, u, id)
}

// apply folds a validated record into the workload id ("" for none).
func (s *core) apply(ctx context.Context, u Usage, id string) (Result, error) {
	if id == "" {
		return s.deferUsage(ctx, u, "", false, ReasonUnknownWorkload)
	}
	if k, src, _, ok := s.sums.bucketFor(u, id); ok {
		return s.applyBucketed(ctx, u, id, k, src)
	}
	var tg target
	for attempt := 0; ; attempt++ {
		var err error
		if tg, err = s.targetAt(ctx, id, s.countedAt(u)); err != nil {
			return Result{}, fmt.Errorf("spend: apply %s: %w", u.RecordID, err)
		}
		tx, err := s.applyTx(u, id, tg)
		if err != nil {
			return Result{}, err
		}
		err = s.transact(ctx, tx)
		if err == nil {
			break
		}
		failed, _, ok := cancelled(err)
		if !ok {
			return Result{}, fmt.Errorf("spend: apply %s: %w", u.RecordID, err)
		}
		if len(failed) > 0 && failed[0] {
			return s.conflict(ctx, u, id)
		}
		res, err := s.deferForWorkload(ctx, u, id)
		if !errors.Is(err, errWorkloadMoved) || attempt == periodAttempts {
			return res, err
		}
	}
	ledgerAt := s.now()
	dims := map[string]string{"Path": u.Path}
	s.metrics.Count(MetricAccepted, 1, dims)
	if !u.ObservedAt.IsZero() {
		s.metrics.Duration(MetricObservedToLedger, ledgerAt.Sub(u.ObservedAt), dims)
	}
	if tg.closed {
		if err := s.pageLate(ctx, id, tg, u); err != nil {
			return Result{Outcome: Applied, WorkloadID: id}, fmt.Errorf("spend: applied %s: %w", u.RecordID, err)
		}
	}
	w, err := s.asWorkloads().Get(ctx, id)
	if err != nil {
		return Result{Outcome: Applied, WorkloadID: id}, fmt.Errorf("spend: applied %s, cap check: %w", u.RecordID, err)
	}
	res := Result{Outcome: Applied, WorkloadID: id, Total: w.Total}
	res.Decisions, err = s.enforce(ctx, w, u, ledgerAt)
	if err != nil {
		return res, fmt.Errorf("spend: applied %s, enforce cap: %w", u.RecordID, err)
	}
	return res, nil
}

// applyTx is the ledger transaction: the entry, if absent, and the
// workload's total (or the late period's), if the workload exists, is
// not retired and is in the period tg was chosen for.
func (s *core) applyTx(u Usage, id string, tg target) ([]types.TransactWriteItem, error) {
	now := ddb.Stamp(s.now())
	tx, err := s.entryItems(u, id, now)
	if err != nil {
		return nil, err
	}
	wl, extra, err := s.totalItems(id, tg, u.Units, 1, u, now)
	if err != nil {
		return nil, err
	}
	// The workload's item stays the second item: apply reads its
	// cancellation reason by position.
	return append(slices.Insert(tx, 1, wl), extra...), nil
}

// entryItems are the ledger items of one record: its entry, conditioned on
// being absent, and for a webhook record the marker reconciliation
// confirms against the export (recon.go).
func (s *core) entryItems(u Usage, id, now string) ([]types.TransactWriteItem, error) {
	ei := entryItem{PK: recordPK(u.RecordID), SK: skEntry, RecordID: u.RecordID, WorkloadID: id,
		WorkloadRef: u.WorkloadRef, Units: u.Units, EventID: u.EventID, Path: u.Path, Paths: []string{u.Path},
		OccurredAt: ddb.Stamp(u.OccurredAt), ObservedAt: ddb.Stamp(u.ObservedAt), AcceptedAt: now,
		SeenAt: ddb.Stamp(u.SeenAt), Source: u.Source, Meter: u.Meter, Unit: u.Unit}
	if u.EventID != "" {
		ei.GSI1PK, ei.GSI1SK = eventPK(u.EventID), entryGSI1SK(u.RecordID)
	}
	item, err := attributevalue.MarshalMap(ei)
	if err != nil {
		return nil, fmt.Errorf("spend: encode entry %s: %w", u.RecordID, err)
	}
	tx := []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(s.ledger), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)")}}}
	if u.Path == PathWebhook && !u.Unreconciled {
		m, err := s.markerPut(u, id, now)
		if err != nil {
			return nil, err
		}
		tx = append(tx, m)
	}
	return tx, nil
}

// totalUpdate adds units to workload id's running total and records last
// as its last accepted record, if the workload exists, is not retired, is
// in tg's period (a lifetime total: has no period), and the total stays
// within MaxTotal. It is the one definition of spend: a single record's
// Apply adds its own units, a batch adds the sum of its new records for
// the workload.
func (s *core) totalUpdate(id string, tg target, units int64, last Usage, now string) (types.TransactWriteItem, error) {
	upd := expression.Add(expression.Name("total"), expression.Value(units)).
		Set(expression.Name("last_event_id"), expression.Value(last.EventID)).
		Set(expression.Name("last_record_id"), expression.Value(last.RecordID)).
		Set(expression.Name("last_units"), expression.Value(last.Units)).
		Set(expression.Name("last_path"), expression.Value(last.Path)).
		Set(expression.Name("last_observed_at"), expression.Value(ddb.Stamp(last.ObservedAt))).
		Set(expression.Name("last_accepted_at"), expression.Value(now)).
		Set(expression.Name("updated_at"), expression.Value(now))
	// The total never passes MaxTotal: the record that would carry it past
	// fails this condition and is refused with an *OverflowError.
	cond := liveWorkload().And(periodCond(tg)).
		And(expression.Or(expression.AttributeNotExists(expression.Name("total")),
			expression.Name("total").LessThanEqual(expression.Value(MaxTotal-units))))
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(s.workloads), Key: workloadKey(id),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()}}, nil
}

// ErrContended means a transaction kept being cancelled by conflicting
// transactions or throttling: nothing was applied, nothing was decided,
// and the caller should retry later.
var ErrContended = ddb.ErrContended

// transactRetry is [core.transact]'s budget: backoff with full jitter from
// 2 ms, doubling to 250 ms, for 25 attempts (about 5 s of waiting at most).
var transactRetry = ddb.Retry{Attempts: 25, Base: 2 * time.Millisecond, Max: 250 * time.Millisecond}

// transact runs a transaction, retrying cancellations caused by a
// conflicting transaction or throttling (not by a failed condition), as
// [ddb.Retry.Transact] does. On a hot workload item every concurrent
// record's transaction meets the others' (DynamoDB cancels, never waits),
// so the retry is what applies them.
func (s *core) transact(ctx context.Context, items []types.TransactWriteItem) error {
	return transactRetry.Transact(ctx, s.db, items)
}

// conflict classifies a record whose entry already exists.
func (s *core) conflict(ctx context.Context, u Usage, id string) (Result, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.ledger),
		Key: entryKey(u.RecordID), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Result{}, fmt.Errorf("spend: read entry %s: %w", u.RecordID, err)
	}
	var ei entryItem
	if err := attributevalue.UnmarshalMap(out.Item, &ei); err != nil {
		return Result{}, fmt.Errorf("spend: decode entry %s: %w", u.RecordID, err)
	}
	e := ei.entry()
	if e.Units != u.Units || e.WorkloadID != id {
		kept := Version{WorkloadID: e.WorkloadID, Units: e.Units, Path: e.Path, EventID: e.EventID}
		return s.disagree(ctx, u, id, kept, &e, nil)
	}
	s.metrics.Count(MetricDuplicate, 1, map[string]string{"Path": u.Path})
	if err := s.notePath(ctx, e, u); err != nil {
		return Result{}, err
	}
	res := Result{Outcome: Duplicate, WorkloadID: id, Entry: &e}
	// An earlier Apply of this record may have committed its entry and then
	// failed before its cap check (that failure is why the record came
	// back). Checking again costs one read and keeps the trip from being
	// lost; enforcement is conditional, so it never acts twice.
	w, err := s.asWorkloads().Get(ctx, id)
	if err != nil {
		return res, fmt.Errorf("spend: duplicate %s, cap check: %w", u.RecordID, err)
	}
	res.Total = w.Total
	res.Decisions, err = s.enforce(ctx, w, u, s.now())
	if err != nil {
		return res, fmt.Errorf("spend: duplicate %s, enforce cap: %w", u.RecordID, err)
	}
	return res, nil
}

// notePath records that another path (or a webhook event) confirmed an
// entry. It changes no total: it is what reconciliation reads to tell a
// record both paths saw from one only one path saw.
func (s *core) notePath(ctx context.Context, e Entry, u Usage) error {
	newPath := !slices.Contains(e.Paths, u.Path)
	newEvent := e.EventID == "" && u.EventID != ""
	if !newPath && !newEvent {
		return nil
	}
	upd := expression.Add(expression.Name("paths"), expression.Value(&types.AttributeValueMemberSS{Value: []string{u.Path}}))
	if newEvent {
		upd = upd.Set(expression.Name("event_id"), expression.Value(u.EventID)).
			Set(expression.Name("gsi1pk"), expression.Value(eventPK(u.EventID))).
			Set(expression.Name("gsi1sk"), expression.Value(entryGSI1SK(u.RecordID)))
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).
		WithCondition(expression.AttributeExists(expression.Name("pk"))).Build()
	if err != nil {
		return err
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.ledger), Key: entryKey(e.RecordID),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()})
	if err != nil {
		return fmt.Errorf("spend: note path on entry %s: %w", e.RecordID, err)
	}
	return nil
}

// deferForWorkload defers a record whose workload failed the ledger
// condition: it is retired, or it vanished.
func (s *core) deferForWorkload(ctx context.Context, u Usage, id string) (Result, error) {
	w, err := s.asWorkloads().Get(ctx, id)
	if errors.Is(err, ErrUnknownWorkload) {
		return s.deferUsage(ctx, u, "", false, ReasonUnknownWorkload)
	}
	if err != nil {
		return Result{}, err
	}
	if w.Status != StatusRetired && w.Total > MaxTotal-u.Units {
		return Result{}, &OverflowError{RecordID: u.RecordID, WorkloadID: id, Total: w.Total, Units: u.Units}
	}
	if w.Status != StatusRetired {
		// The workload changed between the transaction and this read (it
		// moved to another period, or the cache of its period was stale;
		// the read refreshed it): the record is tried again.
		return Result{}, fmt.Errorf("spend: apply %s: workload %s: %w", u.RecordID, id, errWorkloadMoved)
	}
	return s.deferUsage(ctx, u, id, w.Hold, ReasonRetiredWorkload)
}

// deferUsage stores a record that cannot be attributed, once per record ID.
func (s *core) deferUsage(ctx context.Context, u Usage, id string, hold bool, reason string) (Result, error) {
	now := s.now()
	from := now
	if !u.SeenAt.IsZero() {
		from = u.SeenAt // the path's maximum age counts from the first sighting
	}
	deadline := from.Add(s.contracts[u.Path].MaxAge)
	di := deferredItem{PK: recordPK(u.RecordID), SK: skDeferred,
		GSI1PK: deferredOpen, GSI1SK: stampedSK(ddb.Stamp(deadline), u.RecordID),
		RecordID: u.RecordID, WorkloadRef: u.WorkloadRef, WorkloadID: id, Units: u.Units, EventID: u.EventID,
		Path: u.Path, Reason: reason, Owner: s.owner, Hold: hold, Status: "open",
		OccurredAt: ddb.Stamp(u.OccurredAt), ObservedAt: ddb.Stamp(u.ObservedAt), DeferredAt: ddb.Stamp(now), Deadline: ddb.Stamp(deadline),
		Source: u.Source, Meter: u.Meter, Unit: u.Unit, SeenAt: ddb.Stamp(u.SeenAt), Unreconciled: u.Unreconciled}
	item, err := attributevalue.MarshalMap(di)
	if err != nil {
		return Result{}, fmt.Errorf("spend: encode deferred %s: %w", u.RecordID, err)
	}
	if err := s.putEventRef(ctx, u); err != nil {
		return Result{}, err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.ledger), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)")})
	if ddb.ConditionFailed(err) {
		existing, gerr := s.asLedger().GetDeferred(ctx, u.RecordID)
		if gerr != nil {
			return Result{}, gerr
		}
		if existing.Units != u.Units || existing.WorkloadRef != u.WorkloadRef {
			kept := Version{WorkloadID: existing.WorkloadRef, Units: existing.Units, Path: existing.Path, EventID: existing.EventID}
			return s.disagree(ctx, Usage{RecordID: u.RecordID, WorkloadRef: u.WorkloadRef, Units: u.Units,
				ObservedAt: u.ObservedAt, Path: u.Path, EventID: u.EventID}, u.WorkloadRef, kept, nil, &existing)
		}
		s.metrics.Count(MetricDuplicate, 1, map[string]string{"Path": u.Path})
		return Result{Outcome: Deferred, WorkloadID: existing.WorkloadID, Deferred: &existing}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("spend: defer %s: %w", u.RecordID, err)
	}
	s.metrics.Count(MetricDeferred, 1, map[string]string{"Path": u.Path, "Reason": reason})
	s.log.InfoContext(ctx, "usage deferred", "record", u.RecordID, "ref", u.WorkloadRef,
		"reason", reason, "owner", s.owner, "deadline", deadline)
	d := di.deferred()
	return Result{Outcome: Deferred, WorkloadID: id, Deferred: &d}, nil
}

// disagree records a disagreement and enqueues its page, in one
// transaction, once per (record, other workload, other units).
func (s *core) disagree(ctx context.Context, u Usage, otherWorkload string, kept Version, e *Entry, d *DeferredRecord) (Result, error) {
	now := s.now()
	other := Version{WorkloadID: otherWorkload, Units: u.Units, Path: u.Path, EventID: u.EventID}
	dedup := "spend-disagree:" + u.RecordID + ":" + otherWorkload + ":" + strconv.FormatInt(u.Units, 10)
	di := disagreementItem{PK: recordPK(u.RecordID), SK: disagreeSK(otherWorkload, u.Units),
		GSI1PK: disagreePK(kept.WorkloadID), GSI1SK: stampedSK(ddb.Stamp(u.ObservedAt), u.RecordID),
		RecordID: u.RecordID, KeptWorkload: kept.WorkloadID, KeptUnits: kept.Units, KeptPath: kept.Path, KeptEventID: kept.EventID,
		OtherWorkload: other.WorkloadID, OtherUnits: other.Units, OtherPath: other.Path, OtherEventID: other.EventID,
		Owner: s.owner, DedupKey: dedup, ObservedAt: ddb.Stamp(u.ObservedAt), RecordedAt: ddb.Stamp(now)}
	item, err := attributevalue.MarshalMap(di)
	if err != nil {
		return Result{}, fmt.Errorf("spend: encode disagreement %s: %w", u.RecordID, err)
	}
	page, err := s.pages.EnqueueItem(s.disagreementPage(di, now), now)
	if err != nil {
		return Result{}, fmt.Errorf("spend: disagreement page %s: %w", u.RecordID, err)
	}
	err = s.transact(ctx, []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.ledger), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		page,
	})
	if _, _, ok := cancelled(err); ok {
		err = nil // already recorded and paged
	} else if err == nil {
		s.metrics.Count(MetricDisagreement, 1, map[string]string{"Path": u.Path})
		s.log.WarnContext(ctx, "usage disagreement", "record", u.RecordID,
			"kept_units", kept.Units, "kept_workload", kept.WorkloadID, "kept_path", kept.Path,
			"other_units", other.Units, "other_workload", other.WorkloadID, "other_path", other.Path)
	}
	if err != nil {
		return Result{}, fmt.Errorf("spend: record disagreement %s: %w", u.RecordID, err)
	}
	rec := di.disagreement()
	return Result{Outcome: Disagreement, WorkloadID: kept.WorkloadID, Entry: e, Deferred: d, Disagreement: &rec}, nil
}

func (s *core) disagreementPage(di disagreementItem, now time.Time) pager.Event {
	summary := fmt.Sprintf("spend disagreement record=%s kept=%s:%d(%s) other=%s:%d(%s)",
		di.RecordID, di.KeptWorkload, di.KeptUnits, di.KeptPath, di.OtherWorkload, di.OtherUnits, di.OtherPath)
	return pager.Event{RoutingKey: s.routingKey, EventAction: pager.ActionTrigger, DedupKey: di.DedupKey,
		Payload: &pager.Payload{Summary: summary, Source: s.source, Severity: pager.SeverityError,
			Timestamp: now.UTC(), Component: di.KeptWorkload, Group: s.owner, Class: "spend_disagreement",
			CustomDetails: map[string]any{
				"record": di.RecordID, "owner": s.owner,
				"kept":  map[string]any{"workload": di.KeptWorkload, "units": di.KeptUnits, "path": di.KeptPath, "event": di.KeptEventID},
				"other": map[string]any{"workload": di.OtherWorkload, "units": di.OtherUnits, "path": di.OtherPath, "event": di.OtherEventID},
			}}}
}

// GetDeferred returns the deferred item of a record, or [ErrNotFound].
func (s *Ledger) GetDeferred(ctx context.Context, recordID string) (DeferredRecord, error) {
	di, err := getItem[deferredItem](ctx, s.db, s.ledger, deferredKey(recordID), "deferred "+recordID, ErrNotFound)
	if err != nil {
		return DeferredRecord{}, err
	}
	return di.deferred(), nil
}

// OpenDeferred lists unresolved deferred records whose deadline is at or
// before due (zero: all), earliest deadline first.
func (s *Ledger) OpenDeferred(ctx context.Context, due time.Time) ([]DeferredRecord, error) {
	kc := openDeferredDue(due)
	var ds []DeferredRecord
	err := queryItems(ctx, s.db, s.ledger, indexName, kc, true, 0, func(di deferredItem) error {
		ds = append(ds, di.deferred())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("spend: list deferred: %w", err)
	}
	return ds, nil
}

// Reattribute applies a deferred record again, once its reference resolves
// (after an alias was added or a workload created), and resolves the
// deferred item once the record is in the ledger.
func (s *Ledger) Reattribute(ctx context.Context, recordID string) (Result, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.ledger),
		Key: deferredKey(recordID), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Result{}, fmt.Errorf("spend: get deferred %s: %w", recordID, err)
	}
	if len(out.Item) == 0 {
		return Result{}, fmt.Errorf("spend: deferred %s: %w", recordID, ErrNotFound)
	}
	var di deferredItem
	if err := attributevalue.UnmarshalMap(out.Item, &di); err != nil {
		return Result{}, fmt.Errorf("spend: decode deferred %s: %w", recordID, err)
	}
	res, err := s.Apply(ctx, di.usage())
	if err != nil || (res.Outcome != Applied && res.Outcome != Duplicate) {
		return res, err
	}
	upd := expression.Set(expression.Name("status"), expression.Value("resolved")).
		Set(expression.Name("resolved_at"), expression.Value(ddb.Stamp(s.now()))).
		Set(expression.Name("gsi1pk"), expression.Value(deferredResolved))
	expr, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return res, err
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.ledger), Key: deferredKey(recordID),
		UpdateExpression: expr.Update(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()})
	if err != nil {
		return res, fmt.Errorf("spend: resolve deferred %s: %w", recordID, err)
	}
	return res, nil
}
