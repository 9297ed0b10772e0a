package spend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/sums"
)

// BucketKey names one bucket of a provider of sums: a workload's usage of
// one meter of one sums source (its account and live or test mode) in
// [Start, Start+width). Every key written for it carries all of these, so
// a test-mode summary never tops up a live workload's bucket.
type BucketKey struct {
	WorkloadID, Source, Account, Mode, Meter string
	Start                                    time.Time
}

// String names the bucket in pages, decisions and explain output:
// "<source>/<account>/<mode>/<meter>/<workload>@<start>".
func (k BucketKey) String() string {
	return k.Source + "/" + k.Account + "/" + k.Mode + "/" + k.Meter + "/" + k.WorkloadID + "@" +
		k.Start.UTC().Format(time.RFC3339)
}

// Bucket is a bucket's head: what the ledger counts for it and why.
type Bucket struct {
	BucketKey
	End time.Time
	// TZ is the time zone the bucket is aligned in (UTC).
	TZ string
	// W is the sum of the records applied to the bucket, each once,
	// whichever path (webhook or export) brought it; PStar
	// the highest value the provider has shown, PLatest its latest, and
	// PSeen whether it has shown any. Counted is max(W, PStar), or
	// max(W, PLatest) for a meter that follows downward revisions.
	W, PStar, PLatest, Counted int64
	PSeen                      bool
	// Provisional is true while the latest provider value was read before
	// the bucket closed.
	Provisional bool
	// Revisions counts the provider values recorded; Downs the downward
	// ones. Version orders every change of the head.
	Revisions, Downs, Version int64
	// Settled is set once the bucket passed its settle horizon; SettledRev
	// is the revision it was settled at, and Gap the difference paged
	// (P - W), if any.
	Settled    bool
	SettledRev int64
	Gap        int64
	FirstSeen  time.Time
	LastSeen   time.Time
}

// Revision is one provider value the ledger recorded for a bucket.
type Revision struct {
	N           int64
	P           int64
	W           int64
	Delta       int64
	Down        bool
	Provisional bool
	RunID       string
	ObservedAt  time.Time
}

// Delta is one change of a bucket's count: an increase of its maximum
// (or a decrease, for a meter that follows downward revisions), added to
// the workload's total in the same transaction.
type Delta struct {
	// ID is the delta's record ID: "<bucket>#rev<n>" for a poll,
	// "<bucket>#rec:<record>" for a webhook record.
	ID     string
	Amount int64
	// Cause is "poll" for a value of the provider's sums (no Record), else
	// the path of the record (Record) that raised the count.
	Cause, Record string
	// Records, when a batch's records raised the count together, are all
	// of them, Record first: one delta for the batch's increase.
	Records []string
	Counted int64
	At      time.Time
}

// bucketing says which sums source, if any, buckets a record.
type bucketing struct{ sources sums.Sources }

// bucketFor is the bucket that counts u in workload id, if u's usage
// source and meter are reconciled against sums and u happened at or after
// the source's start. Either path's record is bucketed: a record the
// per-record export found (OpenMeter's, which names its source and meter)
// is in the provider's sum as the webhook for it would be, so W must hold
// it too, or the bucket's top-up counts it again.
func (b bucketing) bucketFor(u Usage, id string) (BucketKey, sums.Source, sums.Meter, bool) {
	if len(b.sources) == 0 || u.Source == "" {
		return BucketKey{}, sums.Source{}, sums.Meter{}, false
	}
	src, m, ok := b.sources.For(u.Source, u.Meter)
	if !ok || u.OccurredAt.IsZero() || u.OccurredAt.Before(src.Start) {
		return BucketKey{}, sums.Source{}, sums.Meter{}, false
	}
	start, _ := src.Bucket(u.OccurredAt) // at the width at u.OccurredAt
	return KeyOf(src, m, id, start), src, m, true
}

// KeyOf is the key of workload id's bucket of meter m of src at start.
func KeyOf(src sums.Source, m sums.Meter, id string, start time.Time) BucketKey {
	return BucketKey{WorkloadID: id, Source: src.Name, Account: src.Account, Mode: src.Mode(), Meter: m.Name, Start: start.UTC()}
}

// ErrBucketContended means a bucket's head kept changing under a write:
// nothing was applied, and the caller should retry.
var ErrBucketContended = errors.New("spend: bucket head still contended after retries")

// bucketAttempts bounds the read-and-write rounds of one bucket change.
const bucketAttempts = 25

// headItem is the stored form of a [Bucket].
type headItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	GSI1PK      string `dynamodbav:"gsi1pk"`
	GSI1SK      string `dynamodbav:"gsi1sk"`
	WorkloadID  string `dynamodbav:"workload_id"`
	Source      string `dynamodbav:"source"`
	Account     string `dynamodbav:"account"`
	Mode        string `dynamodbav:"mode"`
	Meter       string `dynamodbav:"meter"`
	Start       string `dynamodbav:"start"`
	End         string `dynamodbav:"end"`
	TZ          string `dynamodbav:"tz"`
	W           int64  `dynamodbav:"w"`
	PStar       int64  `dynamodbav:"p_star"`
	PLatest     int64  `dynamodbav:"p_latest"`
	PSeen       bool   `dynamodbav:"p_seen"`
	Counted     int64  `dynamodbav:"counted"`
	Provisional bool   `dynamodbav:"provisional"`
	Revisions   int64  `dynamodbav:"revisions"`
	Downs       int64  `dynamodbav:"downs"`
	Version     int64  `dynamodbav:"version"`
	Settled     bool   `dynamodbav:"settled"`
	SettledRev  int64  `dynamodbav:"settled_rev"`
	Gap         int64  `dynamodbav:"gap"`
	FirstSeen   string `dynamodbav:"first_seen"`
	LastSeen    string `dynamodbav:"last_seen"`
}

func (it headItem) bucket() Bucket {
	return Bucket{BucketKey: BucketKey{WorkloadID: it.WorkloadID, Source: it.Source, Account: it.Account, Mode: it.Mode,
		Meter: it.Meter, Start: ddb.ParseStamp(it.Start)}, End: ddb.ParseStamp(it.End), TZ: it.TZ,
		W: it.W, PStar: it.PStar, PLatest: it.PLatest, Counted: it.Counted, PSeen: it.PSeen, Provisional: it.Provisional,
		Revisions: it.Revisions, Downs: it.Downs, Version: it.Version, Settled: it.Settled, SettledRev: it.SettledRev,
		Gap: it.Gap, FirstSeen: ddb.ParseStamp(it.FirstSeen), LastSeen: ddb.ParseStamp(it.LastSeen)}
}

func (b Bucket) item() headItem {
	part := bucketsOpen(b.WorkloadID)
	if b.Settled {
		part = bucketsSettled(b.WorkloadID)
	}
	return headItem{PK: bucketPK(b.BucketKey), SK: skHead, GSI1PK: part, GSI1SK: bucketGSI1SK(b.BucketKey),
		WorkloadID: b.WorkloadID, Source: b.Source, Account: b.Account, Mode: b.Mode, Meter: b.Meter,
		Start: ddb.Stamp(b.Start), End: ddb.Stamp(b.End), TZ: b.TZ, W: b.W, PStar: b.PStar, PLatest: b.PLatest,
		PSeen: b.PSeen, Counted: b.Counted, Provisional: b.Provisional, Revisions: b.Revisions, Downs: b.Downs,
		Version: b.Version, Settled: b.Settled, SettledRev: b.SettledRev, Gap: b.Gap,
		FirstSeen: ddb.Stamp(b.FirstSeen), LastSeen: ddb.Stamp(b.LastSeen)}
}

// count is what the bucket counts under the meter's downward policy.
func (b Bucket) count(follow bool) int64 {
	if follow && b.PSeen {
		return sums.Counted(b.W, b.PLatest)
	}
	return sums.Counted(b.W, b.PStar)
}

// readHead reads a bucket's head consistently; an absent one is a fresh
// bucket at version 0. width is the source's width at the bucket's start
// ([sums.Source.WidthAt]), and the head's end follows it: the one head
// of an earlier width that may share its key, the one at a stated
// boundary that a worker of the old configuration wrote in the moments
// the deploy took, counts on as the bucket of the width now.
func (s *core) readHead(ctx context.Context, k BucketKey, width time.Duration) (Bucket, error) {
	it, found, err := ddb.Get[headItem](ctx, s.db, getInput(s.ledger, ddb.Key(bucketPK(k), skHead)))
	if err != nil {
		return Bucket{}, fmt.Errorf("spend: read bucket %s: %w", k, err)
	}
	if !found {
		return freshBucket(k, width), nil
	}
	b := it.bucket()
	b.End = b.Start.Add(width)
	return b, nil
}

// freshBucket is the head of a bucket nobody has written: version 0.
func freshBucket(k BucketKey, width time.Duration) Bucket {
	return Bucket{BucketKey: k, End: k.Start.Add(width), TZ: "UTC"}
}

// headPut writes the head h, which was read at version h.Version-1,
// conditioned on nobody having changed it since.
func (s *core) headPut(h Bucket) (types.TransactWriteItem, error) {
	item, err := attributevalue.MarshalMap(h.item())
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("spend: encode bucket %s: %w", h.BucketKey, err)
	}
	cond := expression.AttributeNotExists(expression.Name("pk"))
	if h.Version > 1 {
		cond = expression.Name("version").Equal(expression.Value(h.Version - 1))
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.ledger), Item: item,
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(),
		ExpressionAttributeValues: expr.Values()}}, nil
}

// deltaItem is the stored form of a [Delta], in its bucket's partition.
type deltaItem struct {
	PK      string   `dynamodbav:"pk"`
	SK      string   `dynamodbav:"sk"`
	GSI1PK  string   `dynamodbav:"gsi1pk,omitempty"`
	GSI1SK  string   `dynamodbav:"gsi1sk,omitempty"`
	ID      string   `dynamodbav:"delta_id"`
	Bucket  string   `dynamodbav:"bucket"`
	Amount  int64    `dynamodbav:"amount"`
	Cause   string   `dynamodbav:"cause"`
	Record  string   `dynamodbav:"record,omitempty"`
	Records []string `dynamodbav:"records,omitempty"`
	Counted int64    `dynamodbav:"counted"`
	At      string   `dynamodbav:"at"`
}

func (it deltaItem) delta() Delta {
	return Delta{ID: it.ID, Amount: it.Amount, Cause: it.Cause, Record: it.Record, Records: it.Records, Counted: it.Counted,
		At: ddb.ParseStamp(it.At)}
}

// deltaPut appends a delta, once: its key is deterministic.
func (s *core) deltaPut(k BucketKey, sk string, d Delta) (types.TransactWriteItem, error) {
	item, err := attributevalue.MarshalMap(deltaItem{PK: bucketPK(k), SK: sk, GSI1PK: deltaGSI1PK(d.ID),
		GSI1SK: sk, ID: d.ID, Bucket: k.String(), Amount: d.Amount, Cause: d.Cause, Record: d.Record, Records: d.Records,
		Counted: d.Counted, At: ddb.Stamp(d.At)})
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("spend: encode delta %s: %w", d.ID, err)
	}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.ledger), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)")}}, nil
}

func getInput(table string, key map[string]types.AttributeValue) *dynamodb.GetItemInput {
	return &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)}
}
