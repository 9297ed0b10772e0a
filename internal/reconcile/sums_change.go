package reconcile

import (
	"errors"
	"fmt"
	"maps"
	"slices"
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
//     again beside the old buckets of the same span;
//   - a provider meter counted under another name while buckets of the
//     old name may still be open: the new name's buckets would read the
//     usage the old name's heads counted and count it again. A meter
//     renamed at the door keeps its name and lists the new one in
//     door_names ([sums.Meter.DoorNames]).
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
	if was, err := time.ParseDuration(st.Width); err == nil {
		open := ddb.ParseStamp(st.WidthUntil).Add(src.Settle.D() + max(was, src.Width.D()))
		for _, mname := range slices.Sorted(maps.Keys(src.Meters)) {
			m := src.Meters[mname]
			old, ok := st.Meters[m.Identity()]
			if _, kept := src.Meters[old]; !ok || old == m.Name || kept || !now.Before(open) {
				continue
			}
			errs = append(errs, fmt.Errorf("%w: %s: meters: %q reads %s, which the meter %q counted in buckets that stay open until %s: "+
				"its buckets would count that usage again; name the meter %q again and list %q in its door_names",
				ErrSumsConfigChanged, src.Name, m.Name, m.Identity(), old, open.Format(time.RFC3339), old, m.Name))
		}
	}
	return errors.Join(errs...)
}

// recordConfig is what a source's state keeps of its configuration for
// [checkChange]: its start, its width, the end of the last bucket of
// that width a run at now could touch, and each provider meter's name.
func recordConfig(it *sumsStateItem, src sums.Source, now time.Time) {
	_, end := src.Bucket(now)
	it.Start, it.Width, it.WidthUntil = ddb.Stamp(src.Start), src.Width.D().String(), ddb.Stamp(end)
	it.Meters = map[string]string{}
	for _, m := range src.Meters {
		it.Meters[m.Identity()] = m.Name
	}
}
