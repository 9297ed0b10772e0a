package spend

import (
	"context"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/hookline/hookline/internal/ddb"
)

// BucketsBetween returns workload id's bucket heads of sums source source
// whose start lies in [from, to), settled or not, oldest first. The
// reconciler compares a day the provider shows with the sum of the latest
// provider values of that day's buckets.
func (s *Buckets) BucketsBetween(ctx context.Context, id, source string, from, to time.Time) ([]Bucket, error) {
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
