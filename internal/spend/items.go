package spend

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
)

// workloadItem is the stored form of a [Workload].
type workloadItem struct {
	PK              string `dynamodbav:"pk"`
	SK              string `dynamodbav:"sk"`
	GSI1PK          string `dynamodbav:"gsi1pk"`
	GSI1SK          string `dynamodbav:"gsi1sk"`
	ID              string `dynamodbav:"id"`
	Owner           string `dynamodbav:"owner"`
	RoutingKey      string `dynamodbav:"routing_key"`
	Cap             int64  `dynamodbav:"cap"`
	Step            int64  `dynamodbav:"step"`
	Status          string `dynamodbav:"status"`
	Hold            bool   `dynamodbav:"hold"`
	Total           int64  `dynamodbav:"total"`
	CapEpoch        int64  `dynamodbav:"cap_epoch"`
	EscalationLevel int64  `dynamodbav:"esc_level"`
	LastEventID     string `dynamodbav:"last_event_id,omitempty"`
	LastRecordID    string `dynamodbav:"last_record_id,omitempty"`
	LastUnits       int64  `dynamodbav:"last_units,omitempty"`
	LastPath        string `dynamodbav:"last_path,omitempty"`
	LastObservedAt  string `dynamodbav:"last_observed_at,omitempty"`
	LastAcceptedAt  string `dynamodbav:"last_accepted_at,omitempty"`
	LastDecision    string `dynamodbav:"last_decision,omitempty"`
	NextReconAt     string `dynamodbav:"next_recon_at,omitempty"`
	OverrideBy      string `dynamodbav:"override_by,omitempty"`
	OverrideReason  string `dynamodbav:"override_reason,omitempty"`
	OverrideAt      string `dynamodbav:"override_at,omitempty"`
	OverrideEpoch   int64  `dynamodbav:"override_epoch,omitempty"`
	CreatedAt       string `dynamodbav:"created_at"`
	UpdatedAt       string `dynamodbav:"updated_at"`

	// Period, Anchor, TimeZone, Grace and AtBoundary are the workload's
	// [Periods] (period.go); PeriodID is the current period, the one
	// "total" counts, and PrevPeriodID the one before it. A workload of
	// a build before periods has none of them: a lifetime total.
	Period       string `dynamodbav:"period,omitempty"`
	Anchor       string `dynamodbav:"anchor,omitempty"`
	TimeZone     string `dynamodbav:"time_zone,omitempty"`
	Grace        string `dynamodbav:"grace,omitempty"`
	AtBoundary   string `dynamodbav:"at_boundary,omitempty"`
	PeriodID     string `dynamodbav:"period_id,omitempty"`
	PrevPeriodID string `dynamodbav:"prev_period_id,omitempty"`
	// PendingPeriod, PendingAnchor and PendingTimeZone are a change of
	// period ([Caps.SetPeriod]) that takes effect at PendingFrom, the
	// current period's end; the boundary there applies it. PeriodSince is
	// when the period in force took effect (empty: from the start), and
	// WasPeriod, WasAnchor and WasTimeZone the period before it, by which
	// late records of its periods still count. A pending change whose
	// PendingFrom is PeriodSince is the one applied: the boundary sets
	// rather than removes (the local DynamoDB ignores REMOVE in a
	// transaction).
	PendingPeriod   string `dynamodbav:"pending_period,omitempty"`
	PendingAnchor   string `dynamodbav:"pending_anchor,omitempty"`
	PendingTimeZone string `dynamodbav:"pending_time_zone,omitempty"`
	PendingFrom     string `dynamodbav:"pending_from,omitempty"`
	PeriodSince     string `dynamodbav:"period_since,omitempty"`
	WasPeriod       string `dynamodbav:"was_period,omitempty"`
	WasAnchor       string `dynamodbav:"was_anchor,omitempty"`
	WasTimeZone     string `dynamodbav:"was_time_zone,omitempty"`

	// EarlierRoute is the routing key as builds before the name
	// routing_key stored it ("route"). It is read, never written. The
	// retention window that bounds the ledger's earlier names does not
	// bound it: a workload item never expires, so the read stays until
	// every workload created before the rename has been stored again
	// under routing_key.
	EarlierRoute string `dynamodbav:"route,omitempty"`
}

func (it workloadItem) workload() Workload {
	w := Workload{
		ID: it.ID, Owner: it.Owner, RoutingKey: cmp.Or(it.RoutingKey, it.EarlierRoute), Cap: it.Cap, Step: it.Step,
		Status: Status(it.Status), Hold: it.Hold, Total: it.Total, CapEpoch: it.CapEpoch,
		EscalationLevel: it.EscalationLevel,
		LastAccepted: LastEvent{EventID: it.LastEventID, RecordID: it.LastRecordID, Units: it.LastUnits,
			Path: it.LastPath, ObservedAt: ddb.ParseStamp(it.LastObservedAt), AcceptedAt: ddb.ParseStamp(it.LastAcceptedAt)},
		LastDecision: it.LastDecision,
		NextReconAt:  ddb.ParseStamp(it.NextReconAt),
		Override: Override{By: it.OverrideBy, Reason: it.OverrideReason, At: ddb.ParseStamp(it.OverrideAt),
			Epoch: it.OverrideEpoch},
		CreatedAt: ddb.ParseStamp(it.CreatedAt), UpdatedAt: ddb.ParseStamp(it.UpdatedAt),
		PeriodID: it.PeriodID, PrevPeriodID: it.PrevPeriodID,
	}
	// A stored period that no longer parses leaves Periods a lifetime
	// total with periodErr set: every write is conditioned on the stored
	// period, so such a workload fails its writes rather than counting
	// them in the wrong total.
	w.Periods, w.periodErr = it.periodsOf()
	w.pending = pendingStored{it.PendingPeriod, it.PendingAnchor, it.PendingTimeZone, it.PendingFrom}
	return w
}

type aliasItem struct {
	PK         string `dynamodbav:"pk"`
	SK         string `dynamodbav:"sk"`
	GSI1PK     string `dynamodbav:"gsi1pk"`
	GSI1SK     string `dynamodbav:"gsi1sk"`
	Ref        string `dynamodbav:"ref"`
	WorkloadID string `dynamodbav:"workload_id"`
	CreatedAt  string `dynamodbav:"created_at"`
}

// entryItem is the stored form of an [Entry].
type entryItem struct {
	PK          string   `dynamodbav:"pk"`
	SK          string   `dynamodbav:"sk"`
	GSI1PK      string   `dynamodbav:"gsi1pk,omitempty"`
	GSI1SK      string   `dynamodbav:"gsi1sk,omitempty"`
	RecordID    string   `dynamodbav:"record_id"`
	WorkloadID  string   `dynamodbav:"workload_id"`
	WorkloadRef string   `dynamodbav:"workload_ref"`
	Units       int64    `dynamodbav:"units"`
	EventID     string   `dynamodbav:"event_id,omitempty"`
	Path        string   `dynamodbav:"path"`
	Paths       []string `dynamodbav:"paths,stringset"`
	OccurredAt  string   `dynamodbav:"occurred_at"`
	ObservedAt  string   `dynamodbav:"observed_at"`
	AcceptedAt  string   `dynamodbav:"accepted_at"`
	SeenAt      string   `dynamodbav:"seen_at,omitempty"`
	Source      string   `dynamodbav:"source,omitempty"`
	Meter       string   `dynamodbav:"meter,omitempty"`
	Unit        string   `dynamodbav:"unit,omitempty"`
	// Bucket and Absorbed are set on a record counted in a bucket of a
	// provider of sums: the bucket, and how many of its units the
	// provider's earlier value already counted.
	Bucket   string `dynamodbav:"bucket,omitempty"`
	Absorbed int64  `dynamodbav:"absorbed,omitempty"`
}

// appliedFirst orders an entry's paths, stored as a string set that comes
// back in no particular order: the path that applied the record first,
// then the others in order.
func appliedFirst(applied string, paths []string) []string {
	if len(paths) == 0 {
		return nil
	}
	out := slices.Sorted(slices.Values(paths))
	if i := slices.Index(out, applied); i > 0 {
		out = slices.Insert(slices.Delete(out, i, i+1), 0, applied)
	}
	return out
}

func (it entryItem) entry() Entry {
	return Entry{RecordID: it.RecordID, WorkloadID: it.WorkloadID, WorkloadRef: it.WorkloadRef,
		Units: it.Units, EventID: it.EventID, Path: it.Path, Paths: appliedFirst(it.Path, it.Paths),
		OccurredAt: ddb.ParseStamp(it.OccurredAt), ObservedAt: ddb.ParseStamp(it.ObservedAt),
		AcceptedAt: ddb.ParseStamp(it.AcceptedAt), SeenAt: ddb.ParseStamp(it.SeenAt), Source: it.Source, Meter: it.Meter, Unit: it.Unit,
		Bucket: it.Bucket, Absorbed: it.Absorbed}
}

// deferredItem is the stored form of a [Deferred].
type deferredItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	GSI1PK      string `dynamodbav:"gsi1pk,omitempty"`
	GSI1SK      string `dynamodbav:"gsi1sk,omitempty"`
	RecordID    string `dynamodbav:"record_id"`
	WorkloadRef string `dynamodbav:"workload_ref"`
	WorkloadID  string `dynamodbav:"workload_id,omitempty"`
	Units       int64  `dynamodbav:"units"`
	EventID     string `dynamodbav:"event_id,omitempty"`
	Path        string `dynamodbav:"path"`
	Reason      string `dynamodbav:"reason"`
	Owner       string `dynamodbav:"owner"`
	Hold        bool   `dynamodbav:"hold"`
	Status      string `dynamodbav:"status"`
	OccurredAt  string `dynamodbav:"occurred_at"`
	ObservedAt  string `dynamodbav:"observed_at"`
	DeferredAt  string `dynamodbav:"deferred_at"`
	Deadline    string `dynamodbav:"deadline"`
	ResolvedAt  string `dynamodbav:"resolved_at,omitempty"`
	// Source, Meter, Unit, SeenAt and Unreconciled are the record's as it
	// arrived, so that a reattributed record lands in its bucket of a
	// provider of sums and keeps its export's rule.
	Source       string `dynamodbav:"source,omitempty"`
	Meter        string `dynamodbav:"meter,omitempty"`
	Unit         string `dynamodbav:"unit,omitempty"`
	SeenAt       string `dynamodbav:"seen_at,omitempty"`
	Unreconciled bool   `dynamodbav:"unreconciled,omitempty"`
}

func (it deferredItem) deferred() DeferredRecord {
	return DeferredRecord{RecordID: it.RecordID, WorkloadRef: it.WorkloadRef, WorkloadID: it.WorkloadID,
		Units: it.Units, EventID: it.EventID, Path: it.Path, Reason: it.Reason, Owner: it.Owner,
		Hold: it.Hold, Status: it.Status, OccurredAt: ddb.ParseStamp(it.OccurredAt),
		ObservedAt: ddb.ParseStamp(it.ObservedAt), DeferredAt: ddb.ParseStamp(it.DeferredAt),
		Deadline: ddb.ParseStamp(it.Deadline), ResolvedAt: ddb.ParseStamp(it.ResolvedAt)}
}

func (it deferredItem) usage() Usage {
	return Usage{RecordID: it.RecordID, WorkloadRef: it.WorkloadRef, Units: it.Units,
		OccurredAt: ddb.ParseStamp(it.OccurredAt), ObservedAt: ddb.ParseStamp(it.ObservedAt),
		Path: it.Path, EventID: it.EventID, Source: it.Source, Meter: it.Meter, Unit: it.Unit,
		SeenAt: ddb.ParseStamp(it.SeenAt), Unreconciled: it.Unreconciled}
}

// disagreementItem is the stored form of a [Disagreement].
type disagreementItem struct {
	PK            string `dynamodbav:"pk"`
	SK            string `dynamodbav:"sk"`
	GSI1PK        string `dynamodbav:"gsi1pk"`
	GSI1SK        string `dynamodbav:"gsi1sk"`
	RecordID      string `dynamodbav:"record_id"`
	KeptWorkload  string `dynamodbav:"kept_workload"`
	KeptUnits     int64  `dynamodbav:"kept_units"`
	KeptPath      string `dynamodbav:"kept_path"`
	KeptEventID   string `dynamodbav:"kept_event_id,omitempty"`
	OtherWorkload string `dynamodbav:"other_workload"`
	OtherUnits    int64  `dynamodbav:"other_units"`
	OtherPath     string `dynamodbav:"other_path"`
	OtherEventID  string `dynamodbav:"other_event_id,omitempty"`
	Owner         string `dynamodbav:"owner"`
	DedupKey      string `dynamodbav:"dedup_key"`
	ObservedAt    string `dynamodbav:"observed_at"`
	RecordedAt    string `dynamodbav:"recorded_at"`
}

func (it disagreementItem) disagreement() DisagreementRecord {
	return DisagreementRecord{RecordID: it.RecordID,
		Kept:  Version{WorkloadID: it.KeptWorkload, Units: it.KeptUnits, Path: it.KeptPath, EventID: it.KeptEventID},
		Other: Version{WorkloadID: it.OtherWorkload, Units: it.OtherUnits, Path: it.OtherPath, EventID: it.OtherEventID},
		Owner: it.Owner, DedupKey: it.DedupKey,
		ObservedAt: ddb.ParseStamp(it.ObservedAt), RecordedAt: ddb.ParseStamp(it.RecordedAt)}
}

// decisionItem is the stored form of a [Decision].
type decisionItem struct {
	PK           string `dynamodbav:"pk"`
	SK           string `dynamodbav:"sk"`
	GSI1PK       string `dynamodbav:"gsi1pk,omitempty"`
	GSI1SK       string `dynamodbav:"gsi1sk,omitempty"`
	WorkloadID   string `dynamodbav:"workload_id"`
	Action       string `dynamodbav:"action"`
	EventID      string `dynamodbav:"event_id,omitempty"`
	RecordID     string `dynamodbav:"record_id"`
	Units        int64  `dynamodbav:"units"`
	Attributed   int64  `dynamodbav:"attributed"`
	Cap          int64  `dynamodbav:"cap"`
	Step         int64  `dynamodbav:"step"`
	CapEpoch     int64  `dynamodbav:"cap_epoch"`
	ObservedAt   string `dynamodbav:"observed_at"`
	DecidedAt    string `dynamodbav:"decided_at"`
	DedupKey     string `dynamodbav:"dedup_key"`
	Line         string `dynamodbav:"line"`
	LastEventID  string `dynamodbav:"last_event_id,omitempty"`
	LastRecordID string `dynamodbav:"last_record_id,omitempty"`
	NextReconAt  string `dynamodbav:"next_recon_at,omitempty"`
}

func (it decisionItem) decision() Decision {
	return Decision{WorkloadID: it.WorkloadID, Action: it.Action, EventID: it.EventID,
		RecordID: it.RecordID, Units: it.Units, Attributed: it.Attributed, Cap: it.Cap, Step: it.Step,
		CapEpoch: it.CapEpoch, ObservedAt: ddb.ParseStamp(it.ObservedAt), DecidedAt: ddb.ParseStamp(it.DecidedAt),
		DedupKey: it.DedupKey, Line: it.Line,
		LastAccepted: LastEvent{EventID: it.LastEventID, RecordID: it.LastRecordID},
		NextReconAt:  ddb.ParseStamp(it.NextReconAt)}
}

// reconRunItem is the stored form of a [ReconRun].
type reconRunItem struct {
	PK            string `dynamodbav:"pk"`
	SK            string `dynamodbav:"sk"`
	WorkloadID    string `dynamodbav:"workload_id"`
	StartedAt     string `dynamodbav:"started_at"`
	FinishedAt    string `dynamodbav:"finished_at,omitempty"`
	Records       int64  `dynamodbav:"records"`
	Missed        int64  `dynamodbav:"missed"`
	Duplicates    int64  `dynamodbav:"duplicates"`
	Disagreements int64  `dynamodbav:"disagreements"`
	Deferred      int64  `dynamodbav:"deferred"`
	Note          string `dynamodbav:"note,omitempty"`
	NextReconAt   string `dynamodbav:"next_recon_at,omitempty"`

	RunID        string   `dynamodbav:"run_id,omitempty"`
	WindowStart  string   `dynamodbav:"window_start,omitempty"`
	WindowEnd    string   `dynamodbav:"window_end,omitempty"`
	CursorBefore string   `dynamodbav:"cursor_before,omitempty"`
	CursorAfter  string   `dynamodbav:"cursor_after,omitempty"`
	Matched      int64    `dynamodbav:"matched,omitempty"`
	Unseen       int64    `dynamodbav:"unseen,omitempty"`
	Reattributed int64    `dynamodbav:"reattributed,omitempty"`
	Decisions    []string `dynamodbav:"decisions,omitempty"`
	Tier         string   `dynamodbav:"tier,omitempty"`
	Interval     string   `dynamodbav:"interval,omitempty"`

	// EarlierApplied and EarlierRedriven are Missed and Reattributed as
	// builds before those names stored them ("applied", "redriven"). They
	// are read, never written, for the retention window (35 days) after
	// the upgrade; by then every workload's latest records are this
	// build's.
	EarlierApplied  int64 `dynamodbav:"applied,omitempty"`
	EarlierRedriven int64 `dynamodbav:"redriven,omitempty"`
}

// missed is the run's Missed count under either name.
func (it reconRunItem) missed() int64 { return cmp.Or(it.Missed, it.EarlierApplied) }

// reattributed is the run's Reattributed count under either name.
func (it reconRunItem) reattributed() int64 { return cmp.Or(it.Reattributed, it.EarlierRedriven) }

// cancelled reports, for a cancelled transaction, which items failed their
// condition and whether a conflict or throttling cancelled it
// ([ddb.Cancelled]). ok is false when err is not a cancellation.
func cancelled(err error) (failed []bool, conflict bool, ok bool) { return ddb.Cancelled(err) }

// getItem reads one item with a consistent read and decodes it into T. An
// absent item is reported as notFound, wrapped with what it was.
func getItem[T any](ctx context.Context, db DB, table string, key map[string]types.AttributeValue, what string, notFound error) (T, error) {
	v, found, err := ddb.Get[T](ctx, db, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return v, fmt.Errorf("spend: get %s: %w", what, err)
	}
	if !found {
		return v, fmt.Errorf("spend: %s: %w", what, notFound)
	}
	return v, nil
}

// eventRefItem points from a webhook event ID (on gsi1) to its record.
type eventRefItem struct {
	PK       string `dynamodbav:"pk"`
	SK       string `dynamodbav:"sk"`
	GSI1PK   string `dynamodbav:"gsi1pk"`
	GSI1SK   string `dynamodbav:"gsi1sk"`
	RecordID string `dynamodbav:"record_id"`
	EventID  string `dynamodbav:"event_id"`
}

// putEventRef records, before a record is deferred, which record its event
// ID names, so `event explain <event>` finds it. It is idempotent, and a
// record without an event ID needs none.
func (s *core) putEventRef(ctx context.Context, u Usage) error {
	if u.EventID == "" {
		return nil
	}
	item, err := attributevalue.MarshalMap(eventRefItem{PK: recordPK(u.RecordID), SK: skEventRef,
		GSI1PK: eventPK(u.EventID), GSI1SK: eventRefSK(u.RecordID), RecordID: u.RecordID, EventID: u.EventID})
	if err != nil {
		return fmt.Errorf("spend: encode event reference %s: %w", u.EventID, err)
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.ledger), Item: item}); err != nil {
		return fmt.Errorf("spend: event reference %s: %w", u.EventID, err)
	}
	return nil
}
