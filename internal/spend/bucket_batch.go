package spend

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/sums"
)

// bucketGroup is the records of one batch counted in one bucket of a
// provider of sums, in batch order.
type bucketGroup struct {
	key  BucketKey
	src  sums.Source
	id   string
	recs []int
	// head is the bucket's head as this batch last wrote it, for the
	// group's next transaction; known is false until then, or once a
	// write's outcome is unknown.
	head  Bucket
	known bool
}

// MaxBucketRecords is how many records of one bucket one transaction
// folds: an entry and at most one delta each, the workload's total and
// the bucket's head stay within DynamoDB's 100 items a transaction.
const MaxBucketRecords = 40

// applyBuckets folds each bucket's records, MaxBucketRecords a
// transaction. Each head is read just before its group's first
// transaction, not with the others at the start of the batch: a head
// read earlier is more often changed by a concurrent batch by the time
// its group writes, and a cancelled transaction costs more than a read
// (reading a batch's heads together cancelled 456 of 2,616 transactions
// of BenchmarkBucketFold on their head's version, against 54 of 2,109).
func (b *batch) applyBuckets(ctx context.Context) {
	for _, g := range b.buckets {
		for start := 0; start < len(g.recs); start += MaxBucketRecords {
			b.applyBucketGroup(ctx, g, g.recs[start:min(start+MaxBucketRecords, len(g.recs))])
		}
	}
}

// applyBucketGroup folds up to MaxBucketRecords records of one bucket in
// one transaction, as [core.applyBucketed] folds one: their entries, the
// workload's total grown by the increase of max(W, P*), the head
// (conditioned on the version read) and one delta for the records that
// raised the count. A hot workload's bucket head and delta are then
// written once per batch, not once per record. Entries that exist already are taken out and
// classified as duplicates; a head changed meanwhile is read again.
func (b *batch) applyBucketGroup(ctx context.Context, g *bucketGroup, recs []int) {
	pending := slices.Clone(recs)
	var dups []int
	defer func() { b.classifyLater(g.id, dups) }()
	for range bucketAttempts {
		// The bucket's start decides its period: no bucket straddles one.
		tg, err := b.s.targetAt(ctx, g.id, g.key.Start)
		if err != nil {
			b.fail(pending, fmt.Errorf("spend: apply batch to bucket %s: %w", g.key, err))
			return
		}
		h, err := b.head(ctx, g)
		if err != nil {
			b.fail(pending, err)
			return
		}
		fold, err := b.foldBucket(g, h, pending, tg)
		if err != nil {
			b.fail(pending, err)
			return
		}
		g.known = false // until the transaction's outcome is known
		err = b.s.transact(ctx, fold.tx)
		if err == nil {
			g.head, g.known = fold.next.item().bucket(), true // as stored
			if tg.late {
				// A late bucket grew its period, not the current total.
				b.pageLateBucket(ctx, g.id, tg, pending, fold.deltas)
				clear(fold.deltas)
			}
			b.bucketCommitted(g.id, pending, fold.deltas)
			return
		}
		failed, _, ok := cancelled(err)
		switch {
		case !ok:
			b.fail(pending, fmt.Errorf("spend: apply batch to bucket %s: %w", g.key, err))
			return
		case failed[len(pending)]:
			// The workload is retired, vanished, or over MaxTotal: each
			// record takes the single path, which tells which.
			for _, i := range pending {
				b.res[i], b.errs[i] = b.s.apply(ctx, b.us[i], g.id)
			}
			return
		}
		pending, dups = takeDuplicates(pending, fold.owners, failed, dups)
		if len(pending) == 0 {
			return
		}
		// Otherwise another change of the head committed first: read it
		// again and fold once more.
	}
	b.fail(pending, fmt.Errorf("%w: %s", ErrBucketContended, g.key))
}

// head is g's head: as this batch last wrote it, or read now.
func (b *batch) head(ctx context.Context, g *bucketGroup) (Bucket, error) {
	if g.known {
		return g.head, nil
	}
	return b.s.readHead(ctx, g.key, g.src.WidthAt(g.key.Start))
}

// bucketFold is one attempt's transaction for a bucket group: owners[k]
// is the record of item k (-1 for the total and the head), deltas the
// increase each record made, next the head it writes.
type bucketFold struct {
	tx     []types.TransactWriteItem
	owners []int
	deltas []int64
	next   Bucket
}

// foldBucket is the transaction of records recs on the head h: the
// records' entries first, then the total, the head and the deltas.
func (b *batch) foldBucket(g *bucketGroup, h Bucket, recs []int, tg target) (bucketFold, error) {
	follow := g.src.Meters[g.key.Meter].FollowDown
	now := b.s.now()
	var f bucketFold
	var raised []int // the records that raised the count
	next, sum := h, int64(0)
	for _, i := range recs {
		u := b.us[i]
		var d int64
		next, d = next.withRecord(u, follow, now)
		entry, err := b.s.bucketEntry(u, g.id, next.BucketKey, d, now)
		if err != nil {
			return f, err
		}
		f.tx, f.owners, f.deltas = append(f.tx, entry), append(f.owners, i), append(f.deltas, d)
		sum += d
		if d > 0 {
			raised = append(raised, i)
		}
	}
	next.Version = h.Version + 1 // one change of the head, read at h.Version
	f.next = next
	total, extra, err := b.s.totalItems(g.id, tg, sum, int64(len(recs)), b.us[recs[len(recs)-1]], ddb.Stamp(now))
	if err != nil {
		return f, err
	}
	head, err := b.s.headPut(next)
	if err != nil {
		return f, err
	}
	f.tx, f.owners = append(f.tx, total, head), append(f.owners, -1, -1)
	if len(raised) > 0 {
		delta, err := b.groupDelta(next, raised, sum, now)
		if err != nil {
			return f, err
		}
		f.tx, f.owners = append(f.tx, delta), append(f.owners, raised[0])
	}
	for _, it := range extra {
		f.tx, f.owners = append(f.tx, it), append(f.owners, -1)
	}
	return f, nil
}

// pageLateBucket pages, once per workload and period, what records recs
// of a late bucket added after its period's close, in the name of the
// first that added any.
func (b *batch) pageLateBucket(ctx context.Context, id string, tg target, recs []int, deltas []int64) {
	if !tg.closed {
		return
	}
	var sum int64
	first := -1
	for pos, d := range deltas {
		sum += d
		if d > 0 && first < 0 {
			first = recs[pos]
		}
	}
	if first < 0 {
		return
	}
	u := b.us[first]
	if err := b.s.pageLate(ctx, id, tg, Usage{RecordID: u.RecordID, EventID: u.EventID, Units: sum}); err != nil {
		b.errs[first] = fmt.Errorf("spend: applied %s: %w", u.RecordID, err)
	}
}

// groupDelta is the one delta of a bucket group's increase, sum, named by
// the first record that raised the count and listing them all. One item
// per group, not per record: the deltas live in the head's partition, and
// one a record would put that partition past DynamoDB's 1,000 write units
// a second near 450 records/s of one hot bucket.
func (b *batch) groupDelta(next Bucket, raised []int, sum int64, now time.Time) (types.TransactWriteItem, error) {
	first := b.us[raised[0]]
	d := Delta{ID: recordDeltaID(next.BucketKey, first.RecordID), Amount: sum, Cause: first.Path, Record: first.RecordID,
		Counted: next.Counted, At: now}
	if len(raised) > 1 {
		for _, i := range raised {
			d.Records = append(d.Records, b.us[i].RecordID)
		}
	}
	return b.s.deltaPut(next.BucketKey, recordDeltaSK(first.RecordID), d)
}

// takeDuplicates moves the records whose items failed their condition
// (an entry or a delta that exists) from pending to dups.
func takeDuplicates(pending, owners []int, failed []bool, dups []int) ([]int, []int) {
	var rest []int
	for pos, i := range owners {
		if i >= 0 && pos < len(failed) && failed[pos] && !slices.Contains(dups, i) {
			dups = append(dups, i)
		}
	}
	for _, i := range pending {
		if !slices.Contains(dups, i) {
			rest = append(rest, i)
		}
	}
	return rest, dups
}

// bucketCommitted records the results of a committed bucket group and
// takes the cap action the workload now calls for, once, in the name of
// the record whose increase crossed.
func (b *batch) bucketCommitted(id string, recs []int, deltas []int64) {
	grown := make([]Usage, len(recs))
	for pos, i := range recs {
		grown[pos] = b.us[i]
		grown[pos].Units = deltas[pos]
	}
	b.committedAs(id, recs, grown)
}
