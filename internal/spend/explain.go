package spend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
)

// How many of each list an explanation carries.
const (
	explainDecisions     = 5
	explainDisagreements = 10
	explainReconRuns     = 5
)

// ReconRun is the record of one reconciliation run for a workload.
type ReconRun struct {
	WorkloadID    string
	StartedAt     time.Time
	FinishedAt    time.Time
	Records       int64
	Missed        int64
	Duplicates    int64
	Disagreements int64
	Deferred      int64
	Note          string
	NextReconAt   time.Time

	// RunID names the reconciler run. Since and Until bound the export
	// window it read (by publication time); CursorBefore and CursorAfter
	// are the export cursor it read and committed.
	RunID                     string
	Since, Until              time.Time
	CursorBefore, CursorAfter time.Time
	// Missed counts records the poll path applied because the webhook
	// path had missed them; Matched counts those of Duplicates that the
	// webhook path had applied first.
	Matched int64
	// Unseen counts webhook entries marked unseen because the export still
	// lacked them past the consistency horizon.
	Unseen int64
	// Reattributed counts deferred records attributed to the workload now
	// that their reference resolves.
	Reattributed int64
	// Decisions are one line per cap action or hold decision taken.
	Decisions []string
	// Tier and Interval are the workload's reconciliation tier and interval.
	Tier     string
	Interval time.Duration
}

// Explanation is what an operator needs to understand a workload's state
// and its last cap action.
type Explanation struct {
	// Workload carries the total, cap and status. Its RoutingKey is a
	// credential: print Explanation fields, never the whole Workload.
	Workload Workload
	// Cause is the ledger entry of the record that caused the latest
	// decision, if there is one.
	Cause *Entry
	// LastAccepted is the last usage record accepted into the total.
	LastAccepted LastEvent
	// Decisions are the latest decisions, newest first.
	Decisions []Decision
	// Disagreements are recent disagreements on records kept for this
	// workload, newest first.
	Disagreements []DisagreementRecord
	// Deferred are open deferred records whose reference aliases to this
	// workload; PendingDeferred is the sum of their units.
	Deferred        []DeferredRecord
	PendingDeferred int64
	// UnknownDeferred is the open deferred amount for references that name
	// no workload at all, across the system.
	UnknownDeferred int64
	NextReconAt     time.Time
	// ReconRuns are the latest reconciliation runs, newest first.
	ReconRuns []ReconRun
	// Buckets are the latest buckets of providers of sums, and the latest
	// explainGaps settled with a gap (so every bucket of a settle page is
	// here), newest first: W, P, what was counted and the revisions;
	// Alerts the latest threshold alerts.
	Buckets []Bucket
	Alerts  []Alert
	// Period and PreviousPeriod are the current period and the one
	// before it ([Explainer.Periods]); nil for a lifetime total.
	Period, PreviousPeriod *PeriodView
}

// EventExplanation explains one event or usage record.
type EventExplanation struct {
	// Entry is the ledger entry, when the record was applied.
	Entry *Entry
	// Deferred is the deferred record, when it could not be attributed;
	// DeferredState adds what reconciliation did about it past its
	// deadline (paged or held, and when).
	Deferred      *DeferredRecord
	DeferredState *DeferredState
	// Quarantined is the quarantined record, when the ledger refused it.
	Quarantined *QuarantineRecord
	// Decisions are decisions this event's Apply took.
	Decisions []Decision
	// Workload explains the workload the record was attributed to.
	Workload *Explanation
	// Delta and Bucket are a bucket's delta, when the ID names one (as a
	// top-up's page does), and its bucket.
	Delta  *Delta
	Bucket *Bucket
}

// Explain gathers, for one workload, the record behind its last action, its
// total, cap and status, the last accepted event, pending deferred amounts,
// latest decisions, recent disagreements and the next reconciliation
// deadline.
func (s *Explainer) Explain(ctx context.Context, workloadID string) (Explanation, error) {
	w, err := s.asWorkloads().Get(ctx, workloadID)
	if err != nil {
		return Explanation{}, err
	}
	x := Explanation{Workload: w, LastAccepted: w.LastAccepted}
	if x.NextReconAt, err = s.nextReconciliation(ctx, w); err != nil {
		return x, err
	}
	if x.Decisions, err = s.decisions(ctx, workloadID, explainDecisions); err != nil {
		return x, err
	}
	if len(x.Decisions) > 0 && x.Decisions[0].RecordID != "" { // a change of period names no record
		e, err := s.entry(ctx, x.Decisions[0].RecordID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return x, err
		}
		if err == nil {
			x.Cause = &e
		}
	}
	if x.Disagreements, err = s.disagreements(ctx, workloadID, explainDisagreements); err != nil {
		return x, err
	}
	refs, err := s.asWorkloads().Aliases(ctx, workloadID)
	if err != nil {
		return x, err
	}
	open, err := s.asLedger().OpenDeferred(ctx, time.Time{})
	if err != nil {
		return x, err
	}
	for _, d := range open {
		switch {
		case d.WorkloadID == workloadID || slices.Contains(refs, d.WorkloadRef):
			x.Deferred = append(x.Deferred, d)
			x.PendingDeferred += d.Units
		case d.Reason == ReasonUnknownWorkload:
			x.UnknownDeferred += d.Units
		}
	}
	if x.ReconRuns, err = (&Recon{s.core}).ReconRuns(ctx, workloadID, explainReconRuns); err != nil {
		return x, err
	}
	if x.Buckets, err = s.Buckets(ctx, workloadID, explainBuckets); err != nil {
		return x, err
	}
	gaps, err := s.gapBuckets(ctx, workloadID, explainGaps)
	if err != nil {
		return x, err
	}
	for _, g := range gaps {
		if !slices.ContainsFunc(x.Buckets, func(b Bucket) bool { return b.BucketKey == g.BucketKey }) {
			x.Buckets = append(x.Buckets, g)
		}
	}
	slices.SortStableFunc(x.Buckets, func(a, b Bucket) int { return b.Start.Compare(a.Start) })
	if x.Alerts, err = s.Alerts(ctx, workloadID, explainAlerts); err != nil {
		return x, err
	}
	if x.Period, x.PreviousPeriod, err = s.Periods(ctx, workloadID); err != nil {
		return x, err
	}
	return x, nil
}

// How many buckets and alerts a workload's explanation lists.
const (
	explainBuckets = 24
	// explainGaps is more than the buckets one settle page covers
	// (settleChunk).
	explainGaps   = 200
	explainAlerts = 10
)

// explainDelta explains a bucket's delta ID: the delta, its bucket, and
// the bucket's workload.
func (s *Explainer) explainDelta(ctx context.Context, id string) (EventExplanation, error) {
	d, b, err := s.BucketDelta(ctx, id)
	if err != nil {
		return EventExplanation{}, err
	}
	x := EventExplanation{Delta: &d, Bucket: &b}
	wx, err := s.Explain(ctx, b.WorkloadID)
	if err != nil {
		return x, err
	}
	x.Workload = &wx
	return x, nil
}

// ExplainEvent explains a webhook event ID or a usage record ID: its ledger
// entry (or deferred record with what reconciliation did about it, or
// quarantined record), the decisions it caused, and its workload. Nothing
// known by that ID gives [ErrNotFound].
func (s *Explainer) ExplainEvent(ctx context.Context, id string) (EventExplanation, error) {
	if strings.HasPrefix(id, deltaIDPrefix) {
		return s.explainDelta(ctx, id)
	}
	var x EventExplanation
	e, err := s.entry(ctx, id)
	switch {
	case err == nil:
		x.Entry = &e
	case !errors.Is(err, ErrNotFound):
		return x, err
	}
	ref, err := s.byEvent(ctx, id, &x)
	if err != nil {
		return x, err
	}
	if x.Entry == nil {
		return x, s.explainUnapplied(ctx, id, ref, &x)
	}
	if x.Entry.EventID != "" && x.Entry.EventID != id {
		if _, err := s.byEvent(ctx, x.Entry.EventID, &x); err != nil {
			return x, err
		}
	}
	wx, err := s.Explain(ctx, x.Entry.WorkloadID)
	if err != nil {
		return x, err
	}
	x.Workload = &wx
	return x, nil
}

// explainUnapplied finds a record that never reached the ledger, by record
// ID or, for an event ID, by the record its deferral pointed to (ref) or
// the quarantined record that names the event.
func (s *core) explainUnapplied(ctx context.Context, id, ref string, x *EventExplanation) error {
	rec := id
	if ref != "" {
		rec = ref
	}
	q, err := s.asLedger().Quarantined(ctx, rec)
	switch {
	case err == nil:
		x.Quarantined = &q
	case !errors.Is(err, ErrNotFound):
		return err
	}
	if x.Quarantined == nil && ref == "" {
		if x.Quarantined, err = s.quarantinedByEvent(ctx, id); err != nil {
			return err
		}
	}
	di, err := getItem[deferredStateItem](ctx, s.db, s.ledger, deferredKey(rec), "deferred "+rec, ErrNotFound)
	if errors.Is(err, ErrNotFound) && x.Quarantined != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("spend: explain %s: %w", id, err)
	}
	st := di.state()
	x.Deferred, x.DeferredState = &st.Record, &st
	return nil
}

// quarantinedByEvent looks through the quarantined records for one that
// names eventID. Quarantined records are few (each one pages), so the
// operator's look-up reads them all.
func (s *core) quarantinedByEvent(ctx context.Context, eventID string) (*QuarantineRecord, error) {
	qs, err := s.asLedger().QuarantinedRecords(ctx, 0)
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		if q.EventID == eventID {
			return &q, nil
		}
	}
	return nil, nil
}

// byEvent fills the entry and decisions stored under an event ID, and
// returns the record ID a deferral under that event pointed to, if any.
func (s *core) byEvent(ctx context.Context, eventID string, x *EventExplanation) (string, error) {
	var ref string
	err := s.query(ctx, s.ledger, expression.Key("gsi1pk").Equal(expression.Value(eventPK(eventID))), true, 0,
		func(item map[string]types.AttributeValue) error {
			sk := stringAttr(item, "sk")
			switch {
			case sk == skEventRef:
				ref = stringAttr(item, "record_id")
			case sk == skEntry && x.Entry == nil:
				var ei entryItem
				if err := attributevalue.UnmarshalMap(item, &ei); err != nil {
					return err
				}
				e := ei.entry()
				x.Entry = &e
			case strings.HasPrefix(sk, prefixDecision):
				var di decisionItem
				if err := attributevalue.UnmarshalMap(item, &di); err != nil {
					return err
				}
				x.Decisions = append(x.Decisions, di.decision())
			}
			return nil
		})
	if err != nil {
		return "", fmt.Errorf("spend: explain event %s: %w", eventID, err)
	}
	return ref, nil
}

func (s *core) entry(ctx context.Context, recordID string) (Entry, error) {
	ei, err := getItem[entryItem](ctx, s.db, s.ledger, entryKey(recordID), "entry "+recordID, ErrNotFound)
	if err != nil {
		return Entry{}, err
	}
	return ei.entry(), nil
}

// Entry returns the ledger entry of a usage record, or [ErrNotFound].
func (s *Ledger) Entry(ctx context.Context, recordID string) (Entry, error) {
	return s.entry(ctx, recordID)
}

// Decisions returns a workload's latest decisions, newest first.
func (s *Explainer) Decisions(ctx context.Context, workloadID string, limit int) ([]Decision, error) {
	return s.decisions(ctx, workloadID, limit)
}

func (s *core) decisions(ctx context.Context, workloadID string, limit int) ([]Decision, error) {
	var ds []Decision
	kc := expression.Key("pk").Equal(expression.Value(WorkloadPK(workloadID))).
		And(expression.Key("sk").BeginsWith(prefixDecision))
	err := queryItems(ctx, s.db, s.ledger, "", kc, false, limit, func(di decisionItem) error {
		ds = append(ds, di.decision())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("spend: decisions of %s: %w", workloadID, err)
	}
	return ds, nil
}

// Disagreements returns recent disagreements on records kept for a
// workload, newest first.
func (s *Explainer) Disagreements(ctx context.Context, workloadID string, limit int) ([]DisagreementRecord, error) {
	return s.disagreements(ctx, workloadID, limit)
}

func (s *core) disagreements(ctx context.Context, workloadID string, limit int) ([]DisagreementRecord, error) {
	var ds []DisagreementRecord
	kc := expression.Key("gsi1pk").Equal(expression.Value(disagreePK(workloadID)))
	err := queryItems(ctx, s.db, s.ledger, indexName, kc, false, limit, func(di disagreementItem) error {
		ds = append(ds, di.disagreement())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("spend: disagreements of %s: %w", workloadID, err)
	}
	return ds, nil
}

// PutReconRun stores a reconciliation run and moves the workload's next
// reconciliation deadline to run.NextReconAt when it is set.
func (s *Recon) PutReconRun(ctx context.Context, run ReconRun) error {
	if run.WorkloadID == "" || run.StartedAt.IsZero() {
		return fmt.Errorf("spend: %w: a recon run needs a workload and a start time", ErrInvalidWorkload)
	}
	item, err := attributevalue.MarshalMap(reconRunItem{PK: WorkloadPK(run.WorkloadID), SK: reconRunSK(run.StartedAt),
		WorkloadID: run.WorkloadID, StartedAt: ddb.Stamp(run.StartedAt), FinishedAt: ddb.Stamp(run.FinishedAt),
		Records: run.Records, Missed: run.Missed, Duplicates: run.Duplicates, Disagreements: run.Disagreements,
		Deferred: run.Deferred, Note: run.Note, NextReconAt: ddb.Stamp(run.NextReconAt),
		RunID: run.RunID, WindowStart: ddb.Stamp(run.Since), WindowEnd: ddb.Stamp(run.Until),
		CursorBefore: ddb.Stamp(run.CursorBefore), CursorAfter: ddb.Stamp(run.CursorAfter), Matched: run.Matched,
		Unseen: run.Unseen, Reattributed: run.Reattributed,
		Decisions: run.Decisions, Tier: run.Tier, Interval: durationText(run.Interval)})
	if err != nil {
		return fmt.Errorf("spend: encode recon run: %w", err)
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.ledger), Item: item}); err != nil {
		return fmt.Errorf("spend: put recon run %s: %w", run.WorkloadID, err)
	}
	if run.NextReconAt.IsZero() {
		return nil
	}
	return s.setNextReconciliation(ctx, run.WorkloadID, run.NextReconAt)
}

// ReconRuns returns a workload's latest reconciliation runs, newest first.
func (s *Recon) ReconRuns(ctx context.Context, workloadID string, limit int) ([]ReconRun, error) {
	var runs []ReconRun
	kc := expression.Key("pk").Equal(expression.Value(WorkloadPK(workloadID))).
		And(expression.Key("sk").BeginsWith(prefixReconRun))
	err := queryItems(ctx, s.db, s.ledger, "", kc, false, limit, func(ri reconRunItem) error {
		runs = append(runs, ReconRun{WorkloadID: ri.WorkloadID, StartedAt: ddb.ParseStamp(ri.StartedAt),
			FinishedAt: ddb.ParseStamp(ri.FinishedAt), Records: ri.Records, Missed: ri.missed(),
			Duplicates: ri.Duplicates, Disagreements: ri.Disagreements, Deferred: ri.Deferred,
			Note: ri.Note, NextReconAt: ddb.ParseStamp(ri.NextReconAt),
			RunID: ri.RunID, Since: ddb.ParseStamp(ri.WindowStart), Until: ddb.ParseStamp(ri.WindowEnd),
			CursorBefore: ddb.ParseStamp(ri.CursorBefore), CursorAfter: ddb.ParseStamp(ri.CursorAfter), Matched: ri.Matched,
			Unseen: ri.Unseen, Reattributed: ri.reattributed(),
			Decisions: ri.Decisions, Tier: ri.Tier, Interval: parseDurationText(ri.Interval)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("spend: recon runs of %s: %w", workloadID, err)
	}
	return runs, nil
}

func stringAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
