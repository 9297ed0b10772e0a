package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"

	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/pkg/provider"
)

// Record classes.
const (
	ClassMissed       = "missed"
	ClassMatched      = "matched"
	ClassRepeat       = "repeat"
	ClassDisagreement = "disagreement"
	ClassDeferred     = "deferred"
	ClassQuarantined  = "quarantined"
)

// fold folds export pages into the ledger and counts what it saw, per
// workload. It is safe for concurrent use.
type fold struct {
	r   *Reconciler
	now time.Time

	mu        sync.Mutex
	counts    map[string]*Counts // by workload ID; "" for unattributed
	decisions []spend.Decision
	notes     []string // quarantine lines, in the run's decisions
	latency   []time.Duration
}

func newFold(r *Reconciler, now time.Time) *fold {
	return &fold{r: r, now: now, counts: map[string]*Counts{}}
}

// lanes folds the records of a streamed export with up to Concurrency
// records in flight. A record goes to the lane of its workload reference,
// and each lane folds its records one at a time in export order, so the
// records of one workload reach the ledger in the order the provider
// published them (the record that crosses a cap is the one the export
// says crossed it) and never contend for the workload's item, while
// different workloads fold in parallel. A reference seen for the first
// time goes to the lane with the fewest references, so that no lane holds
// more workloads than it must (a full lane holds up the page). The page
// callback resolves the page's references in one batch read and hands the
// records to lanes: it returns as soon as they are queued, so the next
// page is fetched while this one folds, and at most lanes*laneBuffer
// records are held at once.
type lanes struct {
	f      *fold
	ctx    context.Context
	cancel context.CancelCauseFunc
	in     []chan resolved
	wg     sync.WaitGroup

	// lane and refs assign references to lanes; only page uses them, and
	// the export calls page from one goroutine.
	lane map[string]int
	refs []int // references per lane
}

// resolved is a record with the workload ID its reference resolved to
// ("" for none).
type resolved struct {
	rec provider.UsageRecord
	id  string
}

// laneBuffer is how many records may wait in each lane.
const laneBuffer = 64

// start starts Concurrency lanes. The caller pages the export with the
// lanes' context (cancelled when a fold fails) and l.page, then calls
// l.wait.
func (f *fold) start(ctx context.Context) *lanes {
	n := f.r.cfg.Concurrency
	l := &lanes{f: f, in: make([]chan resolved, n), lane: map[string]int{}, refs: make([]int, n)}
	l.ctx, l.cancel = context.WithCancelCause(ctx)
	for i := range l.in {
		l.in[i] = make(chan resolved, laneBuffer)
		l.wg.Go(func() {
			for r := range l.in[i] {
				rs := gather(l.in[i], r)
				if l.ctx.Err() != nil {
					continue // drain: the run already failed
				}
				if err := f.batch(l.ctx, rs); err != nil {
					l.cancel(err)
				}
			}
		})
	}
	return l
}

// foldBatch is how many waiting records of a lane one ledger call folds:
// a lane's references share its batches, and the ledger writes each
// workload of a batch in one transaction ([spend.MaxBatchRecords] records
// at most), so a busy workload's item takes one write per batch.
const foldBatch = 2 * spend.MaxBatchRecords

// gather returns first and the records already waiting in ch, up to
// foldBatch, without waiting for more.
func gather(ch <-chan resolved, first resolved) []resolved {
	rs := []resolved{first}
	for len(rs) < foldBatch {
		select {
		case r, ok := <-ch:
			if !ok {
				return rs
			}
			rs = append(rs, r)
		default:
			return rs
		}
	}
	return rs
}

// page is the callback of [Export.ListUsage].
func (l *lanes) page(recs []provider.UsageRecord) error {
	refs := make([]string, len(recs))
	for i, rec := range recs {
		refs[i] = rec.WorkloadRef
	}
	ids, err := l.f.r.cfg.Spend.Workloads.ResolveRefs(l.ctx, refs)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrFold, err)
		l.cancel(err)
		return err
	}
	for _, rec := range recs {
		select {
		case l.in[l.laneOf(rec.WorkloadRef)] <- resolved{rec, ids[rec.WorkloadRef]}:
		case <-l.ctx.Done():
			return context.Cause(l.ctx)
		}
	}
	return nil
}

// laneOf returns the lane of a reference, assigning a new one to the lane
// with the fewest references.
func (l *lanes) laneOf(ref string) int {
	if i, ok := l.lane[ref]; ok {
		return i
	}
	i := 0
	for j, n := range l.refs {
		if n < l.refs[i] {
			i = j
		}
	}
	l.lane[ref] = i
	l.refs[i]++
	return i
}

// wait closes the lanes, waits until every queued record is folded and
// returns the first fold error.
func (l *lanes) wait() error {
	for _, ch := range l.in {
		close(ch)
	}
	l.wg.Wait()
	err := context.Cause(l.ctx)
	l.cancel(nil)
	return err
}

// A record's ledger write that failed for a reason a retry can cure (a
// throttle or a 5xx the SDK's own retries did not outlast, a transaction
// still contended) is retried within the run, foldAttempts times in all
// with backoff from foldBaseWait: a failed record fails the whole run,
// and the next run folds the whole overlap again, so under a lasting
// throttle the cursor would never move. The ledger's writes are keyed by
// the record, so a retry has one effect.
const (
	foldAttempts = 5
	foldBaseWait = 50 * time.Millisecond
)

// apply is ApplyResolved, retried as [foldAttempts] says: for a record
// whose batch left it with an error a retry can cure.
func (f *fold) apply(ctx context.Context, u spend.Usage, id string) (spend.Result, error) {
	var res spend.Result
	err := retrying(ctx, func() error {
		var err error
		res, err = f.r.cfg.Spend.Ledger.ApplyResolved(ctx, u, id)
		return err
	})
	return res, err
}

// retrying calls write until it succeeds, fails for good, or has been
// tried foldAttempts times.
func retrying(ctx context.Context, write func() error) error {
	wait := foldBaseWait
	for attempt := 1; ; attempt++ {
		err := write()
		if err == nil || attempt == foldAttempts || !transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// transient reports whether err is one a later try can cure: what the
// SDK itself retries (throttles, 5xx, lost connections) once it gave up,
// and a transaction still contended.
func transient(err error) bool {
	return errors.Is(err, spend.ErrContended) || errors.Is(err, spend.ErrBatchContended) ||
		retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// batch folds records through the same ledger as the webhook path, in one
// batch (their references resolved already), and classifies each. A record
// the batch left with a transient error is retried alone ([fold.apply]). A
// record outside the schema, or one the ledger refuses, is quarantined and
// counted; it does not fail the run.
func (f *fold) batch(ctx context.Context, rs []resolved) error {
	var us []spend.Usage
	var recs []provider.UsageRecord
	ids := map[string]string{}
	for _, r := range rs {
		u := usageOf(r.rec, f.now)
		if err := f.r.schemaProblem(r.rec, f.now); err != nil {
			if err := f.quarantine(ctx, u, err); err != nil {
				return err
			}
			continue
		}
		us, recs = append(us, u), append(recs, r.rec)
		ids[r.rec.WorkloadRef] = r.id
	}
	if len(us) == 0 {
		return nil
	}
	res, errs := f.r.cfg.Spend.Ledger.ApplyBatchResolved(ctx, us, ids)
	for i := range us {
		if errs[i] != nil && transient(errs[i]) {
			res[i], errs[i] = f.apply(ctx, us[i], ids[us[i].WorkloadRef])
		}
		if err := f.classify(ctx, recs[i], us[i], res[i], errs[i]); err != nil {
			return err
		}
	}
	return nil
}

// usageOf is an export record as the ledger takes it from the poll, with
// the usage source and meter the export's adapter read (none for
// GET /v1/usage): the ledger counts it in the bucket of a provider of sums
// that covers them, as it counts the webhook for the same usage.
func usageOf(rec provider.UsageRecord, now time.Time) spend.Usage {
	return spend.Usage{RecordID: rec.RecordID, WorkloadRef: rec.WorkloadRef, Units: rec.Units,
		OccurredAt: rec.OccurredAt, ObservedAt: now, Path: spend.PathPoll,
		Source: rec.Source, Meter: rec.Meter, Unit: rec.Unit}
}

// classify counts one folded record by its outcome, confirms the webhook
// entry it matched, and quarantines a record the ledger refused.
func (f *fold) classify(ctx context.Context, rec provider.UsageRecord, u spend.Usage, res spend.Result, err error) error {
	if spend.IsRefused(err) {
		return f.quarantine(ctx, u, err)
	}
	if err != nil {
		return fmt.Errorf("reconcile: %w: record %s: %w", ErrFold, rec.RecordID, err)
	}
	class := ClassMissed
	switch res.Outcome {
	case spend.Applied:
		f.mu.Lock()
		f.latency = append(f.latency, f.now.Sub(rec.OccurredAt))
		f.decisions = append(f.decisions, res.Decisions...)
		f.mu.Unlock()
	case spend.Duplicate:
		class = ClassRepeat
		if res.Entry != nil && slices.Contains(res.Entry.Paths, spend.PathWebhook) {
			class = ClassMatched
		}
	case spend.Disagreement:
		class = ClassDisagreement
	case spend.Deferred:
		class = ClassDeferred
	}
	if res.Entry != nil && slices.Contains(res.Entry.Paths, spend.PathWebhook) {
		if err := retrying(ctx, func() error { _, err := f.r.cfg.Spend.Recon.Confirm(ctx, rec.RecordID); return err }); err != nil {
			return fmt.Errorf("%w: %w", ErrFold, err)
		}
	}
	f.count(res.WorkloadID, func(c *Counts) {
		c.Records++
		switch class {
		case ClassMissed:
			c.Missed++
		case ClassMatched:
			c.Matched++
		case ClassRepeat:
			c.Repeats++
		case ClassDisagreement:
			c.Disagreements++
		case ClassDeferred:
			c.Deferred++
		}
	})
	return nil
}

// schemaProblem applies the door's usage schema and time rules to an
// export record: a record the receiver would refuse (Invalid, from the
// export's strict decoding) or whose time lies outside the export
// source's time rule ([Config.ExportMaxAge], [Config.ExportMaxSkew]) of
// its publication is quarantined with the field named, never counted.
func (r *Reconciler) schemaProblem(rec provider.UsageRecord, now time.Time) error {
	if rec.Invalid != nil {
		return rec.Invalid
	}
	return provider.CheckExportRecordWithin(rec, now, r.cfg.ExportMaxAge, r.cfg.ExportMaxSkew)
}

func (f *fold) count(workloadID string, fn func(*Counts)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.counts[workloadID]
	if c == nil {
		c = &Counts{}
		f.counts[workloadID] = c
	}
	fn(c)
}

// of returns a workload's counts.
func (f *fold) of(workloadID string) Counts {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.counts[workloadID]; c != nil {
		return *c
	}
	return Counts{}
}

// total returns the counts of every workload together.
func (f *fold) total() Counts {
	f.mu.Lock()
	defer f.mu.Unlock()
	var t Counts
	for _, c := range f.counts {
		t.add(*c)
	}
	return t
}

func (f *fold) latencies() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.latency)
}

func (f *fold) decisionsOf(workloadID string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, d := range f.decisions {
		if d.WorkloadID == workloadID {
			out = append(out, d.Line)
		}
	}
	return out
}

func (f *fold) decisionLines() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.decisions)+len(f.notes))
	for _, d := range f.decisions {
		out = append(out, d.Line)
	}
	return append(out, f.notes...)
}

// quarantine stores a refused record with its reason and pages the
// reconciliation owner once ([spend.Ledger.Quarantine]).
func (f *fold) quarantine(ctx context.Context, u spend.Usage, cause error) error {
	q, first, err := f.r.cfg.Spend.Ledger.Quarantine(ctx, u, cause.Error())
	if err != nil {
		return fmt.Errorf("reconcile: %w: quarantine record %s: %w", ErrFold, u.RecordID, err)
	}
	f.r.log.WarnContext(ctx, "reconcile record quarantined", "record", u.RecordID, "ref", u.WorkloadRef,
		"reason", q.Reason, "first", first)
	f.mu.Lock()
	if first {
		f.notes = append(f.notes, fmt.Sprintf("quarantine record=%s ref=%s units=%d paged=%s",
			u.RecordID, u.WorkloadRef, u.Units, q.DedupKey))
	}
	f.mu.Unlock()
	f.count("", func(c *Counts) { c.Records++; c.Quarantined++ })
	return nil
}
