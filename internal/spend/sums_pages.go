package spend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/pager"
)

// ReadFailed is a workload a sums run skipped for a failure of its own
// that is not a refusal ([ReadRefused]): a provider value that would
// carry its total past [MaxTotal], say.
type ReadFailed struct {
	Source, WorkloadID string
	// Kind names the failure (overflow, failed); Cause is the error as
	// it reads for any workload, and Reason the error itself.
	Kind, Cause, Reason string
	At                  time.Time
}

// ReadFailedLine is the page's summary.
func ReadFailedLine(r ReadFailed) string {
	return fmt.Sprintf("sums read failed: source=%s workload=%s kind=%s skipped this run, read again next run; reason: %s",
		r.Source, r.WorkloadID, r.Kind, r.Reason)
}

// PageReadFailed pages the reconciliation owner that a workload's read
// failed, once per source, workload, cause and UTC day. It reports
// whether this call enqueued the page.
func (s *SumsPages) PageReadFailed(ctx context.Context, r ReadFailed) (bool, error) {
	dedup := "sums-failed#" + r.Source + "#" + r.WorkloadID + "#" + causeHash(r.Cause) + "#" + r.At.UTC().Format(time.DateOnly)
	return s.pageOnce(ctx, dedup, r.At, &pager.Payload{Summary: ReadFailedLine(r), Component: r.Source,
		Class: "sums_read_failed", CustomDetails: map[string]any{"source": r.Source, "workload_id": r.WorkloadID,
			"kind": r.Kind, "reason": r.Reason, "owner": s.owner}})
}

// SourceFailing is a sums source most of whose reads in one run failed
// with the same cause (a meter deleted at the provider refuses every
// customer alike): one page for the source stands for every workload's.
type SourceFailing struct {
	Source, Kind, Cause string
	// Reason is the first workload's error; Workloads are the workloads
	// that failed with the cause, of Of the run read.
	Reason    string
	Workloads []string
	Of        int
	At        time.Time
}

// SourceFailingLine is the page's summary.
func SourceFailingLine(f SourceFailing) string {
	first := f.Workloads[:min(len(f.Workloads), 5)]
	return fmt.Sprintf("sums reads failing source-wide: source=%s kind=%s workloads=%d of %d read this run, skipped; cause: %s; first: %s",
		f.Source, f.Kind, len(f.Workloads), f.Of, f.Cause, strings.Join(first, ","))
}

// PageSourceFailing pages the reconciliation owner once per source, cause
// and UTC day that most of the source's reads fail alike. It reports
// whether this call enqueued the page.
func (s *SumsPages) PageSourceFailing(ctx context.Context, f SourceFailing) (bool, error) {
	dedup := "sums-source#" + f.Source + "#" + causeHash(f.Cause) + "#" + f.At.UTC().Format(time.DateOnly)
	return s.pageOnce(ctx, dedup, f.At, &pager.Payload{Summary: SourceFailingLine(f), Component: f.Source,
		Class: "sums_source_failing", CustomDetails: map[string]any{"source": f.Source, "kind": f.Kind, "cause": f.Cause,
			"reason": f.Reason, "workloads": f.Workloads, "of": f.Of, "owner": s.owner}})
}

// SumsStalled is a sums source whose runs stopped at the same workload
// for several intervals, with an error that asking again was meant to
// mend: the workload is skipped from then on, so that the others are read.
type SumsStalled struct {
	Source, WorkloadID string
	// Reason is the latest error; Since the first run that stopped there,
	// Runs how many have.
	Reason string
	Since  time.Time
	Runs   int
	At     time.Time
}

// SumsStalledLine is the page's summary.
func SumsStalledLine(st SumsStalled) string {
	return fmt.Sprintf("sums source stalled: source=%s workload=%s stopped %d runs since %s, now skipped until it reads; error: %s",
		st.Source, st.WorkloadID, st.Runs, st.Since.UTC().Format(time.RFC3339), st.Reason)
}

// PageSumsStalled pages the reconciliation owner that a source stalled
// at a workload, once per source and UTC day: a provider down for every
// workload stalls at one after another, and pages once. It reports
// whether this call enqueued the page.
func (s *SumsPages) PageSumsStalled(ctx context.Context, st SumsStalled) (bool, error) {
	dedup := "sums-stalled#" + st.Source + "#" + st.At.UTC().Format(time.DateOnly)
	return s.pageOnce(ctx, dedup, st.At, &pager.Payload{Summary: SumsStalledLine(st), Component: st.Source,
		Class: "sums_stalled", CustomDetails: map[string]any{"source": st.Source, "workload_id": st.WorkloadID,
			"reason": st.Reason, "since": st.Since.UTC().Format(time.RFC3339), "runs": st.Runs, "owner": s.owner}})
}

// causeHash names a cause in a dedup key, within its length.
func causeHash(cause string) string {
	sum := sha256.Sum256([]byte(cause))
	return hex.EncodeToString(sum[:8])
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
func (s *SumsPages) PageSweepBehind(ctx context.Context, b SweepBehind) (bool, error) {
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
func (s *SumsPages) PageReadRefused(ctx context.Context, r ReadRefused) (bool, error) {
	dedup := "sums-refused#" + r.Source + "#" + r.WorkloadID + "#" + r.At.UTC().Format(time.DateOnly)
	return s.pageOnce(ctx, dedup, r.At, &pager.Payload{Summary: ReadRefusedLine(r), Component: r.Source,
		Class: "sums_read_refused", CustomDetails: map[string]any{"source": r.Source, "workload_id": r.WorkloadID,
			"reason": r.Reason, "owner": s.owner}})
}

// pageOnce enqueues a warning to the reconciliation owner under dedup,
// once: a second call with the same key enqueues nothing and reports
// false.
func (s *core) pageOnce(ctx context.Context, dedup string, at time.Time, p *pager.Payload) (bool, error) {
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
