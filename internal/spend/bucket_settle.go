package spend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	"github.com/hookline/hookline/internal/pager"
)

// Gap is a bucket settled with its paths apart by more than its meter's
// tolerance: Diff is P - W (P is 0 when the provider never showed it).
type Gap struct {
	Bucket Bucket
	Diff   int64
}

// GapLine is one settled gap, as its page and `workload explain` show it.
func GapLine(g Gap) string {
	b := g.Bucket
	return fmt.Sprintf("meter=%s workload=%s bucket=[%s,%s) %s provider=%d webhook=%d diff=%+d counted=%d revisions=%d",
		b.Meter, b.WorkloadID, b.Start.UTC().Format(time.RFC3339), b.End.UTC().Format(time.RFC3339), b.TZ,
		b.PLatest, b.W, g.Diff, b.Counted, b.Revisions)
}

// settleChunk bounds the buckets settled in one transaction: two items
// each and the page stay within DynamoDB's 100.
const settleChunk = 40

// gapItem is the stored form of a settle-time disagreement.
type gapItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Bucket    string `dynamodbav:"bucket"`
	Line      string `dynamodbav:"line"`
	P         int64  `dynamodbav:"p"`
	W         int64  `dynamodbav:"w"`
	Diff      int64  `dynamodbav:"diff"`
	Counted   int64  `dynamodbav:"counted"`
	Rev       int64  `dynamodbav:"rev"`
	DedupKey  string `dynamodbav:"dedup_key"`
	RunID     string `dynamodbav:"run_id,omitempty"`
	SettledAt string `dynamodbav:"settled_at"`
}

// UnsettledBuckets returns workload id's buckets not yet settled that
// started at or before startedBy, oldest first.
func (s *Buckets) UnsettledBuckets(ctx context.Context, id string, startedBy time.Time) ([]Bucket, error) {
	kc := expression.Key("gsi1pk").Equal(expression.Value(bucketsOpen(id))).
		And(expression.Key("gsi1sk").LessThanEqual(expression.Value(ddb.Stamp(startedBy) + "#\uffff")))
	return s.queryBuckets(ctx, kc, true, 0)
}

func (s *core) queryBuckets(ctx context.Context, kc expression.KeyConditionBuilder, forward bool, limit int) ([]Bucket, error) {
	in, err := ddb.KeyQuery(s.ledger, indexName, kc, forward)
	if err != nil {
		return nil, err
	}
	return s.eachBucket(ctx, in, limit)
}

// gapBuckets returns workload id's settled buckets whose paths were apart
// at settle (a gap paged), newest first, up to limit.
func (s *core) gapBuckets(ctx context.Context, id string, limit int) ([]Bucket, error) {
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key("gsi1pk").Equal(expression.Value(bucketsSettled(id)))).
		WithFilter(expression.Name("gap").NotEqual(expression.Value(0))).Build()
	if err != nil {
		return nil, err
	}
	return s.eachBucket(ctx, &dynamodb.QueryInput{TableName: aws.String(s.ledger), IndexName: aws.String(indexName),
		KeyConditionExpression: expr.KeyCondition(), FilterExpression: expr.Filter(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(), ScanIndexForward: aws.Bool(false)}, limit)
}

func (s *core) eachBucket(ctx context.Context, in *dynamodb.QueryInput, limit int) ([]Bucket, error) {
	var out []Bucket
	err := ddb.QueryEach(ctx, s.db, in, func(it headItem) (bool, error) {
		out = append(out, it.bucket())
		return limit == 0 || len(out) < limit, nil
	})
	if err != nil {
		return nil, fmt.Errorf("spend: list buckets: %w", err)
	}
	return out, nil
}

// Settle settles workload id's buckets bs, whose settle horizon has
// passed: each is marked settled at its latest revision, and those whose
// paths are apart by more than their meter's tolerance are recorded and
// paged, one page per workload and transaction however many buckets, so a
// fleet-wide gap is one page per workload. A bucket is settled once: a
// head that changed since it was read is read again.
func (s *Buckets) Settle(ctx context.Context, id string, bs []Bucket, runID string) ([]Gap, error) {
	var gaps []Gap
	for start := 0; start < len(bs); start += settleChunk {
		g, err := s.settleChunk(ctx, id, bs[start:min(start+settleChunk, len(bs))], runID)
		if err != nil {
			return gaps, err
		}
		gaps = append(gaps, g...)
	}
	return gaps, nil
}

func (s *core) settleChunk(ctx context.Context, id string, bs []Bucket, runID string) ([]Gap, error) {
	for range bucketAttempts {
		tx, gaps, err := s.settleTx(id, bs, runID)
		if err != nil || len(tx) == 0 {
			return nil, err
		}
		err = s.transact(ctx, tx)
		if err == nil {
			return gaps, nil
		}
		if _, _, ok := cancelled(err); !ok {
			return nil, fmt.Errorf("spend: settle buckets of %s: %w", id, err)
		}
		if bs, err = s.reread(ctx, bs); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: settling buckets of %s", ErrBucketContended, id)
}

// reread reads bs' heads again, leaving out those settled meanwhile.
func (s *core) reread(ctx context.Context, bs []Bucket) ([]Bucket, error) {
	var out []Bucket
	for _, b := range bs {
		h, err := s.readHead(ctx, b.BucketKey, b.End.Sub(b.Start))
		if err != nil {
			return nil, err
		}
		if !h.Settled {
			out = append(out, h)
		}
	}
	return out, nil
}

// settleTx marks bs settled and records their gaps with one page.
func (s *core) settleTx(id string, bs []Bucket, runID string) ([]types.TransactWriteItem, []Gap, error) {
	now := s.now()
	var tx []types.TransactWriteItem
	var gaps []Gap
	for _, b := range bs {
		src, m, err := s.meterOf(b.BucketKey)
		if err != nil {
			return nil, nil, err
		}
		next := b
		next.Settled, next.SettledRev, next.Version = true, b.Revisions, b.Version+1
		// A source no webhook feeds has nothing to disagree with.
		if diff := b.PLatest - b.W; src.HasWebhooks() && abs64(diff) > m.Tolerance {
			next.Gap = diff
			gaps = append(gaps, Gap{Bucket: next, Diff: diff})
		}
		head, err := s.headPut(next)
		if err != nil {
			return nil, nil, err
		}
		tx = append(tx, head)
	}
	if len(gaps) == 0 {
		return tx, nil, nil
	}
	dedup := gapDedupKey(id, gaps)
	for _, g := range gaps {
		item, err := attributevalue.MarshalMap(gapItem{PK: bucketPK(g.Bucket.BucketKey), SK: bucketGapSK(g.Bucket.SettledRev),
			Bucket: g.Bucket.BucketKey.String(), Line: GapLine(g), P: g.Bucket.PLatest, W: g.Bucket.W, Diff: g.Diff,
			Counted: g.Bucket.Counted, Rev: g.Bucket.SettledRev, DedupKey: dedup, RunID: runID, SettledAt: ddb.Stamp(now)})
		if err != nil {
			return nil, nil, fmt.Errorf("spend: encode gap: %w", err)
		}
		tx = append(tx, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.ledger), Item: item}})
	}
	page, err := s.pages.EnqueueItem(s.gapPage(id, dedup, gaps, now), now)
	if err != nil {
		return nil, nil, fmt.Errorf("spend: gap page: %w", err)
	}
	return append(tx, page), gaps, nil
}

// gapDedupKey names one settle page by its buckets and revisions, so a
// retry of the same settlement collapses into the same alert.
func gapDedupKey(id string, gaps []Gap) string {
	keys := make([]string, 0, len(gaps))
	for _, g := range gaps {
		keys = append(keys, fmt.Sprintf("%s#%d", g.Bucket.BucketKey, g.Bucket.SettledRev))
	}
	slices.Sort(keys)
	sum := sha256.Sum256([]byte(strings.Join(keys, "\n")))
	return "bucket-gap#" + id + "#" + hex.EncodeToString(sum[:8])
}

func (s *core) gapPage(id, dedup string, gaps []Gap, now time.Time) pager.Event {
	lines := make([]string, 0, len(gaps))
	var net int64
	for _, g := range gaps {
		lines = append(lines, GapLine(g))
		net += g.Diff
	}
	summary := gapSummary(id, len(gaps), net, lines)
	return pager.Event{RoutingKey: s.routingKey, EventAction: pager.ActionTrigger, DedupKey: dedup,
		Payload: &pager.Payload{Summary: summary, Source: s.source, Severity: pager.SeverityWarning, Timestamp: now,
			Component: id, Class: "usage_bucket_gap",
			CustomDetails: map[string]any{"workload": id, "buckets": lines, "owner": s.owner}}}
}

// maxSummary bounds a page's summary: the Events API v2 takes 1024
// characters.
const maxSummary = 1000

// gapSummary is a settle page's summary: the workload, how many buckets
// and their net difference, where every bucket is listed (the workload's
// explain, and the page's custom details), then as many of the buckets'
// lines as fit, and how many more there are.
func gapSummary(id string, n int, net int64, lines []string) string {
	summary := fmt.Sprintf("usage paths disagree at settle: workload=%s buckets=%d net_diff=%+d (every bucket: hookline workload explain %s)",
		id, n, net, id)
	for i, l := range lines {
		more := ""
		if rest := len(lines) - i - 1; rest > 0 {
			more = fmt.Sprintf("; +%d more", rest)
		}
		if len(summary)+2+len(l)+len(more) > maxSummary {
			return summary + fmt.Sprintf("; +%d more", len(lines)-i)
		}
		summary += "; " + l
	}
	return summary
}
