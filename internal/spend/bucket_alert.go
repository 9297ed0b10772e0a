package spend

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/pager"
)

// Alert is a provider's threshold alert (Stripe's billing.alert.triggered):
// the workload's usage of one meter, counted by the provider since Since,
// reached Value. It is a lower bound on a sum, not a record: it is
// recorded, compared with the ledger, and moves the workload's next
// reconciliation up.
type Alert struct {
	// EventID is the provider's event ID: the alert's key.
	EventID string
	// Source and Meter name the sums source and the ledger's meter.
	Source, Meter string
	WorkloadID    string
	AlertID       string
	Customer      string
	// Value is the triggered value in ledger units.
	Value int64
	// Since is when the provider started counting for the alert, and
	// SinceFrom where that time came from ("configured", "source_start",
	// or "period" for a window the alert carries).
	Since     time.Time
	SinceFrom string
	// Until, when set, ends the comparison window: an alert on a period
	// that resets (OpenMeter's entitlement usage period) is compared with
	// the ledger's count of [Since, Until) only. Zero counts to now.
	Until time.Time
	// ReceivedAt is when hookline received the alert.
	ReceivedAt time.Time
	// Ledger is the ledger's count of the meter since Since, when
	// recorded; Paged says whether it was below Value.
	Ledger int64
	Paged  bool
}

// AlertResult is what [Buckets.RecordAlert] did.
type AlertResult struct {
	Alert Alert
	// Duplicate means the alert was recorded before; nothing was written.
	Duplicate bool
	// DueAt is when the workload's next reconciliation of the source runs
	// at the latest: the next run.
	DueAt time.Time
}

type alertItem struct {
	PK         string `dynamodbav:"pk"`
	SK         string `dynamodbav:"sk"`
	GSI1PK     string `dynamodbav:"gsi1pk"`
	GSI1SK     string `dynamodbav:"gsi1sk"`
	EventID    string `dynamodbav:"event_id"`
	Source     string `dynamodbav:"source"`
	Meter      string `dynamodbav:"meter"`
	WorkloadID string `dynamodbav:"workload_id"`
	AlertID    string `dynamodbav:"alert_id,omitempty"`
	Customer   string `dynamodbav:"customer,omitempty"`
	Value      int64  `dynamodbav:"value"`
	Since      string `dynamodbav:"since"`
	SinceFrom  string `dynamodbav:"since_from"`
	Until      string `dynamodbav:"until,omitempty"`
	ReceivedAt string `dynamodbav:"received_at"`
	Ledger     int64  `dynamodbav:"ledger"`
	Paged      bool   `dynamodbav:"paged"`
}

func (it alertItem) alert() Alert {
	return Alert{EventID: it.EventID, Source: it.Source, Meter: it.Meter, WorkloadID: it.WorkloadID, AlertID: it.AlertID,
		Customer: it.Customer, Value: it.Value, Since: ddb.ParseStamp(it.Since), SinceFrom: it.SinceFrom, Until: parseUntil(it.Until),
		ReceivedAt: ddb.ParseStamp(it.ReceivedAt), Ledger: it.Ledger, Paged: it.Paged}
}

// dueItem asks the sums reconciler to read a workload of a source on its
// next run, whether or not the source is due.
type dueItem struct {
	PK         string `dynamodbav:"pk"`
	SK         string `dynamodbav:"sk"`
	WorkloadID string `dynamodbav:"workload_id"`
	Cause      string `dynamodbav:"cause"`
	At         string `dynamodbav:"at"`
}

// RecordAlert records a threshold alert once, keyed by its event ID, with
// the ledger's count of its meter in the alert's window: from Since, up
// to Until when the alert carries one (a period that resets). When the
// ledger is below the alert's value it pages the reconciliation owner
// once (the alert, the page and the workload's due marker commit in one
// transaction). Either way the workload is read on the source's next
// reconciliation run, whose time nextRun gives.
func (s *Buckets) RecordAlert(ctx context.Context, a Alert, nextRun time.Time) (AlertResult, error) {
	if _, _, err := s.meterOf(BucketKey{Source: a.Source, Meter: a.Meter}); err != nil {
		return AlertResult{}, err
	}
	if a.EventID == "" || a.WorkloadID == "" {
		return AlertResult{}, fmt.Errorf("%w: an alert needs its event ID and workload", ErrInvalidUsage)
	}
	if !a.Until.IsZero() && !a.Until.After(a.Since) {
		return AlertResult{}, fmt.Errorf("%w: an alert's window ends (%s) before it starts (%s)", ErrInvalidUsage,
			a.Until.UTC().Format(time.RFC3339), a.Since.UTC().Format(time.RFC3339))
	}
	ledger, err := s.meterSince(ctx, a.WorkloadID, a.Source, a.Meter, a.Since, a.Until)
	if err != nil {
		return AlertResult{}, err
	}
	a.Ledger, a.Paged = ledger, ledger < a.Value
	tx, err := s.alertTx(a, nextRun)
	if err != nil {
		return AlertResult{}, err
	}
	err = s.transact(ctx, tx)
	if failed, _, ok := cancelled(err); ok && failed[0] {
		prev, gerr := s.getAlert(ctx, a.Source, a.EventID)
		return AlertResult{Alert: prev, Duplicate: true, DueAt: nextRun}, gerr
	}
	if err != nil {
		return AlertResult{}, fmt.Errorf("spend: record alert %s: %w", a.EventID, err)
	}
	s.log.InfoContext(ctx, "usage alert recorded", "event", a.EventID, "workload", a.WorkloadID, "meter", a.Meter,
		"value", a.Value, "ledger", a.Ledger, "paged", a.Paged)
	return AlertResult{Alert: a, DueAt: nextRun}, nil
}

func (s *core) alertTx(a Alert, nextRun time.Time) ([]types.TransactWriteItem, error) {
	now := s.now()
	item, err := attributevalue.MarshalMap(alertItem{PK: alertPK(a.Source, a.EventID), SK: skAlert,
		GSI1PK: alertsPK(a.WorkloadID), GSI1SK: ddb.Stamp(a.ReceivedAt) + "#" + a.EventID, EventID: a.EventID,
		Source: a.Source, Meter: a.Meter, WorkloadID: a.WorkloadID, AlertID: a.AlertID, Customer: a.Customer,
		Value: a.Value, Since: ddb.Stamp(a.Since), SinceFrom: a.SinceFrom, Until: untilStamp(a.Until), ReceivedAt: ddb.Stamp(a.ReceivedAt),
		Ledger: a.Ledger, Paged: a.Paged})
	if err != nil {
		return nil, fmt.Errorf("spend: encode alert: %w", err)
	}
	due, err := attributevalue.MarshalMap(dueItem{PK: sumsDuePK(a.Source), SK: a.WorkloadID, WorkloadID: a.WorkloadID,
		Cause: "alert " + a.EventID, At: ddb.Stamp(now)})
	if err != nil {
		return nil, fmt.Errorf("spend: encode due marker: %w", err)
	}
	tx := []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.ledger), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{Put: &types.Put{TableName: aws.String(s.ledger), Item: due}},
	}
	if !a.Paged {
		return tx, nil
	}
	page, err := s.pages.EnqueueItem(s.alertPage(a, nextRun), now)
	if err != nil {
		return nil, fmt.Errorf("spend: alert page: %w", err)
	}
	return append(tx, page), nil
}

// AlertLine is the page line of an alert above the ledger; an alert with
// a window's end names it (until=).
func AlertLine(a Alert, nextRun time.Time) string {
	until := ""
	if !a.Until.IsZero() {
		until = " until=" + a.Until.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("usage alert above the ledger: meter=%s workload=%s alert=%s event=%s provider_at_least=%d ledger=%d since=%s (%s)%s next_reconciliation=%s",
		a.Meter, a.WorkloadID, a.AlertID, a.EventID, a.Value, a.Ledger, a.Since.UTC().Format(time.RFC3339), a.SinceFrom, until,
		nextRun.UTC().Format(time.RFC3339))
}

func untilStamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return ddb.Stamp(t)
}

func parseUntil(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	return ddb.ParseStamp(s)
}

func (s *core) alertPage(a Alert, nextRun time.Time) pager.Event {
	return pager.Event{RoutingKey: s.routingKey, EventAction: pager.ActionTrigger, DedupKey: "usage-alert#" + a.Source + "#" + a.EventID,
		Payload: &pager.Payload{Summary: AlertLine(a, nextRun), Source: s.source, Severity: pager.SeverityWarning,
			Timestamp: a.ReceivedAt, Component: a.WorkloadID, Class: "usage_alert",
			CustomDetails: map[string]any{"workload": a.WorkloadID, "meter": a.Meter, "value": a.Value, "ledger": a.Ledger,
				"since": a.Since.UTC().Format(time.RFC3339), "since_from": a.SinceFrom, "deadline": nextRun.UTC().Format(time.RFC3339),
				"owner": s.owner}}}
}

func (s *core) getAlert(ctx context.Context, source, eventID string) (Alert, error) {
	it, err := getItem[alertItem](ctx, s.db, s.ledger, ddb.Key(alertPK(source, eventID), skAlert), "alert "+eventID, ErrNotFound)
	return it.alert(), err
}

// meterSince is the ledger's count of a workload's meter of a source in
// the buckets that end after since and, when until is set, start before
// it: the buckets holding since and until are counted whole, so an alert
// is compared with at least what the provider counted.
func (s *core) meterSince(ctx context.Context, id, source, meter string, since, until time.Time) (int64, error) {
	src, _, err := s.meterOf(BucketKey{Source: source, Meter: meter})
	if err != nil {
		return 0, err
	}
	from, _ := src.Bucket(since)
	var sum int64
	for _, part := range []string{bucketsOpen(id), bucketsSettled(id)} {
		kc := expression.Key("gsi1pk").Equal(expression.Value(part)).
			And(expression.Key("gsi1sk").GreaterThanEqual(expression.Value(ddb.Stamp(from))))
		bs, err := s.queryBuckets(ctx, kc, true, 0)
		if err != nil {
			return 0, err
		}
		for _, b := range bs {
			if b.Source == source && b.Meter == meter && (until.IsZero() || b.Start.Before(until)) {
				sum += b.Counted
			}
		}
	}
	return sum, nil
}

// DueWorkloads lists the workloads asked to be read on a source's next
// run (by an alert), with the time each was asked.
func (s *Buckets) DueWorkloads(ctx context.Context, source string) (map[string]time.Time, error) {
	in, err := ddb.KeyQuery(s.ledger, "", expression.Key("pk").Equal(expression.Value(sumsDuePK(source))), true)
	if err != nil {
		return nil, err
	}
	out := map[string]time.Time{}
	err = ddb.QueryEach(ctx, s.db, in, func(it dueItem) (bool, error) {
		out[it.WorkloadID] = ddb.ParseStamp(it.At)
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("spend: due workloads of %s: %w", source, err)
	}
	return out, nil
}

// ClearDue removes a workload's due marker once it was read, unless it
// was asked again since at.
func (s *Buckets) ClearDue(ctx context.Context, source, id string, at time.Time) error {
	cond := expression.Name("at").Equal(expression.Value(ddb.Stamp(at)))
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return err
	}
	_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.ledger), Key: ddb.Key(sumsDuePK(source), id),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()})
	if err != nil && !ddb.ConditionFailed(err) {
		return fmt.Errorf("spend: clear due marker of %s: %w", id, err)
	}
	return nil
}

// Alerts returns a workload's latest alerts, newest first.
func (s *Explainer) Alerts(ctx context.Context, id string, limit int) ([]Alert, error) {
	in, err := ddb.KeyQuery(s.ledger, indexName, expression.Key("gsi1pk").Equal(expression.Value(alertsPK(id))), false)
	if err != nil {
		return nil, err
	}
	var out []Alert
	err = ddb.QueryEach(ctx, s.db, in, func(it alertItem) (bool, error) {
		out = append(out, it.alert())
		return limit == 0 || len(out) < limit, nil
	})
	if err != nil {
		return nil, fmt.Errorf("spend: alerts of %s: %w", id, err)
	}
	return out, nil
}

// Buckets returns a workload's latest buckets of providers of sums,
// settled or not, newest first.
func (s *Explainer) Buckets(ctx context.Context, id string, limit int) ([]Bucket, error) {
	var all []Bucket
	for _, part := range []string{bucketsOpen(id), bucketsSettled(id)} {
		bs, err := s.queryBuckets(ctx, expression.Key("gsi1pk").Equal(expression.Value(part)), false, limit)
		if err != nil {
			return nil, err
		}
		all = append(all, bs...)
	}
	slices.SortFunc(all, func(a, b Bucket) int { return b.Start.Compare(a.Start) })
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	return all, nil
}

// BucketDelta finds a bucket's delta by its ID (as a page or decision
// names it), with its bucket's head.
func (s *Explainer) BucketDelta(ctx context.Context, deltaID string) (Delta, Bucket, error) {
	in, err := ddb.KeyQuery(s.ledger, indexName, expression.Key("gsi1pk").Equal(expression.Value(deltaGSI1PK(deltaID))), true)
	if err != nil {
		return Delta{}, Bucket{}, err
	}
	var found *deltaItem
	err = ddb.QueryEach(ctx, s.db, in, func(it deltaItem) (bool, error) {
		found = &it
		return false, nil
	})
	if err != nil {
		return Delta{}, Bucket{}, fmt.Errorf("spend: find delta %s: %w", deltaID, err)
	}
	if found == nil {
		return Delta{}, Bucket{}, fmt.Errorf("spend: delta %s: %w", deltaID, ErrNotFound)
	}
	h, _, err := ddb.Get[headItem](ctx, s.db, getInput(s.ledger, ddb.Key(found.PK, skHead)))
	if err != nil {
		return Delta{}, Bucket{}, fmt.Errorf("spend: read bucket of delta %s: %w", deltaID, err)
	}
	return found.delta(), h.bucket(), nil
}
