package intake

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookline/hookline/internal/ddb"
)

// MaxConflictPayload bounds the conflicting payload a record keeps
// ([Store.NoteConflict]): a usage message is well within it, and a
// larger payload is known by its hash alone, so that the record never
// nears DynamoDB's item limit.
const MaxConflictPayload = 4 << 10

var conflictTemplate = ddb.MustTemplate(expression.NewBuilder().
	WithCondition(expression.AttributeExists(expression.Name("pk"))).
	WithUpdate(expression.Add(expression.Name("conflicts"), expression.Value(1)).
		Set(expression.Name("conflict_at"), ddb.Slot("at")).
		Set(expression.Name("conflict_sha256"), ddb.Slot("sha")).
		Set(expression.Name("conflict_payload"), ddb.Slot("payload"))))

// NoteConflict records, on the intake record of ev, a delivery of ev's
// ID whose payload differs from the record's ([ErrConflict]): it counts
// it, and keeps the last such delivery's time, payload hash and payload
// (empty when over [MaxConflictPayload]). The record's own payload, the
// event as it was first accepted, is left as it is and nothing is
// enqueued. It reports false, and no error, when there is no record to
// note it on (it expired since).
func (s *Store) NoteConflict(ctx context.Context, ev Event) (bool, error) {
	payload := ""
	if len(ev.Payload) <= MaxConflictPayload {
		payload = string(ev.Payload)
	}
	values, err := conflictTemplate.Values(map[string]any{
		"at": formatTime(s.cfg.Now()), "sha": PayloadHash(ev.Payload), "payload": payload,
	})
	if err != nil {
		return false, fmt.Errorf("intake: conflict of %s/%s: %w", ev.Source, ev.EventID, err)
	}
	_, err = s.cfg.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.cfg.Table), Key: recordKey(Key(ev.Source, ev.EventID)),
		ConditionExpression: conflictTemplate.Condition(), UpdateExpression: conflictTemplate.Update(),
		ExpressionAttributeNames: conflictTemplate.Names(), ExpressionAttributeValues: values,
	})
	if ddb.ConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, unavailable("note conflict", err)
	}
	return true, nil
}
