package reconcile

import (
	"context"
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

// stateWidthItem is one width of a source's history as its state keeps
// it ([sums.WidthFrom]).
type stateWidthItem struct {
	Width string `dynamodbav:"width"`
	From  string `dynamodbav:"from,omitempty"`
}

// CheckSources refuses at start, as a run would refuse it, every source
// whose configuration its recorded state cannot follow
// ([ErrSumsConfigChanged], naming the source and field): the spend
// worker buckets webhook records by the same configuration, so it calls
// this when it starts and refuses to start, rather than count records
// into buckets of a width the runs refuse. table is the ledger table
// that holds each source's state; a source with no state yet has
// nothing to follow.
func CheckSources(ctx context.Context, db ddb.API, table string, sources sums.Sources, now time.Time) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(sources)) {
		st, found, err := readSumsState(ctx, db, table, name)
		switch {
		case err != nil:
			errs = append(errs, err)
		case found:
			errs = append(errs, checkChange(sources[name], st, now))
		}
	}
	return errors.Join(errs...)
}

// checkChange refuses a source whose start, widths or meters moved from
// what its state recorded, naming the field:
//   - a start earlier than the recorded one: webhook records before the
//     recorded start were counted outside buckets, and reading their
//     buckets would count them again;
//   - widths that give another width than the recorded ones anywhere
//     before the end of the last bucket the recorded runs could touch: a
//     width changed without a stated boundary (a plain width that
//     differs), or with one earlier than that end. The bucket key
//     carries no width, so a bucket of the new width would take an old
//     bucket's head and count its hours again beside the old buckets of
//     the same span. A change stated in widths from at or after that end
//     runs normally: each bucket's width is a function of its start;
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
	recorded, ok := recordedWidths(st)
	if !ok {
		return errors.Join(errs...)
	}
	until := ddb.ParseStamp(st.WidthUntil)
	if at, agree := src.WidthsAgree(recorded, src.Start, until); !agree {
		errs = append(errs, fmt.Errorf("%w: %s: widths: the width at %s would be %s, but the source's runs counted buckets of %s there, "+
			"up to %s: a bucket of another width would count their usage again; put the width back, or state the change in widths "+
			"with a from at or after %s, aligned to both widths",
			ErrSumsConfigChanged, src.Name, at.Format(time.RFC3339), src.WidthAt(at), recorded.WidthAt(at),
			until.Format(time.RFC3339), until.Format(time.RFC3339)))
	}
	open := until.Add(src.Settle.D() + max(recorded.Width.D(), src.Width.D()))
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
	return errors.Join(errs...)
}

// recordedWidths is the widths' history the state recorded, as a source
// of those widths; ok is false before any run recorded one.
func recordedWidths(st sumsStateItem) (sums.Source, bool) {
	var out sums.Source
	for _, w := range st.Widths {
		d, err := time.ParseDuration(w.Width)
		if err != nil {
			return sums.Source{}, false
		}
		out.Widths = append(out.Widths, sums.WidthFrom{Width: sums.Duration(d), From: ddb.ParseStamp(w.From)})
	}
	if len(out.Widths) == 0 {
		d, err := time.ParseDuration(st.Width)
		if err != nil {
			return sums.Source{}, false
		}
		out.Widths = []sums.WidthFrom{{Width: sums.Duration(d)}}
	}
	out.Width = out.Widths[len(out.Widths)-1].Width
	return out, true
}

// recordConfig is what a source's state keeps of its configuration for
// [checkChange]: its start, its widths, the end of the last bucket a run
// at now could touch, and each provider meter's name.
func recordConfig(it *sumsStateItem, src sums.Source, now time.Time) {
	_, end := src.Bucket(now)
	it.Start, it.Width, it.WidthUntil = ddb.Stamp(src.Start), src.Width.D().String(), ddb.Stamp(end)
	it.Widths = nil
	for _, w := range src.Widths {
		it.Widths = append(it.Widths, stateWidthItem{Width: w.Width.D().String(), From: ddb.Stamp(w.From)})
	}
	it.Meters = map[string]string{}
	for _, m := range src.Meters {
		it.Meters[m.Identity()] = m.Name
	}
}
