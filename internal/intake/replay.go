package intake

import (
	"context"
	"fmt"
	"hash/fnv"
	"iter"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/ddb"
)

// IndexByShardReceived is the intake table's index on (source_shard,
// received_at), declared in infra/template.yaml. It projects keys only.
// A source's records spread over [ReceivedShards] partitions of it, for
// DynamoDB serves one partition at 1,000 write units a second and every
// record writes the index once.
const IndexByShardReceived = "by_shard_received"

// IndexBySourceReceived is the index on (source, received_at) that records
// written before [IndexByShardReceived] are in. Records written since
// carry no source attribute, so they write nothing to it; it can go once
// the older records have expired (INTAKE_RETENTION).
const IndexBySourceReceived = "by_source_received"

// ReceivedShards is how many partitions of [IndexByShardReceived] one
// source's records spread over: up to 16,000 records a second.
const ReceivedShards = 16

// ShardKey is the partition of [IndexByShardReceived] that an event's
// record is in: the source and a number drawn from the event ID.
func ShardKey(source, eventID string) string {
	h := fnv.New32a()
	h.Write([]byte(eventID))
	return fmt.Sprintf("%s#%02d", source, h.Sum32()%ReceivedShards)
}

// MessageAttributes returns the SQS message attributes the receiver sends
// with rec, so a replay enqueues exactly what the first delivery did.
func MessageAttributes(rec Record) map[string]sqstypes.MessageAttributeValue {
	return messageAttributes(rec)
}

// ReceivedBetween hands fn the event ID and receive time of every record of
// source received in [since, until] (both inclusive, millisecond
// precision), oldest first: it merges the source's partitions of
// [IndexByShardReceived] with its partition of [IndexBySourceReceived]. An
// error from fn stops the listing and is returned.
func (s *Store) ReceivedBetween(ctx context.Context, source string, since, until time.Time, fn func(eventID string, receivedAt time.Time) error) error {
	var lists []iter.Seq2[indexKey, error]
	for i := range ReceivedShards {
		in, err := s.rangeQuery(IndexByShardReceived, "source_shard", fmt.Sprintf("%s#%02d", source, i), since, until)
		if err != nil {
			return err
		}
		lists = append(lists, s.keys(ctx, in))
	}
	in, err := s.rangeQuery(IndexBySourceReceived, "source", source, since, until)
	if err != nil {
		return err
	}
	lists = append(lists, s.keys(ctx, in))
	prefix := Key(source, "")
	for k, err := range mergeByTime(lists) {
		if err != nil {
			return unavailable("query intake by time", err)
		}
		if !strings.HasPrefix(k.PK, prefix) {
			continue
		}
		if err := fn(strings.TrimPrefix(k.PK, prefix), parseTime(k.ReceivedAt)); err != nil {
			return fmt.Errorf("intake: received between: %w", err)
		}
	}
	return nil
}

// rangeQuery reads one partition of an index by time.
func (s *Store) rangeQuery(index, hash, value string, since, until time.Time) (*dynamodb.QueryInput, error) {
	keyCond := expression.Key(hash).Equal(expression.Value(value)).
		And(expression.Key("received_at").Between(expression.Value(formatTime(since)), expression.Value(formatTime(until))))
	expr, err := expression.NewBuilder().WithKeyCondition(keyCond).Build()
	if err != nil {
		return nil, fmt.Errorf("intake: %w", err)
	}
	return &dynamodb.QueryInput{
		TableName: aws.String(s.cfg.Table), IndexName: aws.String(index),
		KeyConditionExpression: expr.KeyCondition(), ExpressionAttributeNames: expr.Names(),
		ExpressionAttributeValues: expr.Values(), ScanIndexForward: aws.Bool(true),
	}, nil
}

// keys lists a query's index keys page by page, as they are asked for.
func (s *Store) keys(ctx context.Context, in *dynamodb.QueryInput) iter.Seq2[indexKey, error] {
	return func(yield func(indexKey, error) bool) {
		stopped := false
		err := ddb.QueryEach(ctx, s.cfg.DynamoDB, in, func(k indexKey) (bool, error) {
			stopped = !yield(k, nil)
			return !stopped, nil
		})
		if err != nil && !stopped {
			yield(indexKey{}, err)
		}
	}
}

// mergeByTime merges lists that are each oldest first into one, oldest
// first, stopping at the first error. Heads of equal time go by key;
// within one list equal times keep the index's order, which DynamoDB
// does not define.
func mergeByTime(lists []iter.Seq2[indexKey, error]) iter.Seq2[indexKey, error] {
	return func(yield func(indexKey, error) bool) {
		var heads []*listHead
		for _, l := range lists {
			next, stop := iter.Pull2(l)
			defer stop()
			k, err, ok := next()
			if err != nil {
				yield(indexKey{}, err)
				return
			}
			if ok {
				heads = append(heads, &listHead{next: next, k: k})
			}
		}
		for len(heads) > 0 {
			i := oldest(heads)
			if !yield(heads[i].k, nil) {
				return
			}
			k, err, ok := heads[i].next()
			switch {
			case err != nil:
				yield(indexKey{}, err)
				return
			case ok:
				heads[i].k = k
			default:
				heads = append(heads[:i], heads[i+1:]...)
			}
		}
	}
}

// listHead is a list being merged: its next key and how to pull more.
type listHead struct {
	next func() (indexKey, error, bool)
	k    indexKey
}

// oldest is the index of the head whose key comes first by time, then key.
func oldest(heads []*listHead) int {
	best := 0
	for i := 1; i < len(heads); i++ {
		a, b := heads[i].k, heads[best].k
		if a.ReceivedAt < b.ReceivedAt || (a.ReceivedAt == b.ReceivedAt && a.PK < b.PK) {
			best = i
		}
	}
	return best
}

// indexKey is an item of either index, which project keys.
type indexKey struct {
	PK         string `dynamodbav:"pk"`
	ReceivedAt string `dynamodbav:"received_at"`
}
