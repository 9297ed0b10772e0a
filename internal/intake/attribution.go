package intake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookline/hookline/internal/ddb"
)

// Attribution is what the spend worker did with a usage event's record:
// the intake state of contract 6, kept on the intake record beside the
// delivery state. An intake record of a usage source without one has not
// been attributed yet.
type Attribution string

// Attribution states.
const (
	// Attributed: the record is in the ledger (a duplicate counts: it was
	// accepted and counted once).
	Attributed Attribution = "attributed"
	// AttributionDeferred: verified, but its workload is unknown or retired;
	// the deferral has a deadline and an owner.
	AttributionDeferred Attribution = "deferred"
	// AttributionQuarantined: the ledger refused the record for good; it was
	// stored with the reason and paged, never counted.
	AttributionQuarantined Attribution = "quarantined"
)

// Mark is one attribution to record.
type Mark struct {
	Source, EventID string
	State           Attribution
	// Workload is the workload the record was attributed to, if any.
	Workload string
	// Reason says why a record was deferred or quarantined.
	Reason string
}

// Attributions records attribution states on intake records. It needs only
// UpdateItem on the intake table.
type Attributions struct {
	db    DynamoDBAPI
	table string
	now   func() time.Time
}

// NewAttributions builds an [Attributions] over table.
func NewAttributions(db DynamoDBAPI, table string, now func() time.Time) (*Attributions, error) {
	if db == nil || table == "" {
		return nil, errors.New("intake: attributions need a DynamoDB client and the intake table")
	}
	if now == nil {
		now = time.Now
	}
	return &Attributions{db: db, table: table, now: now}, nil
}

var markTemplate = ddb.MustTemplate(expression.NewBuilder().
	WithCondition(expression.AttributeExists(expression.Name("pk"))).
	WithUpdate(expression.Set(expression.Name("attribution"), ddb.Slot("state")).
		Set(expression.Name("attribution_workload"), ddb.Slot("workload")).
		Set(expression.Name("attribution_reason"), ddb.Slot("reason")).
		Set(expression.Name("attributed_at"), ddb.Slot("at"))))

// Mark records m on its intake record. It reports false, and no error,
// when there is no intake record to mark: the event came another way
// (a replay of an expired record, a message sent by hand), or the record
// has expired.
func (a *Attributions) Mark(ctx context.Context, m Mark) (bool, error) {
	values, err := markTemplate.Values(map[string]any{
		"state": string(m.State), "workload": m.Workload, "reason": m.Reason, "at": formatTime(a.now()),
	})
	if err != nil {
		return false, fmt.Errorf("intake: attribution of %s: %w", m.EventID, err)
	}
	_, err = a.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(a.table), Key: recordKey(Key(m.Source, m.EventID)),
		ConditionExpression: markTemplate.Condition(), UpdateExpression: markTemplate.Update(),
		ExpressionAttributeNames: markTemplate.Names(), ExpressionAttributeValues: values,
	})
	if ddb.ConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, unavailable("mark attribution", err)
	}
	return true, nil
}
