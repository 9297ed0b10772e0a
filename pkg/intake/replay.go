package intake

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/pkg/internal/ddb"
)

// IndexBySourceReceived is the intake table's index on (source,
// received_at), declared in infra/template.yaml. It projects keys only.
const IndexBySourceReceived = "by_source_received"

// MessageAttributes returns the SQS message attributes the receiver sends
// with rec, so a replay enqueues exactly what the first delivery did.
func MessageAttributes(rec Record) map[string]sqstypes.MessageAttributeValue {
	return messageAttributes(rec)
}

// ReceivedBetween hands fn the event ID and receive time of every record of
// source received in [since, until] (both inclusive, millisecond
// precision), oldest first, reading [IndexBySourceReceived]. An error from
// fn stops the listing and is returned.
func (s *Store) ReceivedBetween(ctx context.Context, source string, since, until time.Time, fn func(eventID string, receivedAt time.Time) error) error {
	keyCond := expression.Key("source").Equal(expression.Value(source)).
		And(expression.Key("received_at").Between(expression.Value(formatTime(since)), expression.Value(formatTime(until))))
	expr, err := expression.NewBuilder().WithKeyCondition(keyCond).Build()
	if err != nil {
		return fmt.Errorf("intake: %w", err)
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.cfg.Table), IndexName: aws.String(IndexBySourceReceived),
		KeyConditionExpression: expr.KeyCondition(), ExpressionAttributeNames: expr.Names(),
		ExpressionAttributeValues: expr.Values(), ScanIndexForward: aws.Bool(true),
	}
	prefix := Key(source, "")
	var fnErr error
	err = ddb.QueryEach(ctx, s.cfg.DynamoDB, in, func(k indexKey) (bool, error) {
		if !strings.HasPrefix(k.PK, prefix) {
			return true, nil
		}
		if fnErr = fn(strings.TrimPrefix(k.PK, prefix), parseTime(k.ReceivedAt)); fnErr != nil {
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return unavailable("query intake by time", err)
	}
	if fnErr != nil {
		return fmt.Errorf("intake: received between: %w", fnErr)
	}
	return nil
}

// indexKey is an item of [IndexBySourceReceived], which projects keys.
type indexKey struct {
	PK         string `dynamodbav:"pk"`
	ReceivedAt string `dynamodbav:"received_at"`
}
