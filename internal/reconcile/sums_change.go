package reconcile

import (
	"errors"
	"fmt"
	"time"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/sums"
)

// ErrSumsConfigChanged means a sums source's configuration changed in a
// way its counted records cannot follow: the source's run is refused,
// naming the field, until the field is put back.
var ErrSumsConfigChanged = errors.New("reconcile: sums source changed in a way its counted records cannot follow")

// checkChange refuses a source whose start or width moved from what its
// state recorded, naming the field:
//   - a start earlier than the recorded one: webhook records before the
//     recorded start were counted outside buckets, and reading their
//     buckets from the provider would count them again;
//   - another width while buckets of the recorded one may still be open
//     (until the end of the last bucket a run of that width could touch,
//     plus settle): the bucket key carries no width, so a bucket of the
//     new width would take an old bucket's head and count its hours
//     again beside the old buckets of the same span.
func checkChange(src sums.Source, st sumsStateItem, now time.Time) error {
	var errs []error
	if st.Start != "" {
		if was := ddb.ParseStamp(st.Start); src.Start.Before(was) {
			errs = append(errs, fmt.Errorf("%w: %s: start: %s is earlier than %s, the start its records were counted from: "+
				"webhook records before that were counted outside buckets, and reading their buckets would count them again; "+
				"put start back to %s or later", ErrSumsConfigChanged, src.Name, src.Start.UTC().Format(time.RFC3339),
				was.Format(time.RFC3339), was.Format(time.RFC3339)))
		}
	}
	if was, err := time.ParseDuration(st.Width); err == nil && was != src.Width.D() {
		open := ddb.ParseStamp(st.WidthUntil).Add(src.Settle.D() + max(was, src.Width.D()))
		if now.Before(open) {
			errs = append(errs, fmt.Errorf("%w: %s: width: %s differs from %s, the width of buckets that stay open until %s: "+
				"a bucket of the new width would count their usage again; put width back to %s, or change it after %s",
				ErrSumsConfigChanged, src.Name, src.Width.D(), was, open.Format(time.RFC3339), was, open.Format(time.RFC3339)))
		}
	}
	return errors.Join(errs...)
}

// recordConfig is what a source's state keeps of its configuration for
// [checkChange]: its start, its width and the end of the last bucket of
// that width a run at now could touch.
func recordConfig(it *sumsStateItem, src sums.Source, now time.Time) {
	_, end := src.Bucket(now)
	it.Start, it.Width, it.WidthUntil = ddb.Stamp(src.Start), src.Width.D().String(), ddb.Stamp(end)
}
