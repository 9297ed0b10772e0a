package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/sums"
)

// window is what a run reads of a source: buckets of the source's widths
// from recent to until, and days from days to recent (none when days is
// not before recent). since is the settle horizon: no bucket before it
// is observed. sweep is the source's sweep, which picks the slice of the
// days read again at the source's widths ([Sums.readSlice]).
type window struct {
	since, days, recent, until time.Time
	sweep                      int64
}

// windowOf is the source's window at now. The recent part reaches back
// Recent from now, widened to a UTC midnight; the days cover the rest of
// the window from the settle horizon's day. A source whose buckets are
// days over that history, or one whose Recent reaches the horizon, reads
// everything at its widths.
func windowOf(src sums.Source, now time.Time) window {
	since, _ := src.Bucket(now.Add(-src.Settle.D()))
	since = maxTime(since, src.Start)
	_, until := src.Bucket(now)
	w := window{since: since, days: since, recent: since, until: until}
	recent := now.Add(-src.Recent.D()).UTC().Truncate(sums.Day)
	if !recent.After(since) || narrowest(src, since, recent) >= sums.Day {
		return w
	}
	w.days, w.recent = since.Truncate(sums.Day), recent
	return w
}

// narrowest is the narrowest width of the source's buckets in [from, to).
func narrowest(src sums.Source, from, to time.Time) time.Duration {
	n := src.WidthAt(from)
	for _, sp := range src.Spans(from, to) {
		n = min(n, sp.Width)
	}
	return n
}

// readMeter reads one meter of a workload: its settled history by day,
// re-reading at the source's widths each day that differs from the
// ledger, then the recent window at the source's widths.
func (s *Sums) readMeter(ctx context.Context, src sums.Source, m sums.Meter, t target, win window, run *SumsRun) error {
	if win.days.Before(win.recent) {
		if err := s.readHistory(ctx, src, m, t, win, run); err != nil {
			return err
		}
	}
	values, err := s.fetch(ctx, src, m, t.refs, win.recent, win.until, win.since, run)
	if err != nil {
		return err
	}
	return s.observeAll(ctx, src, m, t.id, values, run)
}

// readHistory reads the days of the window in one call per reference,
// and reads again at the source's widths each day whose value differs from
// the sum of the latest provider values the ledger holds for it.
func (s *Sums) readHistory(ctx context.Context, src sums.Source, m sums.Meter, t target, win window, run *SumsRun) error {
	days, err := s.fetchAt(ctx, src, m, t.refs, win.days, win.recent, sums.Day, win.days, run)
	if err != nil || len(days) == 0 {
		return err
	}
	heads, err := s.cfg.Spend.Buckets.BucketsBetween(ctx, t.id, src.Name, win.days, win.recent)
	if err != nil {
		return err
	}
	held := ledgerDays(heads, m.Name)
	reread := map[time.Time]bool{}
	for _, day := range slices.SortedFunc(maps.Keys(days), time.Time.Compare) {
		if !dayDiffers(days[day], held, day, m.Tolerance) {
			continue
		}
		run.Reread++
		reread[day] = true
		values, err := s.fetch(ctx, src, m, t.refs, maxTime(day, win.since), day.Add(sums.Day), win.since, run)
		if err != nil {
			return err
		}
		if err := s.observeAll(ctx, src, m, t.id, values, run); err != nil {
			return err
		}
	}
	return s.readSlice(ctx, src, m, t, win, days, reread, run)
}

// sliceBuckets is how many buckets of the source's narrowest width one
// slice of the history holds at most: within one page of Stripe's summaries (100).
const sliceBuckets = 96

// historySlice is the slice of the history days [win.days, win.recent)
// that a read of workload t re-reads at the source's widths this sweep:
// slices of whole days, at most sliceBuckets buckets (4 days of hours),
// the k-th read by the k-th sweep modulo n slices, so every day of the
// history is read at the width once every n sweeps that read t. A quiet
// workload, read one sweep in QuietEvery, turns its slices by those
// sweeps.
func historySlice(src sums.Source, t target, win window) (from, to time.Time) {
	per := max(1, sliceBuckets*narrowest(src, win.days, win.recent)/sums.Day) * sums.Day
	n := int64((win.recent.Sub(win.days) + per - 1) / per)
	if n == 0 {
		return win.days, win.days
	}
	turn := win.sweep
	if t.tier == TierQuiet {
		turn /= int64(max(src.QuietEvery, 1))
	}
	from = win.days.Add(time.Duration(turn%n) * per)
	return from, minTime(from.Add(per), win.recent)
}

// readSlice reads this sweep's slice of the history at the source's widths
// and observes every bucket of it, so that revisions that cancel out
// within a day (an event cancelled at one hour and reported again at
// another), which leave the day's value as the ledger holds it, are found
// within n sweeps of the workload ([historySlice]). A slice whose days
// all show no usage, or were read at the width this run already, costs no
// call: a revision that empties a day changes the day's value.
func (s *Sums) readSlice(ctx context.Context, src sums.Source, m sums.Meter, t target, win window,
	days map[time.Time]int64, reread map[time.Time]bool, run *SumsRun) error {
	from, to := historySlice(src, t, win)
	used := false
	for day := from; day.Before(to); day = day.Add(sums.Day) {
		used = used || (days[day] > 0 && !reread[day])
	}
	if !used {
		return nil
	}
	values, err := s.fetch(ctx, src, m, t.refs, maxTime(from, win.since), to, win.since, run)
	if err != nil {
		return err
	}
	return s.observeAll(ctx, src, m, t.id, values, run)
}

// ledgerDays sums, per UTC day, the latest provider values of the
// meter's buckets the provider has shown; a day with none is absent.
func ledgerDays(heads []spend.Bucket, meter string) map[time.Time]int64 {
	out := map[time.Time]int64{}
	for _, b := range heads {
		if b.Meter == meter && b.PSeen {
			out[b.Start.UTC().Truncate(sums.Day)] += b.PLatest
		}
	}
	return out
}

// dayDiffers reports whether the provider's value of day must be read
// again bucket by bucket: it is apart from the ledger's sum by more than
// the tolerance, or the ledger has read none of the day's buckets and the
// provider shows usage.
func dayDiffers(value int64, held map[time.Time]int64, day time.Time, tolerance int64) bool {
	sum, ok := held[day]
	if !ok {
		return value > 0
	}
	return abs(value-sum) > tolerance
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// fetch reads the meter's buckets in [from, to) at the source's widths:
// each stretch of one width ([sums.Source.Spans]) at that width, so that
// both sides of a width's boundary are read as the ledger buckets them.
func (s *Sums) fetch(ctx context.Context, src sums.Source, m sums.Meter, refs []string, from, to, since time.Time,
	run *SumsRun) (map[time.Time]int64, error) {
	values := map[time.Time]int64{}
	for _, sp := range src.Spans(from, to) {
		got, err := s.fetchAt(ctx, src, m, refs, sp.Start, sp.End, sp.Width, since, run)
		if err != nil {
			return nil, err
		}
		maps.Copy(values, got)
	}
	return values, nil
}

// fetchAt reads the meter's buckets of width in [from, to) for every
// reference, one call each, and sums them per bucket, leaving out those
// that start before since.
func (s *Sums) fetchAt(ctx context.Context, src sums.Source, m sums.Meter, refs []string, from, to time.Time,
	width time.Duration, since time.Time, run *SumsRun) (map[time.Time]int64, error) {
	values := map[time.Time]int64{}
	if !from.Before(to) {
		return values, nil
	}
	for _, ref := range refs {
		got, err := s.cfg.Readers[src.Name].Sums(ctx, sums.Query{Source: src, Meter: m, Ref: ref,
			Start: from, End: to, Width: width})
		run.Calls++
		if err != nil {
			return nil, err
		}
		if err := addValues(values, got, m, since); err != nil {
			return nil, fmt.Errorf("meter %s of %s: %w", m.Name, ref, err)
		}
	}
	return values, nil
}

// readUnseen reads from the provider, once, just before they settle, the
// buckets of bs the provider has never shown. A run reads only the
// buckets of its window, back to the settle horizon: a bucket first
// touched after the last run that had it in its window (a webhook within
// its mapping's max_age but long past the source's settle horizon) was
// never read, and settling it unread would page the provider as 0. Each
// meter's unseen buckets of one width are read in one call per reference,
// and only they are observed. A bucket the provider still does not show
// settles as it stands, and a read that fails leaves every bucket of the
// workload open for the next run.
func (s *Sums) readUnseen(ctx context.Context, src sums.Source, t target, bs []spend.Bucket, run *SumsRun) error {
	type group struct {
		meter string
		width time.Duration
	}
	unseen := map[group]map[time.Time]bool{}
	for _, b := range bs {
		if b.PSeen || b.Source != src.Name {
			continue
		}
		g := group{b.Meter, src.WidthAt(b.Start)}
		if unseen[g] == nil {
			unseen[g] = map[time.Time]bool{}
		}
		unseen[g][b.Start.UTC()] = true
	}
	for _, g := range slices.SortedFunc(maps.Keys(unseen), func(a, b group) int {
		return cmp.Or(cmp.Compare(a.meter, b.meter), cmp.Compare(a.width, b.width))
	}) {
		m, ok := src.Meters[g.meter]
		if !ok || g.width <= 0 {
			continue
		}
		starts := slices.SortedFunc(maps.Keys(unseen[g]), time.Time.Compare)
		from, to := starts[0], starts[len(starts)-1].Add(g.width)
		values, err := s.fetchAt(ctx, src, m, t.refs, from, to, g.width, from, run)
		if err != nil {
			return err
		}
		maps.DeleteFunc(values, func(start time.Time, _ int64) bool { return !unseen[g][start] })
		if err := s.observeAll(ctx, src, m, t.id, values, run); err != nil {
			return err
		}
	}
	return nil
}
