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
	item, err := s.pages.EnqueueItem(pager.Event{RoutingKey: s.route, EventAction: pager.ActionTrigger, DedupKey: dedup,
		Payload: &pager.Payload{Summary: SweepBehindLine(b), Source: s.source, Severity: pager.SeverityWarning,
			Timestamp: b.At.UTC(), Component: b.Source, Group: s.owner, Class: "sums_sweep_behind",
			CustomDetails: map[string]any{"source": b.Source, "sweep": b.Sweep, "started": b.Started.UTC().Format(time.RFC3339),
				"runs": b.Runs, "limit": b.Limit.String(), "resume_after": b.Resume, "owner": s.owner}}}, b.At)
	if err != nil {
		return false, fmt.Errorf("spend: sweep behind page of %s: %w", b.Source, err)
	}
	err = s.transact(ctx, []types.TransactWriteItem{item})
	if _, _, ok := cancelled(err); ok {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("spend: sweep behind page of %s: %w", b.Source, err)
	}
	return true, nil
}
