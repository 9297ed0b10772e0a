package spend

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/pager"
)

// BucketsBetween returns workload id's bucket heads of sums source source
// whose start lies in [from, to), settled or not, oldest first. The
// reconciler compares a day the provider shows with the sum of the latest
// provider values of that day's buckets.
func (s *Recon) BucketsBetween(ctx context.Context, id, source string, from, to time.Time) ([]Bucket, error) {
	var out []Bucket
	for _, part := range []string{bucketsOpen(id), bucketsSettled(id)} {
		// A stamp is fixed-width, so every sort key of a start before to
		// sorts below the bare stamp of to, and those of to above it.
		kc := expression.Key("gsi1pk").Equal(expression.Value(part)).
			And(expression.Key("gsi1sk").Between(expression.Value(ddb.Stamp(from)), expression.Value(ddb.Stamp(to))))
		bs, err := s.queryBuckets(ctx, kc, true, 0)
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			if b.Source == source && !b.Start.Before(from) && b.Start.Before(to) {
				out = append(out, b)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Bucket) int { return a.Start.Compare(b.Start) })
	return out, nil
}

// SweepBehind is a sums source whose sweep over its workloads has taken
// longer than it should.
type SweepBehind struct {
	Source string
	// Sweep numbers the sweep; Started is when it began, Runs how many
	// runs it has taken so far, and Limit the time it should have taken.
	Sweep   int64
	Started time.Time
	Runs    int
	Limit   time.Duration
	// Resume is the last workload the sweep read.
	Resume string
	At     time.Time
}

// SweepBehindLine is the page's summary.
func SweepBehindLine(b SweepBehind) string {
	return fmt.Sprintf("sums sweep behind: source=%s sweep=%d started=%s runs=%d took=%s limit=%s resume_after=%q",
		b.Source, b.Sweep, b.Started.UTC().Format(time.RFC3339), b.Runs, b.At.Sub(b.Started).Round(time.Second),
		b.Limit, b.Resume)
}

// PageSweepBehind pages the reconciliation owner that a source's sweep is
// behind, once per source and UTC day. It reports whether this call
// enqueued the page.
func (s *Recon) PageSweepBehind(ctx context.Context, b SweepBehind) (bool, error) {
	dedup := "sums-behind#" + b.Source + "#" + b.At.UTC().Format(time.DateOnly)
	return s.pageOnce(ctx, dedup, b.At, &pager.Payload{Summary: SweepBehindLine(b), Component: b.Source,
		Class: "sums_sweep_behind", CustomDetails: map[string]any{"source": b.Source, "sweep": b.Sweep,
			"started": b.Started.UTC().Format(time.RFC3339), "runs": b.Runs, "limit": b.Limit.String(),
			"resume_after": b.Resume, "owner": s.owner}})
}

// ReadRefused is a workload whose read of a sums source the provider
// refused (sums.ErrRefused): the reconciler skipped it for a run.
type ReadRefused struct {
	Source, WorkloadID string
	// Reason is the refusal as the adapter reported it (no secret: the
	// adapters redact their keys).
	Reason string
	At     time.Time
}

// ReadRefusedLine is the page's summary.
func ReadRefusedLine(r ReadRefused) string {
	return fmt.Sprintf("sums read refused: source=%s workload=%s skipped until the provider answers; reason: %s",
		r.Source, r.WorkloadID, r.Reason)
}

// PageReadRefused pages the reconciliation owner that the provider
// refuses to sum a workload, once per source, workload and UTC day. It
// reports whether this call enqueued the page.
func (s *Recon) PageReadRefused(ctx context.Context, r ReadRefused) (bool, error) {
	dedup := "sums-refused#" + r.Source + "#" + r.WorkloadID + "#" + r.At.UTC().Format(time.DateOnly)
	return s.pageOnce(ctx, dedup, r.At, &pager.Payload{Summary: ReadRefusedLine(r), Component: r.Source,
		Class: "sums_read_refused", CustomDetails: map[string]any{"source": r.Source, "workload_id": r.WorkloadID,
			"reason": r.Reason, "owner": s.owner}})
}

// pageOnce enqueues a warning to the reconciliation owner under dedup,
// once: a second call with the same key enqueues nothing and reports
// false.
func (s *Recon) pageOnce(ctx context.Context, dedup string, at time.Time, p *pager.Payload) (bool, error) {
	p.Source, p.Severity, p.Timestamp, p.Group = s.source, pager.SeverityWarning, at.UTC(), s.owner
	item, err := s.pages.EnqueueItem(pager.Event{RoutingKey: s.routingKey, EventAction: pager.ActionTrigger, DedupKey: dedup,
		Payload: p}, at)
	if err != nil {
		return false, fmt.Errorf("spend: page %s: %w", dedup, err)
	}
	err = s.transact(ctx, []types.TransactWriteItem{item})
	if _, _, ok := cancelled(err); ok {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("spend: page %s: %w", dedup, err)
	}
	return true, nil
}
