package reconcile

import (
	"cmp"
	"context"
	"hash/fnv"
	"slices"
	"time"

	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/sums"
)

// Metrics and bounds of the sweep of a sums source.
const (
	// MetricSumsSweepBehind counts the runs that ran out of budget before
	// their sweep was done.
	MetricSumsSweepBehind = "SumsSweepBehind"
	// MetricSumsReadRefused counts the workloads whose reads the provider
	// refused ([sums.ErrRefused]), skipped for the run.
	MetricSumsReadRefused = "SumsReadRefused"
	// MetricSumsReadFailed counts the workloads skipped for a failure of
	// their own that is no refusal (an overflowing value, say).
	MetricSumsReadFailed = "SumsReadFailed"
	// MetricSumsStalled counts the workloads skipped because the source's
	// runs stopped at them stallAfter times.
	MetricSumsStalled = "SumsStalled"
	// behindAfter is how many intervals a sweep may take before it is
	// paged (once per source and UTC day).
	behindAfter = 3
	// DefaultSumsMargin is what a run leaves of its invocation's deadline
	// for its run record and pages.
	DefaultSumsMargin = 15 * time.Second
)

// classifier gives a workload its risk tier; [*Reconciler] is one. The
// sums reconciler reads by the export reconciler's tiers.
type classifier interface {
	Classify(w spend.Workload, now time.Time) (Tier, time.Duration, string)
}

// defaultTiers classifies by the export reconciler's default tiers.
func defaultTiers() classifier {
	var c Config
	c.defaults()
	return &Reconciler{cfg: c}
}

// TierShare is how many of a tier's workloads a run covered, and read.
type TierShare struct{ Of, Read int }

// sweepState is where a source's sweep stands: its number, the last
// workload it read (empty before the first), when it started and the runs
// it has taken; and where its runs stopped: the workload, the error, the
// first such run and how many did. stoppedAt and stopErr are this run's.
type sweepState struct {
	sweep   int64
	resume  string
	started time.Time
	runs    int

	stallAt, stallErr string
	stallSince        time.Time
	stallRuns         int
	stoppedAt         string
	stopErr           string
	stallSkipped      bool
}

// plan is a run's order of reading: first the workloads read on every
// run (alerted or near their cap), then the rest of the sweep from where
// the last run stopped.
type plan struct{ first, sweep []target }

// planRun sorts the targets into the run's plan. The sweep holds the
// active workloads and the quiet ones of this sweep's slice, after the
// resume point, in ID order; it is empty when the source is not due.
func (s *Sums) planRun(src sums.Source, targets []target, asked map[string]time.Time, st sweepState, due bool, run *SumsRun) plan {
	var p plan
	for _, t := range targets {
		tier, _, _ := s.tiers.Classify(t.w, run.StartedAt)
		t.tier = tier
		share := run.Tiers[string(tier)]
		share.Of++
		run.Tiers[string(tier)] = share
		_, alerted := asked[t.id]
		switch {
		case alerted || tier == TierNearCap:
			p.first = append(p.first, t)
		case due && t.id > st.resume && (tier != TierQuiet || quietSlice(t.id, src.QuietEvery) == st.sweep%int64(src.QuietEvery)):
			p.sweep = append(p.sweep, t)
		}
	}
	return p
}

// quietSlice is the slice of the rotation a quiet workload is read in:
// a hash of its ID, so that it stays as workloads come and go.
func quietSlice(id string, n int) int64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int64(h.Sum32() % uint32(max(n, 1)))
}

// budget is when a run stops reading: its source's Budget after its
// start, or the invocation's deadline less the margin, whichever is first.
func (s *Sums) budget(ctx context.Context, src sums.Source, start time.Time) time.Time {
	stop := start.Add(src.Budget.D())
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl) - cmp.Or(s.cfg.Margin, DefaultSumsMargin)
		stop = minTime(stop, s.now().Add(left))
	}
	return stop
}

// readAll reads the plan's workloads in order until the budget runs out,
// and returns how many it read. One workload never holds back the rest:
// a failure of its own (a refusal, an overflowing value, a meter's
// buckets it cannot settle) is recorded and skipped, and the run goes on.
// A failure that asking again may mend (a provider's 5xx, the ledger
// contended or down, the deadline) stops the run there instead, keeping
// what it read; once the source's runs have stopped at the same workload
// stallAfter times, that workload is paged as a stall and skipped. When
// advance is set, every workload read or skipped moves the resume point.
func (s *Sums) readAll(ctx context.Context, src sums.Source, ts []target, asked map[string]time.Time, win window,
	stop time.Time, st *sweepState, advance bool, run *SumsRun) (int, error) {
	for i, t := range ts {
		if !s.now().Before(stop) {
			return i, nil
		}
		err := s.readOne(ctx, src, t, asked, win, run)
		switch {
		case err == nil:
			if t.id == st.stallAt {
				st.stallAt, st.stallRuns = "", 0
			}
		case !stops(ctx, err):
			s.failed(ctx, src, t, err, run)
		case st.stalled(t.id):
			// A workload that takes the run's whole deadline (a read that
			// never ends) is skipped too: the next run goes on after it.
			if perr := s.stalled(ctx, src, t, err, st, run); perr != nil || ctx.Err() != nil {
				if advance {
					st.resume = t.id
				}
				return i + 1, cmp.Or(perr, err)
			}
		default:
			st.stoppedAt, st.stopErr = t.id, err.Error()
			return i, err
		}
		if advance {
			st.resume = t.id
		}
	}
	return len(ts), nil
}

// readOne reads and settles one workload, and clears its alert marker.
func (s *Sums) readOne(ctx context.Context, src sums.Source, t target, asked map[string]time.Time, win window, run *SumsRun) error {
	if err := s.readWorkload(ctx, src, t, win, run); err != nil {
		return err
	}
	share := run.Tiers[string(t.tier)]
	share.Read++
	run.Tiers[string(t.tier)] = share
	if err := s.settle(ctx, src, t, settledBy(src, run.StartedAt), run); err != nil {
		return err
	}
	if at, ok := asked[t.id]; ok {
		return s.cfg.Spend.Buckets.ClearDue(ctx, src.Name, t.id, at)
	}
	return nil
}

// settledBy is the latest start of a bucket that has passed its settle
// horizon at now: it ends at or before now less Settle. Buckets tile the
// time line whatever their widths, so it is the start of the bucket
// before the one that holds now less Settle.
func settledBy(src sums.Source, now time.Time) time.Time {
	holding, _ := src.Bucket(now.Add(-src.Settle.D()))
	prev, _ := src.Bucket(holding.Add(-time.Second))
	return prev
}

// behind records a run that stopped short of its sweep's end, and pages
// once per source and day when a sweep that had to resume has taken more
// than behindAfter intervals. A sweep done in its first run is not
// behind, however long that run took.
func (s *Sums) behind(ctx context.Context, src sums.Source, st sweepState, done bool, run *SumsRun) error {
	if !done {
		run.Behind = true
		s.count(MetricSumsSweepBehind, 1, src.Name)
		s.log.WarnContext(ctx, "sums sweep behind", "source", src.Name, "run", run.RunID, "sweep", st.sweep,
			"resume_after", st.resume, "runs", st.runs)
	}
	limit := behindAfter * src.Interval.D()
	at := s.now()
	if (done && st.runs == 1) || at.Sub(st.started) <= limit {
		return nil
	}
	b := spend.SweepBehind{Source: src.Name, Sweep: st.sweep, Started: st.started, Runs: st.runs, Limit: limit,
		Resume: st.resume, At: at}
	paged, err := s.cfg.Spend.SumsPages.PageSweepBehind(ctx, b)
	if paged {
		run.Decisions = append(run.Decisions, "paged "+spend.SweepBehindLine(b))
	}
	return err
}

// sortTargets orders targets by workload ID, the sweep's order.
func sortTargets(ts []target) {
	slices.SortFunc(ts, func(a, b target) int { return cmp.Compare(a.id, b.id) })
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
