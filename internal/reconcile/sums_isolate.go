package reconcile

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/smithy-go"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/sums"
)

// Kinds of a workload's failure in a sums run ([WorkloadFailure.Kind]).
const (
	// FailRefused is a read the provider refused ([sums.ErrRefused]).
	FailRefused = "refused"
	// FailOverflow is a provider value that would carry the workload's
	// total past [spend.MaxTotal] ([spend.ErrTotalOverflow]).
	FailOverflow = "overflow"
	// FailStalled is a failure that asking again may mend (a provider's
	// 5xx, the ledger contended) which stopped the source's runs at the
	// workload stallAfter times: the workload is skipped from then on.
	FailStalled = "stalled"
	// FailOther is any other failure of the workload's own.
	FailOther = "failed"
)

// Bounds of a sums run's failures.
const (
	// stallAfter is how many due runs in a row, an interval apart, may
	// stop at the same workload before it is paged as a stall and
	// skipped.
	stallAfter = 3
	// sourceWideMin is the fewest workloads failing alike that page once
	// for the source, when they are also most of those the run read.
	sourceWideMin = 3
)

// WorkloadFailure is one workload a sums run skipped, and why.
type WorkloadFailure struct {
	Workload string
	Kind     string
	// Cause is the error as it reads for any workload (references, times
	// and request IDs left out): the failures of a run are paged once per
	// cause. Error is the error itself.
	Cause, Error string
}

// stops reports whether err stops the run where it is, rather than
// skipping the workload: a failure that asking again may mend, and that
// would likely fail the next workload too (the provider's read failed
// after its retries, the ledger is contended or unreachable, the run's
// deadline).
func stops(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	if errors.Is(err, sums.ErrRefused) {
		return false
	}
	var op *smithy.OperationError
	return errors.Is(err, sums.ErrRead) || errors.Is(err, ddb.ErrContended) || errors.Is(err, spend.ErrBucketContended) ||
		errors.As(err, &op)
}

// stalled reports whether the source's runs have stopped at workload id
// often enough that this one, failing there again, skips it.
func (st *sweepState) stalled(id string) bool {
	return st.stallAt == id && st.stallRuns+1 >= stallAfter
}

// noteStall counts this due run in the stall record: a run that stopped
// at the workload of the record adds to it, one that stopped elsewhere
// starts a new one, and one that skipped the stalled workload keeps it.
func (st *sweepState) noteStall(now time.Time) {
	switch {
	case st.stoppedAt != "" && st.stoppedAt == st.stallAt:
		st.stallRuns++
		st.stallErr = st.stopErr
	case st.stoppedAt != "":
		st.stallAt, st.stallErr, st.stallSince, st.stallRuns = st.stoppedAt, st.stopErr, now, 1
	case st.stallSkipped:
		st.stallRuns++
	}
}

var (
	bracketedID = regexp.MustCompile(`\s*\[[^\]\s]*\]`)
	stampRE     = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z`)
)

// failureOf is the record of t's failure err: its kind, and its cause as
// it would read for any workload.
func failureOf(t target, err error) WorkloadFailure {
	f := WorkloadFailure{Workload: t.id, Kind: FailOther, Error: err.Error()}
	switch {
	case errors.Is(err, sums.ErrRefused):
		f.Kind = FailRefused
	case errors.Is(err, spend.ErrTotalOverflow):
		f.Kind, f.Cause = FailOverflow, "a provider value would carry the workload's total past its maximum"
		return f
	}
	msg := f.Error
	for _, r := range t.refs {
		msg = strings.ReplaceAll(msg, r, "<ref>")
	}
	msg = strings.ReplaceAll(msg, t.id, "<workload>")
	f.Cause = stampRE.ReplaceAllString(bracketedID.ReplaceAllString(msg, ""), "<time>")
	return f
}

// failed records a workload skipped for a failure of its own: counted
// and logged now, and paged at the run's end ([Sums.pageFailures]).
func (s *Sums) failed(ctx context.Context, src sums.Source, t target, err error, run *SumsRun) {
	f := failureOf(t, err)
	run.Failed = append(run.Failed, f)
	if f.Kind == FailRefused {
		run.Refused = append(run.Refused, t.id)
		s.count(MetricSumsReadRefused, 1, src.Name)
	} else {
		s.count(MetricSumsReadFailed, 1, src.Name)
	}
	s.log.ErrorContext(ctx, "sums read failed: workload skipped this run", "source", src.Name, "workload", t.id,
		"kind", f.Kind, "err", err)
}

// stalled records and pages a workload the source's runs stopped at
// stallAfter times, and skips it.
func (s *Sums) stalled(ctx context.Context, src sums.Source, t target, err error, st *sweepState, run *SumsRun) error {
	f := failureOf(t, err)
	f.Kind = FailStalled
	run.Failed = append(run.Failed, f)
	st.stallSkipped = true
	s.count(MetricSumsStalled, 1, src.Name)
	s.log.ErrorContext(ctx, "sums source stalled at a workload: skipped", "source", src.Name, "workload", t.id,
		"runs", st.stallRuns+1, "err", err)
	b := spend.SumsStalled{Source: src.Name, WorkloadID: t.id, Reason: err.Error(),
		Since: cmp.Or(st.stallSince, s.now()), Runs: st.stallRuns + 1, At: s.now()}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	paged, perr := s.cfg.Spend.SumsPages.PageSumsStalled(pctx, b)
	if paged {
		run.Decisions = append(run.Decisions, "paged "+spend.SumsStalledLine(b))
	}
	return perr
}

// pageFailures pages the run's skipped workloads, once per cause: a
// cause that most of the workloads the run read failed with (at least
// sourceWideMin) is one page for the source, with their count; any other
// is one page per workload. Stalls were paged when they were skipped.
func (s *Sums) pageFailures(ctx context.Context, src sums.Source, run *SumsRun) error {
	byCause := map[string][]WorkloadFailure{}
	for _, f := range run.Failed {
		if f.Kind != FailStalled {
			byCause[f.Kind+"\x00"+f.Cause] = append(byCause[f.Kind+"\x00"+f.Cause], f)
		}
	}
	at := s.now()
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(byCause)) {
		fs := byCause[key]
		if len(fs) >= sourceWideMin && 2*len(fs) > run.Workloads {
			sf := spend.SourceFailing{Source: src.Name, Kind: fs[0].Kind, Cause: fs[0].Cause, Reason: fs[0].Error,
				Of: run.Workloads, At: at}
			for _, f := range fs {
				sf.Workloads = append(sf.Workloads, f.Workload)
			}
			paged, err := s.cfg.Spend.SumsPages.PageSourceFailing(ctx, sf)
			if paged {
				run.Decisions = append(run.Decisions, "paged "+spend.SourceFailingLine(sf))
			}
			errs = append(errs, err)
			continue
		}
		for _, f := range fs {
			var err error
			if f.Kind == FailRefused {
				_, err = s.cfg.Spend.SumsPages.PageReadRefused(ctx, spend.ReadRefused{Source: src.Name, WorkloadID: f.Workload,
					Reason: f.Error, At: at})
			} else {
				_, err = s.cfg.Spend.SumsPages.PageReadFailed(ctx, spend.ReadFailed{Source: src.Name, WorkloadID: f.Workload,
					Kind: f.Kind, Cause: f.Cause, Reason: f.Error, At: at})
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
