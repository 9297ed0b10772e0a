package spend

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/pager"
)

// Store operations for reconciliation: the confirmation markers of records
// only the webhook path has seen, and the deferred records' unresolved page
// and hold marks.
//
// A record applied by the webhook path gets, in the same transaction as its
// entry, a marker item:
//
//	item     pk            sk           gsi1pk                   gsi1sk
//	marker   REC#<record>  UNCONFIRMED  UNCONFIRMED#<shard>      <seen>#<record>
//
// The marker moves to UNSEEN#<shard> when the export still lacks the record
// past its consistency horizon (and a page goes out, once), and to
// CONFIRMED#<shard> once the export shows it. The shard (0-15, a hash of the
// record ID) spreads the index partition of a busy webhook path.

const (
	unconfirmedShards = 16

	// Marker statuses.
	MarkerUnconfirmed = "unconfirmed"
	MarkerUnseen      = "unseen"
	MarkerConfirmed   = "confirmed"

	// markerFlagged is MarkerUnseen as builds before that name stored it
	// (under gsi1pk FLAGGED#<shard>, with flagged_at). Confirm reads it as
	// MarkerUnseen for the retention window (35 days) after the upgrade:
	// no path keeps a record longer, so no later export shows one.
	markerFlagged = "flagged"
)

// markerStatus is a stored marker status under this build's names.
func markerStatus(stored string) string {
	if stored == markerFlagged {
		return MarkerUnseen
	}
	return stored
}

func markerShard(rec string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(rec))
	return strconv.Itoa(int(h.Sum32() % unconfirmedShards))
}

// markerItem is the stored form of an [UnconfirmedEntry].
type markerItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	GSI1PK      string `dynamodbav:"gsi1pk"`
	GSI1SK      string `dynamodbav:"gsi1sk"`
	RecordID    string `dynamodbav:"record_id"`
	WorkloadID  string `dynamodbav:"workload_id"`
	WorkloadRef string `dynamodbav:"workload_ref"`
	Units       int64  `dynamodbav:"units"`
	EventID     string `dynamodbav:"event_id,omitempty"`
	Status      string `dynamodbav:"status"`
	OccurredAt  string `dynamodbav:"occurred_at,omitempty"`
	ObservedAt  string `dynamodbav:"observed_at,omitempty"`
	AcceptedAt  string `dynamodbav:"accepted_at"`
	UnseenAt    string `dynamodbav:"unseen_at,omitempty"`
	ConfirmedAt string `dynamodbav:"confirmed_at,omitempty"`
	DedupKey    string `dynamodbav:"dedup_key,omitempty"`
}

// UnconfirmedEntry is a ledger entry applied by the webhook path that the
// provider's export has not shown yet.
type UnconfirmedEntry struct {
	RecordID    string
	WorkloadID  string
	WorkloadRef string
	Units       int64
	EventID     string
	// Status is "unconfirmed", "unseen" or "confirmed".
	Status string
	// Due is the time the horizon counts from: when hookline first saw
	// the record (markers of earlier builds: its occurrence).
	Due         time.Time
	OccurredAt  time.Time
	ObservedAt  time.Time
	AcceptedAt  time.Time
	UnseenAt    time.Time
	ConfirmedAt time.Time
	DedupKey    string
}

func (it markerItem) entry() UnconfirmedEntry {
	e := UnconfirmedEntry{RecordID: it.RecordID, WorkloadID: it.WorkloadID, WorkloadRef: it.WorkloadRef,
		Units: it.Units, EventID: it.EventID, Status: it.Status, OccurredAt: ddb.ParseStamp(it.OccurredAt),
		ObservedAt: ddb.ParseStamp(it.ObservedAt), AcceptedAt: ddb.ParseStamp(it.AcceptedAt),
		UnseenAt: ddb.ParseStamp(it.UnseenAt), ConfirmedAt: ddb.ParseStamp(it.ConfirmedAt), DedupKey: it.DedupKey}
	due, _, _ := strings.Cut(it.GSI1SK, "#")
	e.Due = ddb.ParseStamp(due)
	return e
}

// markerPut is the marker of a record applied by the webhook path; it joins
// the ledger transaction of the entry. Its horizon counts from when
// hookline first saw the record.
func (s *core) markerPut(u Usage, id, now string) (types.TransactWriteItem, error) {
	// A record's age counts from when hookline first saw it, not from
	// when it happened: a source may send usage weeks old, which the
	// export cannot have shown before it arrived.
	dueStamp := ddb.Stamp(u.seenAt(u.OccurredAt))
	if dueStamp == "" {
		dueStamp = now
	}
	item, err := attributevalue.MarshalMap(markerItem{PK: recordPK(u.RecordID), SK: skUnconfirmed,
		GSI1PK: unconfirmedPK(markerShard(u.RecordID)), GSI1SK: stampedSK(dueStamp, u.RecordID),
		RecordID: u.RecordID, WorkloadID: id, WorkloadRef: u.WorkloadRef, Units: u.Units, EventID: u.EventID,
		Status: MarkerUnconfirmed, OccurredAt: ddb.Stamp(u.OccurredAt), ObservedAt: ddb.Stamp(u.ObservedAt), AcceptedAt: now})
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("spend: encode marker %s: %w", u.RecordID, err)
	}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.ledger), Item: item}}, nil
}

// UnconfirmedBefore lists the webhook entries the export has not confirmed
// and that are not unseen yet, whose usage occurred at or before before,
// oldest first within each shard.
func (s *Recon) UnconfirmedBefore(ctx context.Context, before time.Time) ([]UnconfirmedEntry, error) {
	var out []UnconfirmedEntry
	for shard := range unconfirmedShards {
		kc := expression.Key("gsi1pk").Equal(expression.Value(unconfirmedPK(strconv.Itoa(shard)))).
			And(expression.Key("gsi1sk").LessThanEqual(expression.Value(stampedUpTo(before))))
		err := queryItems(ctx, s.db, s.ledger, indexName, kc, true, 0, func(mi markerItem) error {
			out = append(out, mi.entry())
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("spend: list unconfirmed: %w", err)
		}
	}
	return out, nil
}

// Confirm records that the export showed a record. It returns the marker's
// status before: "unconfirmed", "unseen" (the export shows it at last), or ""
// when the record has no open marker (it was applied by the poll path, or
// is already confirmed).
func (s *Recon) Confirm(ctx context.Context, recordID string) (string, error) {
	upd := expression.Set(expression.Name("status"), expression.Value(MarkerConfirmed)).
		Set(expression.Name("confirmed_at"), expression.Value(ddb.Stamp(s.now()))).
		Set(expression.Name("gsi1pk"), expression.Value(confirmedPK(markerShard(recordID))))
	cond := expression.AttributeExists(expression.Name("pk")).
		And(expression.Name("status").NotEqual(expression.Value(MarkerConfirmed)))
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return "", err
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.ledger), Key: markerKey(recordID),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValues: types.ReturnValueUpdatedOld})
	if ddb.ConditionFailed(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("spend: confirm %s: %w", recordID, err)
	}
	return markerStatus(stringAttr(out.Attributes, "status")), nil
}

// MarkUnseen marks unseen a webhook entry that the export still lacks past
// the consistency horizon, and pages the reconciliation owner, in one
// transaction, once per record. It reports false when the marker was
// already unseen or confirmed.
func (s *Recon) MarkUnseen(ctx context.Context, e UnconfirmedEntry, horizon time.Duration) (bool, error) {
	now := s.now()
	dedup := "spend-unseen:" + e.RecordID
	upd := expression.Set(expression.Name("status"), expression.Value(MarkerUnseen)).
		Set(expression.Name("unseen_at"), expression.Value(ddb.Stamp(now))).
		Set(expression.Name("dedup_key"), expression.Value(dedup)).
		Set(expression.Name("gsi1pk"), expression.Value(unseenPK(markerShard(e.RecordID))))
	cond := expression.Name("status").Equal(expression.Value(MarkerUnconfirmed))
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return false, err
	}
	page, err := s.pages.EnqueueItem(s.unseenPage(e, dedup, horizon, now), now)
	if err != nil {
		return false, fmt.Errorf("spend: unseen page %s: %w", e.RecordID, err)
	}
	err = s.transact(ctx, []types.TransactWriteItem{
		{Update: &types.Update{TableName: aws.String(s.ledger), Key: markerKey(e.RecordID),
			UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()}},
		page,
	})
	if _, _, ok := cancelled(err); ok {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("spend: mark unseen %s: %w", e.RecordID, err)
	}
	s.log.WarnContext(ctx, "usage unseen by export", "record", e.RecordID, "workload", e.WorkloadID,
		"units", e.Units, "due", e.Due, "horizon", horizon)
	return true, nil
}

func (s *core) unseenPage(e UnconfirmedEntry, dedup string, horizon time.Duration, now time.Time) pager.Event {
	summary := fmt.Sprintf("spend unseen record=%s workload=%s units=%d path=webhook missing=poll occurred=%s",
		e.RecordID, e.WorkloadID, e.Units, e.Due.UTC().Format(time.RFC3339))
	return pager.Event{RoutingKey: s.routingKey, EventAction: pager.ActionTrigger, DedupKey: dedup,
		Payload: &pager.Payload{Summary: summary, Source: s.source, Severity: pager.SeverityError,
			Timestamp: now.UTC(), Component: e.WorkloadID, Group: s.owner, Class: "spend_unseen",
			CustomDetails: map[string]any{
				"record": e.RecordID, "owner": s.owner, "horizon": horizon.String(),
				"kept":    map[string]any{"workload": e.WorkloadID, "units": e.Units, "path": PathWebhook, "event": e.EventID},
				"missing": PathPoll, "occurred": formatOptional(e.OccurredAt), "observed": formatOptional(e.ObservedAt),
			}}}
}

// DeferredState is an open deferred record with what reconciliation has
// already done about it.
type DeferredState struct {
	Record DeferredRecord
	// PagedKey is the dedup key of the unresolved-attribution page that
	// named the record, if one did.
	PagedKey string
	PagedAt  time.Time
	// HeldAt is when a hold decision was recorded, if one was.
	HeldAt     time.Time
	HoldReason string
}

type deferredStateItem struct {
	deferredItem
	PagedKey   string `dynamodbav:"unresolved_page,omitempty"`
	PagedAt    string `dynamodbav:"paged_at,omitempty"`
	HeldAt     string `dynamodbav:"held_at,omitempty"`
	HoldReason string `dynamodbav:"hold_reason,omitempty"`
}

func (di deferredStateItem) state() DeferredState {
	return DeferredState{Record: di.deferred(), PagedKey: di.PagedKey, PagedAt: ddb.ParseStamp(di.PagedAt),
		HeldAt: ddb.ParseStamp(di.HeldAt), HoldReason: di.HoldReason}
}

// DeferredStates lists open deferred records whose deadline is at or before
// due (zero: all), earliest deadline first, with their page and hold marks.
func (s *Recon) DeferredStates(ctx context.Context, due time.Time) ([]DeferredState, error) {
	kc := openDeferredDue(due)
	var out []DeferredState
	err := queryItems(ctx, s.db, s.ledger, indexName, kc, true, 0, func(di deferredStateItem) error {
		out = append(out, di.state())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("spend: list deferred states: %w", err)
	}
	return out, nil
}

// MarkUnresolvedPaged records, once, the dedup key of the page that named
// an unresolved deferred record.
func (s *Recon) MarkUnresolvedPaged(ctx context.Context, recordID, dedupKey string) error {
	upd := expression.Set(expression.Name("unresolved_page"), expression.Value(dedupKey)).
		Set(expression.Name("paged_at"), expression.Value(ddb.Stamp(s.now())))
	cond := expression.AttributeExists(expression.Name("pk")).
		And(expression.AttributeNotExists(expression.Name("unresolved_page")))
	_, err := s.markDeferred(ctx, recordID, "mark paged", upd, cond)
	return err
}

// HoldDeferred records, once, an explicit hold decision on an unresolved
// deferred record whose workload's policy is to hold: the amount stays
// unattributed and open for an operator, and no page goes out. It reports
// false when a hold was already recorded.
func (s *Recon) HoldDeferred(ctx context.Context, recordID, reason string) (bool, error) {
	upd := expression.Set(expression.Name("held_at"), expression.Value(ddb.Stamp(s.now()))).
		Set(expression.Name("hold_reason"), expression.Value(reason))
	cond := expression.AttributeExists(expression.Name("pk")).
		And(expression.AttributeNotExists(expression.Name("held_at")))
	return s.markDeferred(ctx, recordID, "hold", upd, cond)
}

// markDeferred updates a deferred item under cond; it reports false when
// cond failed (the mark was already there).
func (s *core) markDeferred(ctx context.Context, recordID, what string, upd expression.UpdateBuilder, cond expression.ConditionBuilder) (bool, error) {
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return false, err
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.ledger), Key: deferredKey(recordID),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()})
	if ddb.ConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("spend: %s deferred %s: %w", what, recordID, err)
	}
	return true, nil
}

func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func parseDurationText(s string) time.Duration {
	d, _ := time.ParseDuration(s)
	return d
}
