package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/sums"
)

// Metrics of the sums reconciler.
const (
	MetricSumsRun       = "SumsRun"
	MetricSumsRunFailed = "SumsRunFailed"
	MetricBucketTopUp   = "BucketTopUp"
	MetricBucketDown    = "BucketRevisedDown"
	MetricBucketGap     = "BucketGapAtSettle"
)

// SumsConfig configures [NewSums].
type SumsConfig struct {
	// Spend is the spend path's roles: those of [Config.Spend], and
	// [spend.Buckets] and [spend.SumsPages] for the buckets and the pages
	// of the sums' reads.
	Spend *spend.Spend
	// Sources are the providers of sums, and Readers their adapters by
	// source name; each source needs one.
	Sources sums.Sources
	Readers map[string]sums.Reader
	// DB and Table hold each source's state and runs (the ledger table).
	DB    DB
	Table string
	// Flush, if set, sends the pages a revision enqueued right after it
	// commits, and every pending page at the end of a run.
	Flush   *pager.Outbox
	Metrics *emf.Logger
	Logger  *slog.Logger
	Now     func() time.Time
	// Margin is what a run leaves of its invocation's deadline for its
	// run record and pages. Default [DefaultSumsMargin].
	Margin time.Duration
}

// Sums is the reconciler of the providers of sums. Each source has its
// own state, runs and interval, so one provider's outage holds back no
// other: a source's failed run is recorded and the others go on.
type Sums struct {
	cfg SumsConfig
	log *slog.Logger
	now func() time.Time
	// tiers classifies workloads: the export reconciler's, once [New]
	// was given this reconciler, else the default tiers.
	tiers classifier
}

// NewSums returns the sums reconciler for cfg.
func NewSums(cfg SumsConfig) (*Sums, error) {
	var errs []error
	if err := needRoles(cfg.Spend, true); err != nil {
		errs = append(errs, err)
	}
	if err := (StoreConfig{DB: cfg.DB, Table: cfg.Table}).Validate(); err != nil {
		errs = append(errs, err)
	}
	for name := range cfg.Sources {
		if cfg.Readers[name] == nil {
			errs = append(errs, fmt.Errorf("sums source %s has no reader", name))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	s := &Sums{cfg: cfg, log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)), now: cfg.Now, tiers: defaultTiers()}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// SumsRun is the record of one run of one sums source.
type SumsRun struct {
	Source, RunID string
	StartedAt     time.Time
	// Outcome is "ok", "skipped" (not due, nothing asked) or "failed".
	Outcome string
	Error   string
	// Since and Until bound the buckets read; Settled is the latest start
	// of a bucket settled.
	Since, Until time.Time
	// Workloads read, provider calls made, buckets observed, revisions
	// recorded, units topped up, downward revisions, buckets settled and
	// gaps paged.
	Workloads, Calls, Buckets, Revisions int
	TopUp                                int64
	Downs, Settled, Gaps                 int
	Decisions                            []string
	NextDue                              time.Time
	// Reread counts the days read again bucket by bucket because their
	// value differed from the ledger's.
	Reread int
	// Tiers are the workloads the run covered and read, by risk tier.
	Tiers map[string]TierShare
	// Sweep is the sweep the run worked on, Resume the last workload it
	// read of it, and Behind whether it ran out of budget before the
	// sweep's end.
	Sweep  int64
	Resume string
	Behind bool
	// Refused are the workloads whose reads the provider refused
	// ([sums.ErrRefused]): skipped this run, and paged.
	Refused []string
	// Failed are the workloads the run skipped, refused or not, and why.
	Failed []WorkloadFailure
	// Retired counts the buckets of a meter no longer configured that the
	// run settled as they stood ([spend.Buckets.RetireUnknown]).
	Retired int
}

type sumsStateItem struct {
	PK      string `dynamodbav:"pk"`
	SK      string `dynamodbav:"sk"`
	NextDue string `dynamodbav:"next_due"`
	LastRun string `dynamodbav:"last_run"`
	Outcome string `dynamodbav:"outcome"`
	// The sweep's number, the last workload it read, when it started and
	// the runs it has taken.
	Sweep        int64  `dynamodbav:"sweep"`
	Resume       string `dynamodbav:"resume,omitempty"`
	SweepStarted string `dynamodbav:"sweep_started,omitempty"`
	SweepRuns    int    `dynamodbav:"sweep_runs"`
	// The workload the source's runs last stopped at, the error, the
	// first of those runs and how many in a row did.
	StallAt    string `dynamodbav:"stall_at,omitempty"`
	StallError string `dynamodbav:"stall_error,omitempty"`
	StallSince string `dynamodbav:"stall_since,omitempty"`
	StallRuns  int    `dynamodbav:"stall_runs,omitempty"`
	// The source's start and width its runs counted by, its widths'
	// history (a state written before widths had only the width), and the
	// end of the last bucket they could touch ([checkChange]).
	Start      string           `dynamodbav:"start,omitempty"`
	Width      string           `dynamodbav:"width,omitempty"`
	Widths     []stateWidthItem `dynamodbav:"widths,omitempty"`
	WidthUntil string           `dynamodbav:"width_until,omitempty"`
	// Meters are the names the runs counted each provider meter under,
	// by [sums.Meter.Identity].
	Meters map[string]string `dynamodbav:"meters,omitempty"`
}

func (it sumsStateItem) sweep() sweepState {
	return sweepState{sweep: it.Sweep, resume: it.Resume, started: ddb.ParseStamp(it.SweepStarted), runs: it.SweepRuns,
		stallAt: it.StallAt, stallErr: it.StallError, stallSince: ddb.ParseStamp(it.StallSince), stallRuns: it.StallRuns}
}

type sumsRunItem struct {
	PK        string   `dynamodbav:"pk"`
	SK        string   `dynamodbav:"sk"`
	Source    string   `dynamodbav:"source"`
	RunID     string   `dynamodbav:"run_id"`
	StartedAt string   `dynamodbav:"started_at"`
	Outcome   string   `dynamodbav:"outcome"`
	Error     string   `dynamodbav:"error,omitempty"`
	Since     string   `dynamodbav:"since,omitempty"`
	Until     string   `dynamodbav:"until,omitempty"`
	Workloads int      `dynamodbav:"workloads"`
	Calls     int      `dynamodbav:"calls"`
	Buckets   int      `dynamodbav:"buckets"`
	Revisions int      `dynamodbav:"revisions"`
	TopUp     int64    `dynamodbav:"top_up"`
	Downs     int      `dynamodbav:"downs"`
	Settled   int      `dynamodbav:"settled"`
	Gaps      int      `dynamodbav:"gaps"`
	Decisions []string `dynamodbav:"decisions,omitempty"`
	NextDue   string   `dynamodbav:"next_due,omitempty"`
	Reread    int      `dynamodbav:"reread"`
	// Tiers holds, by tier, the workloads covered ("of") and read.
	Tiers  map[string]tierShareItem `dynamodbav:"tiers,omitempty"`
	Sweep  int64                    `dynamodbav:"sweep"`
	Resume string                   `dynamodbav:"resume,omitempty"`
	Behind bool                     `dynamodbav:"behind"`
	// Refused are the workloads the provider refused to sum.
	Refused []string `dynamodbav:"refused,omitempty"`
	// Failed are the workloads skipped, refused or not, and why.
	Failed  []failureItem `dynamodbav:"failed,omitempty"`
	Retired int           `dynamodbav:"retired,omitempty"`
}

type failureItem struct {
	Workload string `dynamodbav:"workload"`
	Kind     string `dynamodbav:"kind"`
	Cause    string `dynamodbav:"cause"`
	Error    string `dynamodbav:"error"`
}

type tierShareItem struct {
	Of   int `dynamodbav:"of"`
	Read int `dynamodbav:"read"`
}

// Run runs every sums source that is due, or has workloads an alert asked
// to be read, each on its own: a failed source is recorded and reported
// in the joined error after the others ran.
func (s *Sums) Run(ctx context.Context, runID string) ([]SumsRun, error) {
	var runs []SumsRun
	var errs []error
	fleet := &fleetOnce{registry: s.cfg.Spend.Workloads}
	for _, name := range slices.Sorted(maps.Keys(s.cfg.Sources)) {
		run, err := s.runSource(ctx, s.cfg.Sources[name], runID, fleet)
		runs = append(runs, run)
		if err != nil {
			errs = append(errs, fmt.Errorf("sums source %s: %w", name, err))
		}
	}
	if s.cfg.Flush != nil {
		if res, err := s.cfg.Flush.Flush(ctx); err != nil {
			s.log.WarnContext(ctx, "sums page flush", "run", runID, "err", err, "sent", res.Sent)
		}
	}
	return runs, errors.Join(errs...)
}

// flushNow sends the pages a revision just committed, by key: the flush
// of the whole outbox at the end of Run lists pending pages through an
// index, which may not show a page enqueued a moment before (AWS's index
// reads are eventually consistent), and does not happen at all when the
// run's invocation ends first. A page it could not send stays pending for
// the next flush.
func (s *Sums) flushNow(ctx context.Context, keys []string, run *SumsRun) {
	if s.cfg.Flush == nil || len(keys) == 0 {
		return
	}
	if res, err := s.cfg.Flush.FlushKeys(ctx, keys); err != nil {
		s.log.WarnContext(ctx, "sums page flush by key; the pages stay in the outbox", "run", run.RunID, "err", err,
			"sent", res.Sent)
	}
}

// dueSlack is how early a source is due: a tenth of its interval, at most
// a minute. A schedule whose rate is the interval ticks a little less than
// one interval after the clock its previous run took; without the slack
// that tick would skip the source and the next would read it, doubling the
// interval.
func dueSlack(interval time.Duration) time.Duration { return min(interval/10, time.Minute) }

// NextRun is when a source next runs at the latest: its state's next due
// time, or now before its first run.
func (s *Sums) NextRun(ctx context.Context, source string) (time.Time, error) {
	st, _, err := s.state(ctx, source)
	if err != nil {
		return time.Time{}, err
	}
	return maxTime(ddb.ParseStamp(st.NextDue), s.now()), nil
}

func (s *Sums) runSource(ctx context.Context, src sums.Source, runID string, fleet *fleetOnce) (SumsRun, error) {
	now := s.now()
	run := SumsRun{Source: src.Name, RunID: runID, StartedAt: now, Tiers: map[string]TierShare{}}
	st, found, err := s.state(ctx, src.Name)
	if err == nil {
		err = checkChange(src, st, now)
	}
	if err == nil {
		err = s.sweep(ctx, src, &run, st.sweep(), !found || !ddb.ParseStamp(st.NextDue).After(now.Add(dueSlack(src.Interval.D()))), fleet)
	}
	switch {
	case err != nil:
		run.Outcome, run.Error = "failed", err.Error()
		s.log.ErrorContext(ctx, "sums run failed", "source", src.Name, "run", runID, "err", err)
		s.count(MetricSumsRunFailed, 1, src.Name)
	case run.Outcome == "":
		run.Outcome = "ok"
		s.log.InfoContext(ctx, "sums run", "source", src.Name, "run", runID, "workloads", run.Workloads,
			"calls", run.Calls, "buckets", run.Buckets, "revisions", run.Revisions, "top_up", run.TopUp,
			"downs", run.Downs, "settled", run.Settled, "gaps", run.Gaps, "reread", run.Reread, "behind", run.Behind)
	}
	s.count(MetricSumsRun, 1, src.Name)
	s.count(MetricBucketTopUp, float64(run.TopUp), src.Name)
	s.count(MetricBucketDown, float64(run.Downs), src.Name)
	s.count(MetricBucketGap, float64(run.Gaps), src.Name)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if perr := s.putRun(rctx, run); perr != nil {
		s.log.WarnContext(ctx, "sums run record", "source", src.Name, "run", runID, "err", perr)
	}
	return run, err
}

func (s *Sums) count(name string, n float64, source string) {
	if s.cfg.Metrics != nil && n != 0 {
		_ = s.cfg.Metrics.Count(name, n, emf.Dims{"Source": source})
	}
}

// sweep reads the source's window for the workloads it covers, then
// settles the buckets past the settle horizon. An alerted workload, or
// one near its cap, is read on every run; when the source is due, the
// sweep goes on from where the last run stopped, over the active
// workloads and this sweep's slice of the quiet ones, until it ends or
// the run's budget runs out. A workload that fails on its own is skipped
// and paged once per cause; a failure that may mend on its own stops the
// run, which keeps its progress ([Sums.readAll]).
func (s *Sums) sweep(ctx context.Context, src sums.Source, run *SumsRun, st sweepState, due bool, fleet *fleetOnce) error {
	asked, err := s.cfg.Spend.Buckets.DueWorkloads(ctx, src.Name)
	if err != nil {
		return err
	}
	if !due && len(asked) == 0 {
		run.Outcome = "skipped"
		return nil
	}
	targets, err := targetsOf(ctx, fleet, src, asked, due)
	if err != nil {
		return err
	}
	win := windowOf(src, run.StartedAt)
	win.sweep = st.sweep
	run.Since, run.Until = win.since, win.until
	stop := s.budget(ctx, src, run.StartedAt)
	if due && st.started.IsZero() {
		st.started = run.StartedAt
	}
	p := s.planRun(src, targets, asked, st, due, run)
	n, err := s.readAll(ctx, src, p.first, asked, win, stop, &st, false, run)
	done := false
	if err == nil && due && n == len(p.first) {
		n, err = s.readAll(ctx, src, p.sweep, asked, win, stop, &st, true, run)
		done = err == nil && n == len(p.sweep)
	}
	// What the run did is kept however it ended, even past its deadline:
	// its skipped workloads are paged, and a due run writes where the
	// sweep stands and where it stopped, so that the next run goes on from
	// there and a source that keeps failing pages as behind and stalled.
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	errs := []error{err, s.pageFailures(kctx, src, run)}
	if due {
		st.noteStall(run.StartedAt)
		errs = append(errs, s.endRun(kctx, src, st, done, err != nil, run))
	}
	return errors.Join(errs...)
}

// endRun records where the sweep stands after a due run (the next sweep
// once this one is done, else its resume point), then says whether the
// run was behind. The state is written first, so that a failed page
// loses no progress.
func (s *Sums) endRun(ctx context.Context, src sums.Source, st sweepState, done, failed bool, run *SumsRun) error {
	st.runs++
	run.Sweep, run.Resume = st.sweep, st.resume
	next := st
	if done {
		next = sweepState{sweep: st.sweep + 1, stallAt: st.stallAt, stallErr: st.stallErr, stallSince: st.stallSince,
			stallRuns: st.stallRuns}
	}
	run.NextDue = run.StartedAt.Add(src.Interval.D())
	outcome := "ok"
	if failed {
		outcome = "failed"
	}
	if err := s.putState(ctx, src, run, next, outcome); err != nil {
		return err
	}
	return s.behind(ctx, src, st, done, run)
}

// target is a workload and its references at the provider.
type target struct {
	w    spend.Workload
	id   string
	refs []string
	tier Tier
}

// fleetOnce lists the fleet once for all the sources of one Run.
type fleetOnce struct {
	registry *spend.Workloads
	fleet    spend.Fleet
	listed   bool
}

// get lists the fleet with one scan of the workloads table, not a query
// of each workload's aliases: a sweep reads a slice of the fleet a run,
// but every run lists all of it.
func (o *fleetOnce) get(ctx context.Context) (spend.Fleet, error) {
	if o.listed {
		return o.fleet, nil
	}
	f, err := o.registry.Fleet(ctx)
	if err != nil {
		return spend.Fleet{}, err
	}
	o.fleet, o.listed = f, true
	return f, nil
}

// targetsOf are the workloads to read: every workload with a reference
// of the source's alias prefix, or only the asked ones.
func targetsOf(ctx context.Context, fl *fleetOnce, src sums.Source, asked map[string]time.Time, all bool) ([]target, error) {
	fleet, err := fl.get(ctx)
	if err != nil {
		return nil, err
	}
	var out []target
	for _, w := range fleet.Workloads {
		if _, ok := asked[w.ID]; w.Status == spend.StatusRetired || (!all && !ok) {
			continue
		}
		var refs []string
		for _, a := range fleet.Refs[w.ID] {
			if strings.HasPrefix(a, src.AliasPrefix) {
				refs = append(refs, a)
			}
		}
		if len(refs) > 0 {
			out = append(out, target{w: w, id: w.ID, refs: refs})
		}
	}
	sortTargets(out)
	return out, nil
}

// readWorkload reads every meter of the workload over the run's window,
// sums the values of its references per bucket, observes each, and then
// rechecks the workload's cap.
func (s *Sums) readWorkload(ctx context.Context, src sums.Source, t target, win window, run *SumsRun) error {
	run.Workloads++
	for _, mname := range slices.Sorted(maps.Keys(src.Meters)) {
		if err := s.readMeter(ctx, src, src.Meters[mname], t, win, run); err != nil {
			return err
		}
	}
	w, err := s.cfg.Spend.Workloads.Get(ctx, t.id)
	if err != nil {
		return err
	}
	// A crash between a top-up and its cap action leaves the workload over
	// its cap unpaused; the recheck takes the action (conditionally, once).
	_, err = s.cfg.Spend.Caps.Recheck(ctx, w)
	return err
}

// addValues adds a reference's bucket values, rounded at the bucket to the
// meter's scale, to values.
func addValues(values map[time.Time]int64, got []sums.Sum, m sums.Meter, since time.Time) error {
	for _, v := range got {
		if v.Start.Before(since) {
			continue
		}
		units, ok := m.Units(v.Value)
		if !ok {
			return fmt.Errorf("%w: bucket %s: value %v is not a count of units", sums.ErrRefused, v.Start.UTC().Format(time.RFC3339), v.Value)
		}
		values[v.Start.UTC()] += units
	}
	return nil
}

func (s *Sums) observeAll(ctx context.Context, src sums.Source, m sums.Meter, id string, values map[time.Time]int64, run *SumsRun) error {
	closedBy := run.StartedAt.Add(-src.Lag.D())
	for _, start := range slices.SortedFunc(maps.Keys(values), time.Time.Compare) {
		o := spend.Observation{Key: spend.KeyOf(src, m, id, start), Value: values[start], RunID: run.RunID,
			Provisional: start.Add(src.WidthAt(start)).After(closedBy)}
		got, err := s.cfg.Spend.Buckets.Observe(ctx, o)
		if err != nil {
			return err
		}
		s.flushNow(ctx, got.Pages, run)
		run.Buckets++
		if got.Revision == nil {
			continue
		}
		run.Revisions++
		run.TopUp += max(got.Revision.Delta, 0)
		if got.Revision.Down {
			run.Downs++
		}
		for _, d := range got.Decisions {
			run.Decisions = append(run.Decisions, d.Line)
		}
	}
	return nil
}

// settle settles the workload's buckets of this source that started at
// or before startedBy, each read from the provider at least once first
// ([Sums.readUnseen]).
func (s *Sums) settle(ctx context.Context, src sums.Source, t target, startedBy time.Time, run *SumsRun) error {
	id := t.id
	bs, err := s.cfg.Spend.Buckets.UnsettledBuckets(ctx, id, startedBy)
	if err != nil {
		return err
	}
	bs = slices.DeleteFunc(bs, func(b spend.Bucket) bool { return b.Source != src.Name })
	// A meter renamed or removed by a deploy leaves open buckets no
	// settle can check: they are settled as they stood, by rule.
	retired, bs, err := s.cfg.Spend.Buckets.RetireUnknown(ctx, bs, run.RunID)
	run.Retired += len(retired)
	for _, b := range retired {
		run.Decisions = append(run.Decisions, "retired "+spend.RetireLine(b))
	}
	if err != nil || len(bs) == 0 {
		return err
	}
	if err := s.readUnseen(ctx, src, t, bs, run); err != nil {
		return err
	}
	gaps, err := s.cfg.Spend.Buckets.Settle(ctx, id, bs, run.RunID)
	run.Settled += len(bs)
	run.Gaps += len(gaps)
	for _, g := range gaps {
		run.Decisions = append(run.Decisions, "gap "+spend.GapLine(g))
	}
	return err
}

func (s *Sums) state(ctx context.Context, source string) (sumsStateItem, bool, error) {
	return readSumsState(ctx, s.cfg.DB, s.cfg.Table, source)
}

// readSumsState reads source's state item from table, consistently.
func readSumsState(ctx context.Context, db ddb.API, table, source string) (sumsStateItem, bool, error) {
	it, found, err := ddb.Get[sumsStateItem](ctx, db, &dynamodb.GetItemInput{TableName: aws.String(table),
		Key: ddb.Key(sumsPK(source), skSumsState), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return it, false, fmt.Errorf("reconcile: read sums state of %s: %w", source, err)
	}
	return it, found, nil
}

func (s *Sums) putState(ctx context.Context, src sums.Source, run *SumsRun, st sweepState, outcome string) error {
	source := src.Name
	it := sumsStateItem{PK: sumsPK(source), SK: skSumsState,
		NextDue: ddb.Stamp(run.NextDue), LastRun: run.RunID, Outcome: outcome,
		Sweep: st.sweep, Resume: st.resume, SweepStarted: ddb.Stamp(st.started), SweepRuns: st.runs,
		StallAt: st.stallAt, StallError: st.stallErr, StallSince: ddb.Stamp(st.stallSince), StallRuns: st.stallRuns}
	recordConfig(&it, src, run.StartedAt)
	item, err := attributevalue.MarshalMap(it)
	if err != nil {
		return err
	}
	if _, err := s.cfg.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.cfg.Table), Item: item}); err != nil {
		return fmt.Errorf("reconcile: write sums state of %s: %w", source, err)
	}
	return nil
}

func (s *Sums) putRun(ctx context.Context, r SumsRun) error {
	item, err := attributevalue.MarshalMap(sumsRunItem{PK: sumsPK(r.Source), SK: runSK(r.StartedAt, r.RunID),
		Source: r.Source, RunID: r.RunID, StartedAt: ddb.Stamp(r.StartedAt), Outcome: r.Outcome, Error: r.Error,
		Since: ddb.Stamp(r.Since), Until: ddb.Stamp(r.Until), Workloads: r.Workloads, Calls: r.Calls, Buckets: r.Buckets,
		Revisions: r.Revisions, TopUp: r.TopUp, Downs: r.Downs, Settled: r.Settled, Gaps: r.Gaps,
		Decisions: r.Decisions, NextDue: ddb.Stamp(r.NextDue), Reread: r.Reread, Tiers: tierItems(r.Tiers), Refused: r.Refused,
		Sweep: r.Sweep, Resume: r.Resume, Behind: r.Behind, Failed: failureItems(r.Failed), Retired: r.Retired})
	if err != nil {
		return err
	}
	_, err = s.cfg.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.cfg.Table), Item: item})
	return err
}

// Runs returns a source's latest runs, newest first.
func (s *Sums) Runs(ctx context.Context, source string, limit int) ([]SumsRun, error) {
	st := &Store{db: s.cfg.DB, table: s.cfg.Table}
	var out []SumsRun
	kc := expression.Key("pk").Equal(expression.Value(sumsPK(source))).And(expression.Key("sk").BeginsWith(prefixRun))
	err := st.query(ctx, kc, false, limit, func(item map[string]types.AttributeValue) error {
		var ri sumsRunItem
		if err := attributevalue.UnmarshalMap(item, &ri); err != nil {
			return err
		}
		out = append(out, SumsRun{Source: ri.Source, RunID: ri.RunID, StartedAt: ddb.ParseStamp(ri.StartedAt),
			Outcome: ri.Outcome, Error: ri.Error, Since: ddb.ParseStamp(ri.Since), Until: ddb.ParseStamp(ri.Until),
			Workloads: ri.Workloads, Calls: ri.Calls, Buckets: ri.Buckets, Revisions: ri.Revisions, TopUp: ri.TopUp,
			Downs: ri.Downs, Settled: ri.Settled, Gaps: ri.Gaps, Decisions: ri.Decisions, NextDue: ddb.ParseStamp(ri.NextDue),
			Reread: ri.Reread, Tiers: tierShares(ri.Tiers), Sweep: ri.Sweep, Resume: ri.Resume, Behind: ri.Behind,
			Refused: ri.Refused, Failed: failures(ri.Failed), Retired: ri.Retired})
		return nil
	})
	return out, err
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// tierItems is the stored form of a run's tiers: none at all for a run
// that read none (a skipped one), not an empty map, which the local
// DynamoDB hands back without its type (docs/local-aws.md).
func tierItems(ts map[string]TierShare) map[string]tierShareItem {
	if len(ts) == 0 {
		return nil
	}
	out := make(map[string]tierShareItem, len(ts))
	for k, v := range ts {
		out[k] = tierShareItem{Of: v.Of, Read: v.Read}
	}
	return out
}

func tierShares(ts map[string]tierShareItem) map[string]TierShare {
	out := make(map[string]TierShare, len(ts))
	for k, v := range ts {
		out[k] = TierShare{Of: v.Of, Read: v.Read}
	}
	return out
}

func failureItems(fs []WorkloadFailure) []failureItem {
	var out []failureItem
	for _, f := range fs {
		out = append(out, failureItem(f))
	}
	return out
}

func failures(fs []failureItem) []WorkloadFailure {
	var out []WorkloadFailure
	for _, f := range fs {
		out = append(out, WorkloadFailure(f))
	}
	return out
}
