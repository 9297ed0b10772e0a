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
	"github.com/hookline/hookline/internal/sums"
)

// ErrUnknownSums means a bucket names a sums source or meter the ledger
// was not configured with (Config.Sums).
var ErrUnknownSums = errors.New("spend: unknown sums source or meter")

// Observation is one value a provider of sums showed for a bucket, in
// ledger units (already rounded at the bucket to the meter's scale).
type Observation struct {
	Key   BucketKey
	Value int64
	// Provisional is true when the bucket was still open when read.
	Provisional bool
	RunID       string
}

// Observed is what [Buckets.Observe] did.
type Observed struct {
	Bucket Bucket
	// Revision is the recorded revision; nil when the value was within
	// the meter's tolerance of the latest one (nothing was written).
	Revision  *Revision
	Decisions []Decision
	// Pages are the dedup keys of the pages the revision enqueued (its
	// downward page), committed with it: the caller sends them by key
	// ([pager.Outbox.FlushKeys]) right away, not at the end of its run.
	Pages []string
}

// revisionItem is the stored form of a [Revision].
type revisionItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	N           int64  `dynamodbav:"n"`
	P           int64  `dynamodbav:"p"`
	W           int64  `dynamodbav:"w"`
	Delta       int64  `dynamodbav:"delta"`
	Down        bool   `dynamodbav:"down"`
	Provisional bool   `dynamodbav:"provisional"`
	RunID       string `dynamodbav:"run_id,omitempty"`
	ObservedAt  string `dynamodbav:"observed_at"`
	// PPrev is the provider's highest value before a downward revision.
	PPrev int64 `dynamodbav:"p_prev,omitempty"`
}

func (it revisionItem) revision() Revision {
	return Revision{N: it.N, P: it.P, W: it.W, Delta: it.Delta, Down: it.Down, Provisional: it.Provisional,
		RunID: it.RunID, ObservedAt: ddb.ParseStamp(it.ObservedAt)}
}

// meterOf is the configured source and meter of a bucket.
func (s *core) meterOf(k BucketKey) (sums.Source, sums.Meter, error) {
	src, ok := s.sums.sources[k.Source]
	if !ok {
		return sums.Source{}, sums.Meter{}, fmt.Errorf("%w: source %q", ErrUnknownSums, k.Source)
	}
	m, ok := src.Meters[k.Meter]
	if !ok {
		return sums.Source{}, sums.Meter{}, fmt.Errorf("%w: meter %q of %s", ErrUnknownSums, k.Meter, k.Source)
	}
	return src, m, nil
}

// Observe folds one provider value into its bucket by the max rule: the
// provider's highest value P* rises to it, and the workload's total by
// the increase of max(W, P*). A value within the meter's tolerance of the
// latest one writes nothing, so re-reading an unchanged bucket (or float
// noise) makes no revision, delta or page. A value below P* is a
// downward revision: recorded and paged for an operator's decision, and
// counted only for a meter that follows downward revisions. The head is
// conditioned on its version, and the revision and delta keys derive
// from it, so a retry after an ambiguous answer writes nothing twice.
func (s *Buckets) Observe(ctx context.Context, o Observation) (Observed, error) {
	src, m, err := s.meterOf(o.Key)
	if err != nil {
		return Observed{}, err
	}
	for range bucketAttempts {
		h, err := s.readHead(ctx, o.Key, src.WidthAt(o.Key.Start))
		if err != nil {
			return Observed{}, err
		}
		if h.PSeen && abs64(o.Value-h.PLatest) <= m.Tolerance {
			return Observed{Bucket: h}, nil
		}
		// The bucket's start decides its period: no bucket straddles one.
		tg, err := s.targetAt(ctx, o.Key.WorkloadID, o.Key.Start)
		if err != nil {
			return Observed{}, fmt.Errorf("spend: observe bucket %s: %w", o.Key, err)
		}
		next, rev := h.withValue(o, m, s.now())
		tx, err := s.observeTx(next, rev, h.PStar, tg)
		if err != nil {
			return Observed{}, err
		}
		err = s.transact(ctx, tx)
		if err == nil {
			if err := s.lateRevision(ctx, next, rev, h.PStar, tg); err != nil {
				return Observed{}, err
			}
			out, err := s.observed(ctx, next, rev)
			if rev.Down && !m.FollowDown {
				out.Pages = []string{downDedupKey(next.BucketKey, rev.N)}
			}
			return out, err
		}
		failed, _, ok := cancelled(err)
		if !ok {
			return Observed{}, fmt.Errorf("spend: observe bucket %s: %w", o.Key, err)
		}
		if len(failed) > 2 && failed[2] {
			if err := s.totalRefused(ctx, next, rev); err != nil {
				return Observed{}, err
			}
		}
	}
	return Observed{}, fmt.Errorf("%w: %s", ErrBucketContended, o.Key)
}

// totalRefused says why the workload's total refused a revision's delta:
// an [*OverflowError] when the delta would carry it past [MaxTotal],
// [ErrUnknownWorkload] when the workload is retired or gone, and nil when
// neither holds any more (it changed meanwhile: the caller tries again).
func (s *core) totalRefused(ctx context.Context, b Bucket, rev Revision) error {
	w, err := s.asWorkloads().Get(ctx, b.WorkloadID)
	switch {
	case errors.Is(err, ErrUnknownWorkload) || (err == nil && w.Status == StatusRetired):
		return fmt.Errorf("spend: observe bucket %s: workload retired or vanished: %w", b.BucketKey, ErrUnknownWorkload)
	case err != nil:
		return fmt.Errorf("spend: observe bucket %s: %w", b.BucketKey, err)
	case w.Total > MaxTotal-rev.Delta:
		return fmt.Errorf("spend: observe bucket %s: %w", b.BucketKey,
			&OverflowError{RecordID: pollDeltaID(b.BucketKey, rev.N), WorkloadID: b.WorkloadID, Total: w.Total, Units: rev.Delta})
	}
	return nil
}

// withValue is h after the provider showed o.Value, and the revision
// that records it.
func (h Bucket) withValue(o Observation, m sums.Meter, now time.Time) (Bucket, Revision) {
	next := h
	next.Revisions++
	next.PLatest, next.PSeen, next.Provisional = o.Value, true, o.Provisional
	next.PStar = max(h.PStar, o.Value)
	down := h.PSeen && o.Value < h.PStar-m.Tolerance
	if down {
		next.Downs++
	}
	next.Counted = next.count(m.FollowDown)
	next.Version++
	next.LastSeen = now
	if next.FirstSeen.IsZero() {
		next.FirstSeen = now
	}
	rev := Revision{N: next.Revisions, P: o.Value, W: h.W, Delta: next.Counted - h.Counted, Down: down,
		Provisional: o.Provisional, RunID: o.RunID, ObservedAt: now}
	return next, rev
}

// observeTx is a revision's transaction: the head (first), the revision,
// then, for a change of the count, the workload's total and the delta,
// and for a downward revision its record and, unless the meter follows
// it, its page.
func (s *core) observeTx(next Bucket, rev Revision, pPrev int64, tg target) ([]types.TransactWriteItem, error) {
	head, err := s.headPut(next)
	if err != nil {
		return nil, err
	}
	ri := revisionItem{PK: bucketPK(next.BucketKey), SK: revSK(rev.N), N: rev.N, P: rev.P, W: rev.W, Delta: rev.Delta,
		Down: rev.Down, Provisional: rev.Provisional, RunID: rev.RunID, ObservedAt: ddb.Stamp(rev.ObservedAt)}
	if rev.Down {
		ri.PPrev = pPrev
	}
	item, err := attributevalue.MarshalMap(ri)
	if err != nil {
		return nil, fmt.Errorf("spend: encode revision of %s: %w", next.BucketKey, err)
	}
	tx := []types.TransactWriteItem{head, {Put: &types.Put{TableName: aws.String(s.ledger), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)")}}}
	var tail []types.TransactWriteItem // a late period's addition, last
	if rev.Delta != 0 {
		id := pollDeltaID(next.BucketKey, rev.N)
		u := Usage{RecordID: id, Units: rev.Delta, Path: PathPoll, ObservedAt: rev.ObservedAt}
		total, extra, err := s.totalItems(next.WorkloadID, tg, rev.Delta, 1, u, ddb.Stamp(rev.ObservedAt))
		if err != nil {
			return nil, err
		}
		tail = extra
		d, err := s.deltaPut(next.BucketKey, pollDeltaSK(rev.N), Delta{ID: id, Amount: rev.Delta, Cause: PathPoll,
			Counted: next.Counted, At: rev.ObservedAt})
		if err != nil {
			return nil, err
		}
		tx = append(tx, total, d)
	}
	if rev.Down {
		down, err := s.downItems(next, rev, pPrev)
		if err != nil {
			return nil, err
		}
		tx = append(tx, down...)
	}
	return append(tx, tail...), nil
}

// lateRevision pages, once per workload and period, a provider's value
// that changed a bucket of a period past its close: an increase is late
// usage, and a downward revision is paged the same way, since neither
// can change that invoice's decision any more.
func (s *core) lateRevision(ctx context.Context, next Bucket, rev Revision, pPrev int64, tg target) error {
	if !tg.late || !tg.closed || (rev.Delta == 0 && !rev.Down) {
		return nil
	}
	u := Usage{RecordID: pollDeltaID(next.BucketKey, rev.N), Units: rev.Delta}
	if rev.Down {
		return s.pageLateDown(ctx, next.WorkloadID, tg, u, pPrev-rev.P)
	}
	return s.pageLate(ctx, next.WorkloadID, tg, u)
}

// downItems record a downward revision and, unless the meter follows
// downward revisions, page the reconciliation owner once for it.
func (s *core) downItems(next Bucket, rev Revision, pPrev int64) ([]types.TransactWriteItem, error) {
	item, err := attributevalue.MarshalMap(revisionItem{PK: bucketPK(next.BucketKey), SK: downSK(rev.N), N: rev.N,
		P: rev.P, W: rev.W, Delta: rev.Delta, Down: true, RunID: rev.RunID, ObservedAt: ddb.Stamp(rev.ObservedAt), PPrev: pPrev})
	if err != nil {
		return nil, fmt.Errorf("spend: encode downward revision of %s: %w", next.BucketKey, err)
	}
	tx := []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(s.ledger), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)")}}}
	if _, m, err := s.meterOf(next.BucketKey); err == nil && m.FollowDown {
		return tx, nil
	}
	page, err := s.pages.EnqueueItem(s.downPage(next, rev, pPrev), rev.ObservedAt)
	if err != nil {
		return nil, fmt.Errorf("spend: downward revision page: %w", err)
	}
	return append(tx, page), nil
}

// DownLine is the page line of a downward revision.
func DownLine(b Bucket, pPrev, p int64) string {
	return fmt.Sprintf("usage bucket revised down: meter=%s workload=%s bucket=[%s,%s) %s provider=%d was=%d webhook=%d counted=%d kept (first number kept until an operator decides)",
		b.Meter, b.WorkloadID, b.Start.UTC().Format(time.RFC3339), b.End.UTC().Format(time.RFC3339), b.TZ,
		p, pPrev, b.W, b.Counted)
}

// downDedupKey names the page of a bucket's downward revision n.
func downDedupKey(k BucketKey, n int64) string { return fmt.Sprintf("bucket-down#%s#%d", k, n) }

func (s *core) downPage(b Bucket, rev Revision, pPrev int64) pager.Event {
	return pager.Event{RoutingKey: s.routingKey, EventAction: pager.ActionTrigger,
		DedupKey: downDedupKey(b.BucketKey, rev.N),
		Payload: &pager.Payload{Summary: DownLine(b, pPrev, rev.P), Source: s.source, Severity: pager.SeverityWarning,
			Timestamp: rev.ObservedAt, Component: b.WorkloadID, Class: "usage_bucket_down",
			CustomDetails: map[string]any{"bucket": b.BucketKey.String(), "revision": rev.N, "provider": rev.P,
				"provider_before": pPrev, "webhook": b.W, "counted": b.Counted, "owner": s.owner}}}
}

// observed reads the workload's total after a revision and takes the cap
// action it calls for, in the name of the revision's delta.
func (s *core) observed(ctx context.Context, next Bucket, rev Revision) (Observed, error) {
	out := Observed{Bucket: next, Revision: &rev}
	if rev.Delta <= 0 {
		return out, nil
	}
	w, err := s.asWorkloads().Get(ctx, next.WorkloadID)
	if err != nil {
		return out, fmt.Errorf("spend: observed %s, cap check: %w", next.BucketKey, err)
	}
	u := Usage{RecordID: pollDeltaID(next.BucketKey, rev.N), Units: rev.Delta, Path: PathPoll, ObservedAt: rev.ObservedAt}
	out.Decisions, err = s.enforce(ctx, w, u, s.now())
	if err != nil {
		return out, fmt.Errorf("spend: observed %s, enforce cap: %w", next.BucketKey, err)
	}
	return out, nil
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
