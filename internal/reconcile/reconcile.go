package reconcile

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/pkg/provider"
)

// Errors of the reconcile package.
var (
	// ErrInvalidConfig means New or NewStore was given a bad config.
	ErrInvalidConfig = errors.New("reconcile: invalid config")
	// ErrLostRace means another run advanced the cursor first. A run that
	// loses records it and ends without error.
	ErrLostRace = errors.New("reconcile: cursor moved by another run")
	// ErrExport means the provider's usage export could not be read to the
	// end; the cursor was not advanced.
	ErrExport = errors.New("reconcile: usage export failed")
	// ErrFold means a record could not be folded into the ledger; the
	// cursor was not advanced.
	ErrFold = errors.New("reconcile: fold failed")
)

// Export is the provider's authoritative usage export; [*provider.Client]
// is one.
type Export interface {
	ListUsage(ctx context.Context, since, until time.Time, fn func([]provider.UsageRecord) error) error
}

var _ Export = (*provider.Client)(nil)

// Pages enqueues pages durably; [*pager.Outbox] is one.
type Pages interface {
	Enqueue(ctx context.Context, ev pager.Event) (bool, error)
}

var _ Pages = (*pager.Outbox)(nil)

// Defaults applied by [New] to zero fields.
const (
	DefaultOverlap         = 10 * time.Minute
	DefaultLag             = 2 * time.Minute
	DefaultHorizon         = 30 * time.Minute
	DefaultInitialLookback = time.Hour
	DefaultBaseInterval    = 5 * time.Minute
	DefaultActiveInterval  = 15 * time.Minute
	DefaultQuietInterval   = time.Hour
	DefaultQuietAfter      = 6 * time.Hour
	DefaultNearCapRatio    = 0.8
	DefaultConcurrency     = 32
)

// Config configures [New].
type Config struct {
	// Spend is the spend path's roles the reconciler uses: [spend.Ledger]
	// applies what the export holds, [spend.Recon] settles markers and
	// deferred records and stores runs, [spend.Caps] rechecks a due
	// workload's cap, and [spend.Workloads] resolves references and lists
	// the workloads.
	Spend  *spend.Spend
	Export Export
	// DB and Table hold the reconciler's own items (cursor, runs,
	// schedules); Table is the ledger table.
	DB    DB
	Table string
	// Pages enqueues unresolved-attribution pages; Flush, if set, sends
	// every pending page at the end of a run (an outbox with a sender).
	Pages Pages
	Flush *pager.Outbox
	// ReconRoutingKey is the PagerDuty routing key of the reconciliation owner.
	// It is a credential and is never logged.
	ReconRoutingKey string
	// Source is the payload source of pages. Default "hookline-reconciler".
	Source string

	// Overlap is subtracted from the cursor at the start of a run's
	// window, to cover clock skew and late publication. Default 10m.
	Overlap time.Duration
	// Lag keeps the window's end behind now, so the export's window is a
	// fixed set when read. Default 2m.
	Lag time.Duration
	// Horizon is the consistency horizon: the maximum age of a webhook
	// entry the export has not shown, measured against the cursor, before
	// it is marked unseen and paged. Default 30m.
	Horizon time.Duration
	// InitialLookback places the first run's cursor before now. Default 1h.
	InitialLookback time.Duration
	// ExportMaxAge and ExportMaxSkew are the time rule of the usage source
	// the export holds (its USAGE_MAPPINGS entry): how far before and
	// after its publication a record's time may lie. Defaults
	// [provider.MaxUsageAge] and [provider.MaxUsageSkew].
	ExportMaxAge, ExportMaxSkew time.Duration

	// BaseInterval is the schedule's rate: workloads near their cap are
	// reconciled every run. ActiveInterval and QuietInterval are the
	// intervals of active and quiet workloads, and QuietAfter is how long
	// without usage makes a workload quiet. Defaults 5m, 15m, 1h, 6h.
	BaseInterval, ActiveInterval, QuietInterval, QuietAfter time.Duration
	// NearCapRatio: a workload whose total is at least this share of its
	// cap is near its cap. Default 0.8.
	NearCapRatio float64
	// Concurrency bounds the records folded at once: records go to
	// Concurrency lanes by workload reference (each new reference to the
	// lane with the fewest), so one workload folds in order and up to
	// Concurrency workloads in parallel. Default 32.
	Concurrency int

	// Metrics receives EMF lines. Default: none.
	Metrics *emf.Logger
	// Logger receives run and decision lines. Default: discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Sums, if set, is the reconciler of the providers of sums, run on
	// each invocation after the export's run, whatever became of it.
	Sums *Sums
}

func (c *Config) defaults() {
	c.Overlap = cmp.Or(c.Overlap, DefaultOverlap)
	c.Lag = cmp.Or(c.Lag, DefaultLag)
	c.Horizon = cmp.Or(c.Horizon, DefaultHorizon)
	c.InitialLookback = cmp.Or(c.InitialLookback, DefaultInitialLookback)
	c.ExportMaxAge = cmp.Or(c.ExportMaxAge, provider.MaxUsageAge)
	c.ExportMaxSkew = cmp.Or(c.ExportMaxSkew, provider.MaxUsageSkew)
	c.BaseInterval = cmp.Or(c.BaseInterval, DefaultBaseInterval)
	c.ActiveInterval = cmp.Or(c.ActiveInterval, DefaultActiveInterval)
	c.QuietInterval = cmp.Or(c.QuietInterval, DefaultQuietInterval)
	c.QuietAfter = cmp.Or(c.QuietAfter, DefaultQuietAfter)
	c.NearCapRatio = cmp.Or(c.NearCapRatio, DefaultNearCapRatio)
	c.Concurrency = cmp.Or(c.Concurrency, DefaultConcurrency)
	c.Source = cmp.Or(c.Source, "hookline-reconciler")
}

// needRoles reports the roles of s that the export reconciler needs (and,
// with sums, the sums reconciler) and that s lacks.
func needRoles(s *spend.Spend, sums bool) error {
	if s == nil {
		return errors.New("Spend is required")
	}
	var missing []string
	for name, nilRole := range map[string]bool{"Workloads": s.Workloads == nil, "Caps": s.Caps == nil,
		"Ledger": s.Ledger == nil, "Recon": s.Recon == nil,
		"Buckets": sums && s.Buckets == nil, "SumsPages": sums && s.SumsPages == nil} {
		if nilRole {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("Spend lacks the roles %s", strings.Join(missing, ", "))
	}
	return nil
}

// Validate reports every problem with c (after defaults) at once.
func (c Config) Validate() error {
	c.defaults()
	var errs []error
	if err := needRoles(c.Spend, false); err != nil {
		errs = append(errs, err)
	}
	if c.Export == nil || c.Pages == nil {
		errs = append(errs, errors.New("Export and Pages are required"))
	}
	if err := (StoreConfig{DB: c.DB, Table: c.Table}).Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.ReconRoutingKey == "" {
		errs = append(errs, errors.New("ReconRoutingKey is empty"))
	}
	for name, d := range map[string]time.Duration{"Overlap": c.Overlap, "Lag": c.Lag, "Horizon": c.Horizon,
		"InitialLookback": c.InitialLookback, "BaseInterval": c.BaseInterval, "ActiveInterval": c.ActiveInterval,
		"QuietInterval": c.QuietInterval, "QuietAfter": c.QuietAfter, "ExportMaxAge": c.ExportMaxAge, "ExportMaxSkew": c.ExportMaxSkew} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("reconcile: %s must not be negative", name))
		}
	}
	if c.ActiveInterval < c.BaseInterval || c.QuietInterval < c.ActiveInterval {
		errs = append(errs, errors.New("intervals must satisfy BaseInterval <= ActiveInterval <= QuietInterval"))
	}
	if c.Horizon <= c.Lag {
		errs = append(errs, errors.New("Horizon must exceed Lag"))
	}
	if c.NearCapRatio <= 0 || c.NearCapRatio > 1 {
		errs = append(errs, errors.New("NearCapRatio must lie in (0, 1]"))
	}
	if c.Concurrency < 0 {
		errs = append(errs, errors.New("Concurrency must not be negative"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// Reconciler is the scheduled polling path. It is safe for concurrent use,
// and so are concurrent runs, in one process or many.
type Reconciler struct {
	cfg   Config
	store *Store
	log   *slog.Logger
	now   func() time.Time
}

// New returns a Reconciler for cfg.
func New(cfg Config) (*Reconciler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	store, err := NewStore(StoreConfig{DB: cfg.DB, Table: cfg.Table})
	if err != nil {
		return nil, err
	}
	r := &Reconciler{cfg: cfg, store: store, log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)), now: cfg.Now}
	if r.now == nil {
		r.now = time.Now
	}
	if cfg.Sums != nil {
		// The providers of sums are read by this reconciler's tiers.
		cfg.Sums.tiers = r
	}
	return r, nil
}

// Store returns the reconciler's store, for operators' reads.
func (r *Reconciler) Store() *Store { return r.store }

// Handle is the Lambda handler of the EventBridge schedule: one run. It
// returns an error when the run failed (the export could not be read, or a
// record could not be folded), so the failure is visible; the next run
// catches up from the unchanged cursor. Losing the cursor race to a
// concurrent run is not an error. The providers of sums run after it,
// each on its own ([Sums.Run]).
func (r *Reconciler) Handle(ctx context.Context, ev events.EventBridgeEvent) error {
	_, err := r.Run(ctx, ev.ID)
	if r.cfg.Sums == nil {
		return err
	}
	_, serr := r.cfg.Sums.Run(ctx, cmp.Or(ev.ID, newRunID()))
	return errors.Join(err, serr)
}

// Sums returns the reconciler of the providers of sums, or nil.
func (r *Reconciler) Sums() *Sums { return r.cfg.Sums }

// Run performs one reconciliation run and returns its record. runID names
// the run; empty picks a random one.
func (r *Reconciler) Run(ctx context.Context, runID string) (Run, error) {
	if runID == "" {
		runID = newRunID()
	}
	start := time.Now()
	run := Run{RunID: runID, StartedAt: r.now()}
	err := r.run(ctx, &run)
	run.FinishedAt = r.now()
	run.Duration = time.Since(start)
	switch {
	case errors.Is(err, ErrLostRace):
		run.Outcome = "lost_race"
		err = nil
		r.log.InfoContext(ctx, "reconcile run lost the cursor race", "run", runID, "cursor", run.CursorBefore)
	case err != nil:
		run.Outcome = "failed"
		run.Error = err.Error()
		r.log.ErrorContext(ctx, "reconcile run failed", "run", runID, "since", run.Since, "until", run.Until, "err", err)
	default:
		run.Outcome = "ok"
		r.log.InfoContext(ctx, "reconcile run", "run", runID, "since", run.Since, "until", run.Until,
			"records", run.Records, "missed", run.Missed, "matched", run.Matched, "repeats", run.Repeats,
			"disagreements", run.Disagreements, "deferred", run.Deferred, "unseen", run.Unseen,
			"reconciled", run.Reconciled, "duration", run.Duration)
	}
	r.emitRun(run, err)
	// The run record is written with a context that outlives a cancelled
	// invocation, so a failed run is still recorded.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if perr := r.store.PutRun(rctx, run); perr != nil {
		r.log.WarnContext(ctx, "reconcile run record", "run", runID, "err", perr)
	}
	return run, err
}

// run is one run; see the package documentation for the steps.
func (r *Reconciler) run(ctx context.Context, run *Run) error {
	if err := r.publishSchedule(ctx, run); err != nil {
		return err
	}
	cur, found, err := r.store.Cursor(ctx)
	if err != nil {
		return err
	}
	if !found {
		cur.Position = run.StartedAt.Add(-r.cfg.InitialLookback)
	}
	run.CursorBefore = cur.Position
	run.Since = cur.Position.Add(-r.cfg.Overlap)
	run.Until = run.StartedAt.Add(-r.cfg.Lag)
	next := cur.Position
	f := newFold(r, run.StartedAt)
	if run.Until.After(run.Since) {
		l := f.start(ctx)
		err := r.cfg.Export.ListUsage(l.ctx, run.Since, run.Until, l.page)
		if ferr := l.wait(); ferr != nil {
			err = ferr // the fold's failure is the cause; the export only saw the cancellation
		}
		run.Counts = f.total()
		if err != nil {
			var ee *provider.ExportError
			if errors.As(err, &ee) {
				return fmt.Errorf("%w: %w", ErrExport, err)
			}
			return err
		}
		if run.Until.After(next) {
			next = run.Until
		}
	}
	if err := r.store.AdvanceCursor(ctx, cur, found, next, run.RunID, r.now()); err != nil {
		return err
	}
	run.CursorAfter = next
	run.Decisions = append(run.Decisions, f.decisionLines()...)
	r.emitDiscovery(f.latencies())

	if err := r.markUnseen(ctx, run, f); err != nil {
		return err
	}
	plan, err := r.plan(ctx, run)
	if err != nil {
		return err
	}
	if err := r.deferred(ctx, run, plan); err != nil {
		return err
	}
	if err := r.reconcileWorkloads(ctx, run, f, plan); err != nil {
		return err
	}
	if r.cfg.Flush != nil {
		if res, err := r.cfg.Flush.Flush(ctx); err != nil {
			r.log.WarnContext(ctx, "reconcile page flush", "run", run.RunID, "err", err, "sent", res.Sent)
		}
	}
	return nil
}

// markUnseen marks unseen, and pages, the webhook entries the export still
// lacks although it has been read up to Horizon past when hookline first
// saw them.
func (r *Reconciler) markUnseen(ctx context.Context, run *Run, f *fold) error {
	due := run.CursorAfter.Add(-r.cfg.Horizon)
	entries, err := r.cfg.Spend.Recon.UnconfirmedBefore(ctx, due)
	if err != nil {
		return err
	}
	for _, e := range entries {
		ok, err := r.cfg.Spend.Recon.MarkUnseen(ctx, e, r.cfg.Horizon)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		run.Unseen++
		f.count(e.WorkloadID, func(c *Counts) { c.Unseen++ })
		run.Decisions = append(run.Decisions, fmt.Sprintf("unseen record=%s workload=%s units=%d paged=spend-unseen:%s",
			e.RecordID, e.WorkloadID, e.Units, e.RecordID))
	}
	return nil
}

func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "run-" + hex.EncodeToString(b[:])
}
