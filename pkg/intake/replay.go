package intake

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
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
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.cfg.Table),
		IndexName:              aws.String(IndexBySourceReceived),
		KeyConditionExpression: aws.String("#src = :src AND #at BETWEEN :since AND :until"),
		ExpressionAttributeNames: map[string]string{
			"#src": "source", "#at": "received_at",
		},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":src":   &ddbtypes.AttributeValueMemberS{Value: source},
			":since": &ddbtypes.AttributeValueMemberS{Value: formatTime(since)},
			":until": &ddbtypes.AttributeValueMemberS{Value: formatTime(until)},
		},
		ScanIndexForward: aws.Bool(true),
	}
	prefix := Key(source, "")
	for pages := dynamodb.NewQueryPaginator(s.cfg.DynamoDB, in); pages.HasMorePages(); {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return unavailable("query intake by time", err)
		}
		for _, item := range out.Items {
			pk, _ := item["pk"].(*ddbtypes.AttributeValueMemberS)
			at, _ := item["received_at"].(*ddbtypes.AttributeValueMemberS)
			if pk == nil || !strings.HasPrefix(pk.Value, prefix) {
				continue
			}
			var received time.Time
			if at != nil {
				received = parseTime(at.Value)
			}
			if err := fn(strings.TrimPrefix(pk.Value, prefix), received); err != nil {
				return fmt.Errorf("intake: received between: %w", err)
			}
		}
	}
	return nil
}
