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

// Limits on units. Both are 2^53: every integer up to it is exact in an
// IEEE double, so a total stays exact in DynamoDB, in JSON readers and in
// emulators that keep numbers as float64.
const (
	// MaxUnits is the largest Units a usage record may carry.
	MaxUnits int64 = 1 << 53
	// MaxTotal is the largest total a workload may reach. A record that
	// would carry a total past it is refused with an [*OverflowError].
	MaxTotal int64 = 1 << 53
)

// ErrTotalOverflow means applying a record would carry a workload's total
// past [MaxTotal]. The error is an [*OverflowError].
var ErrTotalOverflow = errors.New("spend: workload total would overflow")

// OverflowError is the typed form of [ErrTotalOverflow].
type OverflowError struct {
	RecordID   string
	WorkloadID string
	// Total is the workload's total when the record was refused.
	Total int64
	Units int64
}

func (e *OverflowError) Error() string {
	return fmt.Sprintf("spend: record %s: workload %s total %d + %d units would pass %d",
		e.RecordID, e.WorkloadID, e.Total, e.Units, MaxTotal)
}

// Unwrap makes errors.Is(err, ErrTotalOverflow) hold.
func (e *OverflowError) Unwrap() error { return ErrTotalOverflow }

// IsRefused reports whether err means the ledger refuses the record for
// good: retrying cannot apply it ([ErrInvalidUsage], [ErrTotalOverflow]).
// Such a record is quarantined ([Ledger.Quarantine]), never retried.
func IsRefused(err error) bool {
	return errors.Is(err, ErrInvalidUsage) || errors.Is(err, ErrTotalOverflow)
}

// QuarantineRecord is a usage record the ledger refused, kept with the
// reason so that the reconciliation owner can decide what it should have
// been.
type QuarantineRecord struct {
	RecordID    string
	WorkloadRef string
	Units       int64
	EventID     string
	Path        string
	Reason      string
	Owner       string
	// DedupKey is the key of the page sent to the reconciliation owner.
	DedupKey   string
	OccurredAt time.Time
	ObservedAt time.Time
	// QuarantinedAt is when the record was first refused.
	QuarantinedAt time.Time
}

// QuarantineDedupKey is the dedup key of a quarantined record's page.
func QuarantineDedupKey(recordID string) string { return "spend-quarantine:" + recordID }

type quarantineItem struct {
	PK            string `dynamodbav:"pk"`
	SK            string `dynamodbav:"sk"`
	GSI1PK        string `dynamodbav:"gsi1pk"`
	GSI1SK        string `dynamodbav:"gsi1sk"`
	RecordID      string `dynamodbav:"record_id"`
	WorkloadRef   string `dynamodbav:"workload_ref"`
	Units         string `dynamodbav:"units"` // text: a refused amount may not fit a number
	EventID       string `dynamodbav:"event_id,omitempty"`
	Path          string `dynamodbav:"path"`
	Reason        string `dynamodbav:"reason"`
	Owner         string `dynamodbav:"owner"`
	DedupKey      string `dynamodbav:"dedup_key"`
	OccurredAt    string `dynamodbav:"occurred_at,omitempty"`
	ObservedAt    string `dynamodbav:"observed_at,omitempty"`
	QuarantinedAt string `dynamodbav:"quarantined_at"`
}

func (it quarantineItem) record() QuarantineRecord {
	units, _ := strconv.ParseInt(it.Units, 10, 64)
	return QuarantineRecord{RecordID: it.RecordID, WorkloadRef: it.WorkloadRef, Units: units, EventID: it.EventID,
		Path: it.Path, Reason: it.Reason, Owner: it.Owner, DedupKey: it.DedupKey,
		OccurredAt: ddb.ParseStamp(it.OccurredAt), ObservedAt: ddb.ParseStamp(it.ObservedAt),
		QuarantinedAt: ddb.ParseStamp(it.QuarantinedAt)}
}

// QuarantineSummary is the one-line summary of a quarantine page.
func QuarantineSummary(q QuarantineRecord) string {
	return fmt.Sprintf("spend quarantine record=%s ref=%s units=%d path=%s reason=%q",
		q.RecordID, q.WorkloadRef, q.Units, q.Path, q.Reason)
}

// Quarantine stores a usage record the ledger refused, with the reason,
// and pages the reconciliation owner, in one transaction, once per record
// ID: a record seen again (a later poll's overlap, a redelivery) returns
// the stored record and first=false, and pages nobody. The record changes
// no total. Nothing stops a later corrected record under another ID.
func (s *Ledger) Quarantine(ctx context.Context, u Usage, reason string) (q QuarantineRecord, first bool, err error) {
	if u.RecordID == "" {
		return QuarantineRecord{}, false, fmt.Errorf("spend: %w: a quarantined record needs its RecordID", ErrInvalidUsage)
	}
	now := s.now()
	qi := quarantineItem{PK: recordPK(u.RecordID), SK: skQuarantine, GSI1PK: quarantinePart,
		GSI1SK: stampedSK(ddb.Stamp(now), u.RecordID), RecordID: u.RecordID, WorkloadRef: u.WorkloadRef,
		Units: strconv.FormatInt(u.Units, 10), EventID: u.EventID, Path: u.Path, Reason: reason, Owner: s.owner,
		DedupKey: QuarantineDedupKey(u.RecordID), OccurredAt: ddb.Stamp(u.OccurredAt), ObservedAt: ddb.Stamp(u.ObservedAt),
		QuarantinedAt: ddb.Stamp(now)}
	item, err := attributevalue.MarshalMap(qi)
	if err != nil {
		return QuarantineRecord{}, false, fmt.Errorf("spend: encode quarantine %s: %w", u.RecordID, err)
	}
	q = qi.record()
	page, err := s.pages.EnqueueItem(s.quarantinePage(q, now), now)
	if err != nil {
		return QuarantineRecord{}, false, fmt.Errorf("spend: quarantine page %s: %w", u.RecordID, err)
	}
	err = s.transact(ctx, []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.ledger), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		page,
	})
	if _, _, ok := cancelled(err); ok {
		existing, gerr := s.Quarantined(ctx, u.RecordID)
		if gerr != nil {
			return QuarantineRecord{}, false, gerr
		}
		return existing, false, nil
	}
	if err != nil {
		return QuarantineRecord{}, false, fmt.Errorf("spend: quarantine %s: %w", u.RecordID, err)
	}
	s.metrics.Count(MetricQuarantined, 1, map[string]string{"Path": u.Path})
	s.log.WarnContext(ctx, "usage quarantined", "record", u.RecordID, "ref", u.WorkloadRef, "units", u.Units,
		"path", u.Path, "reason", reason, "owner", s.owner)
	return q, true, nil
}

func (s *core) quarantinePage(q QuarantineRecord, now time.Time) pager.Event {
	return pager.Event{RoutingKey: s.routingKey, EventAction: pager.ActionTrigger, DedupKey: q.DedupKey,
		Payload: &pager.Payload{Summary: QuarantineSummary(q), Source: s.source, Severity: pager.SeverityError,
			Timestamp: now.UTC(), Component: q.WorkloadRef, Group: s.owner, Class: "spend_quarantine",
			CustomDetails: map[string]any{"record": q.RecordID, "ref": q.WorkloadRef, "units": q.Units,
				"path": q.Path, "event": q.EventID, "reason": q.Reason, "owner": s.owner,
				"occurred": ddb.Stamp(q.OccurredAt)}}}
}

// Quarantined returns the quarantined record under an ID, or [ErrNotFound].
func (s *Ledger) Quarantined(ctx context.Context, recordID string) (QuarantineRecord, error) {
	qi, err := getItem[quarantineItem](ctx, s.db, s.ledger, quarantineKey(recordID), "quarantine "+recordID, ErrNotFound)
	if err != nil {
		return QuarantineRecord{}, err
	}
	return qi.record(), nil
}

// QuarantinedRecords lists quarantined records, newest first (limit 0:
// all).
func (s *Ledger) QuarantinedRecords(ctx context.Context, limit int) ([]QuarantineRecord, error) {
	var out []QuarantineRecord
	kc := expression.Key("gsi1pk").Equal(expression.Value(quarantinePart))
	err := queryItems(ctx, s.db, s.ledger, indexName, kc, false, limit, func(qi quarantineItem) error {
		out = append(out, qi.record())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("spend: list quarantine: %w", err)
	}
	return out, nil
}
