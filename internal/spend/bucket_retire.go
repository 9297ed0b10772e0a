package spend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/pager"
)

// skRetired is the sort key of a bucket's retire record, in its
// partition beside its head.
const skRetired = "RETIRED"

// retireItem is the record of a bucket settled as it stood because its
// source or meter is no longer configured.
type retireItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Bucket    string `dynamodbav:"bucket"`
	Line      string `dynamodbav:"line"`
	Reason    string `dynamodbav:"reason"`
	Counted   int64  `dynamodbav:"counted"`
	RunID     string `dynamodbav:"run_id,omitempty"`
	RetiredAt string `dynamodbav:"retired_at"`
}

// RetireLine is one retired bucket, as its page shows it.
func RetireLine(b Bucket) string {
	return fmt.Sprintf("source=%s meter=%s workload=%s bucket=[%s,%s) %s provider=%d webhook=%d counted=%d kept",
		b.Source, b.Meter, b.WorkloadID, b.Start.UTC().Format(time.RFC3339), b.End.UTC().Format(time.RFC3339), b.TZ,
		b.PLatest, b.W, b.Counted)
}

// RetireUnknown settles, as they stand, the buckets of bs whose sums
// source or meter the ledger is no longer configured with (a meter renamed
// or removed by a deploy), which [Buckets.Settle] refuses with
// [ErrUnknownSums]. The rule: each keeps what it counted (the total
// already holds it), is settled without a gap check (its tolerance went
// with its meter), and gets a retire record with the reason on its
// bucket. The reconciliation owner is paged once per source and meter,
// however many workloads' buckets follow. It returns the buckets it
// retired and the rest, for Settle.
func (s *Buckets) RetireUnknown(ctx context.Context, bs []Bucket, runID string) (retired, rest []Bucket, err error) {
	for _, b := range bs {
		_, _, merr := s.meterOf(b.BucketKey)
		if !errors.Is(merr, ErrUnknownSums) {
			rest = append(rest, b)
			continue
		}
		done, err := s.retire(ctx, b, merr.Error(), runID)
		if err != nil {
			return retired, rest, err
		}
		if done {
			retired = append(retired, b)
		}
	}
	paged := map[string]bool{}
	for _, b := range retired {
		dedup := "bucket-retired#" + b.Source + "#" + b.Meter
		if paged[dedup] {
			continue
		}
		paged[dedup] = true
		if _, err := s.pageOnce(ctx, dedup, s.now(), &pager.Payload{
			Summary: fmt.Sprintf("usage buckets of a meter no longer configured are settled as they stood: source=%s meter=%s; "+
				"each keeps what it counted, with no gap check, and a retire record (pages once per meter; the sums run records count the rest); first: %s",
				b.Source, b.Meter, RetireLine(b)),
			Component: b.Source, Class: "usage_bucket_retired",
			CustomDetails: map[string]any{"source": b.Source, "meter": b.Meter, "first": RetireLine(b), "owner": s.owner}}); err != nil {
			return retired, rest, err
		}
	}
	return retired, rest, nil
}

// retire settles b as it stands with its retire record, once; it reports
// false when b was settled meanwhile.
func (s *Buckets) retire(ctx context.Context, b Bucket, reason, runID string) (bool, error) {
	for range bucketAttempts {
		next := b
		next.Settled, next.SettledRev, next.Version = true, b.Revisions, b.Version+1
		head, err := s.headPut(next)
		if err != nil {
			return false, err
		}
		item, err := attributevalue.MarshalMap(retireItem{PK: bucketPK(b.BucketKey), SK: skRetired, Bucket: b.BucketKey.String(),
			Line: RetireLine(b), Reason: reason, Counted: b.Counted, RunID: runID, RetiredAt: ddb.Stamp(s.now())})
		if err != nil {
			return false, fmt.Errorf("spend: encode retire record of %s: %w", b.BucketKey, err)
		}
		err = s.transact(ctx, []types.TransactWriteItem{head, {Put: &types.Put{TableName: aws.String(s.ledger), Item: item,
			ConditionExpression: aws.String("attribute_not_exists(pk)")}}})
		if err == nil {
			return true, nil
		}
		if _, _, ok := cancelled(err); !ok {
			return false, fmt.Errorf("spend: retire bucket %s: %w", b.BucketKey, err)
		}
		if b, err = s.readHead(ctx, b.BucketKey, b.End.Sub(b.Start)); err != nil {
			return false, err
		}
		if b.Settled {
			return false, nil
		}
	}
	return false, fmt.Errorf("%w: retiring %s", ErrBucketContended, b.BucketKey)
}
