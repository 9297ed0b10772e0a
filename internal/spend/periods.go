package spend

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hookline/hookline/internal/period"
)

// BoundaryPolicy is what happens, at a period's boundary, to a workload
// its cap paused in the period before.
type BoundaryPolicy string

// Boundary policies. [AtBoundaryResume] is the default; docs/design.md
// says why.
const (
	// AtBoundaryResume makes a paused workload active again at the new
	// period's start, with a recorded decision: its cap is per period and
	// the new period's total is zero, so nothing it protects is at risk.
	AtBoundaryResume BoundaryPolicy = "resume"
	// AtBoundaryStay keeps a paused workload paused across the boundary,
	// with a recorded decision, until an operator resumes it: for teams
	// that want a person to look at why it spent before it spends again.
	AtBoundaryStay BoundaryPolicy = "stay"
)

// ParseBoundaryPolicy reads --at-boundary: "resume", "stay", or empty
// for the default (resume).
func ParseBoundaryPolicy(s string) (BoundaryPolicy, error) {
	switch BoundaryPolicy(s) {
	case "", AtBoundaryResume:
		return AtBoundaryResume, nil
	case AtBoundaryStay:
		return AtBoundaryStay, nil
	}
	return "", fmt.Errorf("%w: at_boundary %q is not resume or stay", ErrInvalidWorkload, s)
}

// Periods is a workload's billing period: the recurrence its cap resets
// on, the grace from a period's end to its close, and what a boundary
// does to a paused workload. The zero value is a lifetime total (period
// none), which is what workloads of builds before periods read as.
type Periods struct {
	// Recurrence is the period's interval, anchor and zone; [period.None]
	// is the lifetime total.
	Recurrence period.Recurrence
	// Grace is the time from a period's end to its close ([period.Close]),
	// the provider's invoice finalisation delay.
	Grace time.Duration
	// AtBoundary is the boundary policy; empty reads as resume.
	AtBoundary BoundaryPolicy
	// Pending is a change of the recurrence that takes effect at the
	// current period's end ([Caps.SetPeriod]); nil when none is pending.
	Pending *PeriodChange
	// Since is when Recurrence took effect (zero: from the workload's
	// start), and Was the recurrence before it, by which records dated
	// before Since count.
	Since time.Time
	Was   *period.Recurrence
}

// ParsePeriods reads the CLI's period flags (--period, --anchor,
// --time-zone, --grace, --at-boundary), reporting every bad field at
// once.
func ParsePeriods(c period.Config, grace, atBoundary string) (Periods, error) {
	rec, rerr := c.Recurrence()
	g, gerr := period.ParseGrace(grace)
	policy, perr := ParseBoundaryPolicy(atBoundary)
	if err := errors.Join(rerr, gerr, perr); err != nil {
		return Periods{}, fmt.Errorf("%w: %w", ErrInvalidWorkload, err)
	}
	p := Periods{Recurrence: rec, Grace: g, AtBoundary: policy}
	return p, p.validate()
}

// Lifetime reports whether p is the lifetime total of the earlier build.
func (p Periods) Lifetime() bool { return p.Recurrence.Interval == period.None }

func (p Periods) validate() error {
	if err := p.Recurrence.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidWorkload, err)
	}
	if p.Grace < 0 || p.Grace > period.MaxGrace {
		return fmt.Errorf("%w: grace %s is outside 0 to %s", ErrInvalidWorkload, p.Grace, period.MaxGrace)
	}
	if _, err := ParseBoundaryPolicy(string(p.AtBoundary)); err != nil {
		return err
	}
	if p.Lifetime() && (p.Grace != 0 || p.AtBoundary == AtBoundaryStay) {
		return fmt.Errorf("%w: grace and at_boundary need a period", ErrInvalidWorkload)
	}
	return nil
}

// policy is p's boundary policy, the default for none.
func (p Periods) policy() BoundaryPolicy {
	if p.AtBoundary == "" {
		return AtBoundaryResume
	}
	return p.AtBoundary
}

// At is the period of p that holds t ([period.Lifetime] for none), by
// the recurrence in force at t: Was before Since, Pending from its From,
// else Recurrence. The first period after a change starts at the change
// (the end of the period before it) and ends at the new recurrence's
// next boundary; the periods after it are whole.
func (p Periods) At(t time.Time) (period.Period, error) {
	rec, from := p.Recurrence, p.Since
	switch {
	case p.Pending != nil && !t.Before(p.Pending.From):
		rec, from = p.Pending.Recurrence, p.Pending.From
	case p.Was != nil && t.Before(p.Since):
		rec, from = *p.Was, time.Time{}
	}
	q, err := rec.PeriodAt(t)
	if err != nil {
		return period.Period{}, fmt.Errorf("spend: period at %s: %w", t.Format(time.RFC3339), err)
	}
	if q.Start.Before(from) {
		q.Start = from
	}
	if p.Was != nil && t.Before(p.Since) && q.End.After(p.Since) {
		q.End = p.Since
	}
	if rec.Zone != nil {
		q = q.In(rec.Zone)
	}
	return q, nil
}

// SourceStraddleError refuses a workload's period because the buckets of
// a configured sums source would straddle its boundaries: a bucket's sum
// cannot be split between two periods without inventing numbers. It
// wraps the [*period.StraddleError] and matches [ErrInvalidWorkload].
type SourceStraddleError struct {
	Source string
	Err    *period.StraddleError
}

func (e *SourceStraddleError) Error() string {
	return fmt.Sprintf("spend: sums source %s: %v", e.Source, e.Err)
}

// Unwrap returns the straddle and [ErrInvalidWorkload].
func (e *SourceStraddleError) Unwrap() []error { return []error{e.Err, ErrInvalidWorkload} }

// fitsSources refuses p when the buckets of any configured sums source
// straddle its boundaries ([period.FitsBuckets]). A workload's records of
// a source count in the period of their bucket's start, so every bucket
// must lie inside one period. Sources are checked in name order, and the
// first that does not fit is named.
func (s *core) fitsSources(p Periods) error {
	if p.Lifetime() {
		return nil
	}
	names := make([]string, 0, len(s.sums.sources))
	for name := range s.sums.sources {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		err := period.FitsBuckets(p.Recurrence, s.sums.sources[name].Width.D(), time.UTC)
		var se *period.StraddleError
		if errors.As(err, &se) {
			return &SourceStraddleError{Source: name, Err: se}
		}
		if err != nil {
			return fmt.Errorf("%w: sums source %s: %w", ErrInvalidWorkload, name, err)
		}
	}
	return nil
}

// periodsOf reads the stored period of a workload item. An item of a
// build before periods has none of the fields and reads as the lifetime
// total; a stored value that no longer parses (a zone the zoneinfo
// dropped) is an error rather than a silent lifetime total.
func (it workloadItem) periodsOf() (Periods, error) {
	if it.Period == "" || it.Period == period.None.String() {
		return Periods{}, nil
	}
	rec, err := period.Config{Period: it.Period, Anchor: it.Anchor, TimeZone: it.TimeZone}.Recurrence()
	if err != nil {
		return Periods{}, fmt.Errorf("spend: workload %s: stored period: %w", it.ID, err)
	}
	g, err := period.ParseGrace(it.Grace)
	if err != nil {
		return Periods{}, fmt.Errorf("spend: workload %s: stored grace: %w", it.ID, err)
	}
	p := Periods{Recurrence: rec, Grace: g, AtBoundary: BoundaryPolicy(it.AtBoundary)}
	if err := it.changesOf(&p); err != nil {
		return Periods{}, fmt.Errorf("spend: workload %s: %w", it.ID, err)
	}
	return p, nil
}

// setPeriods stores p on a workload item.
func (it *workloadItem) setPeriods(p Periods) {
	if p.Lifetime() {
		return
	}
	c := p.Recurrence.Config()
	it.Period, it.Anchor, it.TimeZone = c.Period, c.Anchor, c.TimeZone
	if p.Grace > 0 {
		it.Grace = p.Grace.String()
	}
	it.AtBoundary = string(p.policy())
}

// periodCache keeps, per workload, the period it was last read with: its
// recurrence and current period. The ledger's writes use it to choose
// each record's target (the current total or a past period) without a
// read; every write is conditioned on the stored current period, so a
// stale entry costs one cancelled transaction and a read, never a wrong
// total. A workload it does not know is taken as a lifetime total, which
// keeps the earlier build's writes exactly as they were.
type periodCache struct {
	mu sync.Mutex
	m  map[string]cachedPeriod
}

type cachedPeriod struct {
	periods Periods
	// current is the stored current period's ID ("" for none).
	current string
}

func (c *periodCache) get(id string) cachedPeriod {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

func (c *periodCache) put(w Workload) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cachedPeriod{}
	}
	c.m[w.ID] = cachedPeriod{periods: w.Periods, current: w.PeriodID}
}
