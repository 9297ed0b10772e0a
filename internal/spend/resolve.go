package spend

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// maxBatchGet is DynamoDB's limit on the keys of one BatchGetItem.
const maxBatchGet = 100

// ResolveRefs resolves workload references to workload IDs, as Apply does
// one at a time, with consistent BatchGetItem reads of their aliases (up to
// 100 a call). A reference without an alias is absent from the map. A
// caller that folds many records, such as the reconciler with a page of
// the export, resolves their references once and passes each result to
// [Ledger.ApplyResolved].
func (s *Workloads) ResolveRefs(ctx context.Context, refs []string) (map[string]string, error) {
	out := make(map[string]string, len(refs))
	seen := make(map[string]bool, len(refs))
	var keys []map[string]types.AttributeValue
	for _, ref := range refs {
		if seen[ref] {
			continue
		}
		seen[ref] = true
		keys = append(keys, aliasKey(ref))
	}
	if err := s.resolveBatch(ctx, keys, out); err != nil {
		return nil, err
	}
	return out, nil
}

// resolveBatch reads the aliases keys into ids.
func (s *core) resolveBatch(ctx context.Context, keys []map[string]types.AttributeValue, ids map[string]string) error {
	err := s.batchGet(ctx, s.workloads, keys, func(item map[string]types.AttributeValue) error {
		var al aliasItem
		if err := attributevalue.UnmarshalMap(item, &al); err != nil {
			return fmt.Errorf("decode alias: %w", err)
		}
		ids[strings.TrimPrefix(al.PK, prefixAlias)] = al.WorkloadID
		return nil
	})
	if err != nil {
		return fmt.Errorf("spend: resolve references: %w", err)
	}
	return nil
}

// batchGet reads keys of table with consistent BatchGetItem reads,
// [maxBatchGet] keys a call, and hands each item found to fn, in no
// particular order.
func (s *core) batchGet(ctx context.Context, table string, keys []map[string]types.AttributeValue, fn func(map[string]types.AttributeValue) error) error {
	for start := 0; start < len(keys); start += maxBatchGet {
		if err := s.batchGetOnce(ctx, table, keys[start:min(start+maxBatchGet, len(keys))], fn); err != nil {
			return err
		}
	}
	return nil
}

// batchGetOnce reads up to [maxBatchGet] keys of table with one
// consistent BatchGetItem, reading again, with backoff, the keys DynamoDB
// left unprocessed (it does so when a partition is throttled), and hands
// each item found to fn, in no particular order.
func (s *core) batchGetOnce(ctx context.Context, table string, keys []map[string]types.AttributeValue, fn func(map[string]types.AttributeValue) error) error {
	pending := map[string]types.KeysAndAttributes{table: {Keys: keys, ConsistentRead: aws.Bool(true)}}
	wait := 10 * time.Millisecond
	for attempt := 1; len(pending) > 0; attempt++ {
		out, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
		if err != nil {
			return err
		}
		for _, item := range out.Responses[table] {
			if err := fn(item); err != nil {
				return err
			}
		}
		pending = out.UnprocessedKeys
		if len(pending) == 0 {
			return nil
		}
		if attempt == 8 {
			return fmt.Errorf("%d keys still unprocessed", len(pending[table].Keys))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
	return nil
}
