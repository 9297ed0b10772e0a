package reconcile

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/spend"
)

// Record classes.
const (
	ClassMissed       = "missed"
	ClassMatched      = "matched"
	ClassRepeat       = "repeat"
	ClassDisagreement = "disagreement"
	ClassDeferred     = "deferred"
)

// fold folds export pages into the ledger and counts what it saw, per
// workload. It is safe for concurrent use.
type fold struct {
	r   *Reconciler
	now time.Time

	mu        sync.Mutex
	counts    map[string]*Counts // by workload ID; "" for unattributed
	decisions []spend.Decision
	latency   []time.Duration
}

func newFold(r *Reconciler, now time.Time) *fold {
	return &fold{r: r, now: now, counts: map[string]*Counts{}}
}

// page returns the callback of [Export.ListUsage]: it folds one page with
// up to Concurrency records at once and fails on the first error, so the
// run stops without advancing the cursor.
func (f *fold) page(ctx context.Context) func([]provider.UsageRecord) error {
	return func(recs []provider.UsageRecord) error {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		sem := make(chan struct{}, f.r.cfg.Concurrency)
		var wg sync.WaitGroup
		for _, rec := range recs {
			if ctx.Err() != nil {
				break
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				if err := f.one(ctx, rec); err != nil {
					cancel(err)
				}
			}()
		}
		wg.Wait()
		if err := context.Cause(ctx); err != nil {
			return err
		}
		return nil
	}
}

// one folds one record through the same Apply as the webhook path and
// classifies it.
func (f *fold) one(ctx context.Context, rec provider.UsageRecord) error {
	u := spend.Usage{RecordID: rec.RecordID, WorkloadRef: rec.WorkloadRef, Units: rec.Units,
		OccurredAt: rec.OccurredAt, ObservedAt: f.now, Path: spend.PathPoll}
	res, err := f.r.cfg.Ledger.Apply(ctx, u)
	if err != nil {
		return fmt.Errorf("%w: record %s: %w", ErrFold, rec.RecordID, err)
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
		if _, err := f.r.cfg.Ledger.Confirm(ctx, rec.RecordID); err != nil {
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
	out := make([]string, 0, len(f.decisions))
	for _, d := range f.decisions {
		out = append(out, d.Line)
	}
	return out
}
