package spend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/sums"
)

// applyBucketed folds a record counted in bucket k, from either path: W
// grows by its units, and the workload's total by the increase of
// max(W, P*), which is zero while the provider's value already covers it.
// The entry (conditioned on being absent, as in Apply, so a record both
// paths saw is one entry and grows W once), the total, the head
// (conditioned on its version), the record's marker when it awaits the
// export ([awaitsExport]) and the delta commit in one transaction; when
// the head moved, it is read again and the record retried.
func (s *core) applyBucketed(ctx context.Context, u Usage, id string, k BucketKey, src sums.Source) (Result, error) {
	if !awaitsExport(u, src) {
		u.Unreconciled = true // no per-record export holds it: the sums do
	}
	follow := src.Meters[k.Meter].FollowDown
	for range bucketAttempts {
		// The bucket's start decides its period: no bucket straddles one.
		tg, err := s.targetAt(ctx, id, k.Start)
		if err != nil {
			return Result{}, fmt.Errorf("spend: apply %s to bucket %s: %w", u.RecordID, k, err)
		}
		h, err := s.readHead(ctx, k, src.WidthAt(k.Start))
		if err != nil {
			return Result{}, err
		}
		next, delta := h.withRecord(u, follow, s.now())
		tx, err := s.recordTx(u, id, tg, next, delta)
		if err != nil {
			return Result{}, err
		}
		err = s.transact(ctx, tx)
		if err == nil {
			if tg.closed {
				if err := s.pageLate(ctx, id, tg, Usage{RecordID: u.RecordID, EventID: u.EventID, Units: delta}); err != nil {
					return Result{Outcome: Applied, WorkloadID: id}, fmt.Errorf("spend: applied %s: %w", u.RecordID, err)
				}
			}
			return s.appliedBucketed(ctx, u, id)
		}
		failed, _, ok := cancelled(err)
		switch {
		case !ok:
			return Result{}, fmt.Errorf("spend: apply %s to bucket %s: %w", u.RecordID, k, err)
		case failed[0]:
			return s.conflict(ctx, u, id)
		case failed[1]:
			res, err := s.deferForWorkload(ctx, u, id)
			if !errors.Is(err, errWorkloadMoved) {
				return res, err
			}
			continue // its period was read again
		}
		// Another change of the head committed first: read it again.
	}
	return Result{}, fmt.Errorf("%w: %s", ErrBucketContended, k)
}

// withRecord is h after a webhook record's units, and the increase of
// what it counts.
func (h Bucket) withRecord(u Usage, follow bool, now time.Time) (Bucket, int64) {
	next := h
	next.W += u.Units
	next.Counted = next.count(follow)
	next.Version++
	next.LastSeen = now
	if next.FirstSeen.IsZero() {
		next.FirstSeen = now
	}
	return next, next.Counted - h.Counted
}

// recordTx is a bucketed record's transaction: its entry, the workload's
// total (second, as Apply's; a late period's check), the head, its marker
// unless u is Unreconciled, its delta when positive, and a late period's
// addition.
func (s *core) recordTx(u Usage, id string, tg target, next Bucket, delta int64) ([]types.TransactWriteItem, error) {
	now := s.now()
	entries, err := s.bucketEntries(u, id, next.BucketKey, delta, now)
	if err != nil {
		return nil, err
	}
	total, extra, err := s.totalItems(id, tg, delta, 1, u, ddb.Stamp(now))
	if err != nil {
		return nil, err
	}
	head, err := s.headPut(next)
	if err != nil {
		return nil, err
	}
	tx := append([]types.TransactWriteItem{entries[0], total, head}, entries[1:]...)
	if delta > 0 {
		d, err := s.deltaPut(next.BucketKey, recordDeltaSK(u.RecordID), Delta{ID: recordDeltaID(next.BucketKey, u.RecordID),
			Amount: delta, Cause: u.Path, Record: u.RecordID, Counted: next.Counted, At: now})
		if err != nil {
			return nil, err
		}
		tx = append(tx, d)
	}
	return append(tx, extra...), nil
}

// bucketEntry is a bucketed record's entry: the ledger entry, marked with
// its bucket and the units the bucket absorbed (those that did not raise
// its count). It writes no marker for the export to find: a record that
// awaits the export ([awaitsExport]) takes [core.applyBucketed], whose
// transaction holds its marker.
func (s *core) bucketEntry(u Usage, id string, k BucketKey, delta int64, now time.Time) (types.TransactWriteItem, error) {
	u.Unreconciled = true
	tx, err := s.bucketEntries(u, id, k, delta, now)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return tx[0], nil
}

// bucketEntries are a bucketed record's entry, marked as bucketEntry's,
// and its marker unless u is Unreconciled.
func (s *core) bucketEntries(u Usage, id string, k BucketKey, delta int64, now time.Time) ([]types.TransactWriteItem, error) {
	tx, err := s.entryItems(u, id, ddb.Stamp(now))
	if err != nil {
		return nil, err
	}
	return tx, markBucket(tx[0], k, u.Units-delta)
}

// awaitsExport reports whether a bucketed record waits to be confirmed
// by the per-record export, as a record of no bucket does: a webhook
// record whose source's mapping says the export holds it (reconciled,
// so not Unreconciled), counted in a bucket of a provider that serves
// its records one by one too (OpenMeter). Its marker is then confirmed
// when the export shows the record, or paged as unseen past the horizon,
// long before the bucket settles. A provider of sums alone (Stripe,
// OpenAI) holds no record to confirm it by: its sums do, at settle.
func awaitsExport(u Usage, src sums.Source) bool {
	return u.Path == PathWebhook && !u.Unreconciled && sums.Providers[src.Provider].Records
}

// markBucket adds the bucket and the absorbed units to an entry's put.
func markBucket(entry types.TransactWriteItem, k BucketKey, absorbed int64) error {
	if entry.Put == nil {
		return fmt.Errorf("spend: entry of bucket %s is not a put", k)
	}
	entry.Put.Item["bucket"] = &types.AttributeValueMemberS{Value: k.String()}
	if absorbed > 0 {
		entry.Put.Item["absorbed"] = &types.AttributeValueMemberN{Value: fmt.Sprint(absorbed)}
	}
	return nil
}

// appliedBucketed reads the workload's total after a bucketed record and
// takes the cap action it calls for, as Apply does.
func (s *core) appliedBucketed(ctx context.Context, u Usage, id string) (Result, error) {
	ledgerAt := s.now()
	s.metrics.Count(MetricAccepted, 1, map[string]string{"Path": u.Path})
	w, err := s.asWorkloads().Get(ctx, id)
	if err != nil {
		return Result{Outcome: Applied, WorkloadID: id}, fmt.Errorf("spend: applied %s, cap check: %w", u.RecordID, err)
	}
	res := Result{Outcome: Applied, WorkloadID: id, Total: w.Total}
	res.Decisions, err = s.enforce(ctx, w, u, ledgerAt)
	if err != nil {
		return res, fmt.Errorf("spend: applied %s, enforce cap: %w", u.RecordID, err)
	}
	return res, nil
}

// recordDeltaID and pollDeltaID are a delta's record ID: the bucket and
// its cause, so a page or `event explain` names the bucket.
func recordDeltaID(k BucketKey, rec string) string { return deltaIDPrefix + k.String() + "#rec:" + rec }
func pollDeltaID(k BucketKey, n int64) string      { return fmt.Sprintf("%s%s#rev%d", deltaIDPrefix, k, n) }

// deltaIDPrefix starts every delta's ID.
const deltaIDPrefix = "bucket:"

// IsDeltaID reports whether a record ID names a bucket's delta, which
// [Explainer.BucketDelta] reads, rather than a ledger entry.
func IsDeltaID(id string) bool { return strings.HasPrefix(id, deltaIDPrefix) }
