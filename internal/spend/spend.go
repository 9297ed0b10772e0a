package spend

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/sums"
)

// Errors of the spend package.
var (
	// ErrInvalidConfig means New was given a bad config.
	ErrInvalidConfig = errors.New("spend: invalid config")
	// ErrInvalidUsage means a usage record lacks a required field.
	ErrInvalidUsage = errors.New("spend: invalid usage record")
	// ErrInvalidWorkload means a workload definition is incomplete.
	ErrInvalidWorkload = errors.New("spend: invalid workload")
	// ErrUnknownWorkload means no workload has the given ID or reference.
	ErrUnknownWorkload = errors.New("spend: unknown workload")
	// ErrWorkloadExists means CreateWorkload found the ID already taken.
	ErrWorkloadExists = errors.New("spend: workload already exists")
	// ErrAliasTaken means the reference already maps to another workload.
	ErrAliasTaken = errors.New("spend: alias already maps to another workload")
	// ErrNotPaused means Resume was asked for a workload that is not paused.
	ErrNotPaused = errors.New("spend: workload is not paused")
	// ErrNotFound means no ledger item has the given ID.
	ErrNotFound = errors.New("spend: not found")
	// ErrInvalidWorkloadID means a workload ID is outside [WorkloadIDPattern];
	// the error is an [*InvalidIDError], which also matches
	// [ErrInvalidWorkload].
	ErrInvalidWorkloadID = errors.New("spend: invalid workload ID")
	// ErrOverCap means Resume was asked for a workload whose total is still
	// over its cap; the error is an [*OverCapError].
	ErrOverCap = errors.New("spend: workload is over its cap")
)

// OverCapError is the refusal of a resume while the workload's total is
// over its cap. Raise the cap above the total first, or resume on purpose
// with [Caps.ForceResume].
type OverCapError struct {
	WorkloadID string
	Total, Cap int64
}

func (e *OverCapError) Error() string {
	return fmt.Sprintf("spend: resume %s: total %d is over cap %d", e.WorkloadID, e.Total, e.Cap)
}

// Unwrap makes an *OverCapError match [ErrOverCap].
func (e *OverCapError) Unwrap() error { return ErrOverCap }

// DB is the DynamoDB client this package uses.
type DB = ddb.API

// Pages enqueues pages as part of a transaction; [*pager.Outbox] is one.
type Pages interface {
	EnqueueItem(ev pager.Event, now time.Time) (types.TransactWriteItem, error)
}

var _ Pages = (*pager.Outbox)(nil)

// Metrics receives counts and latencies. An EMF logger satisfies it.
type Metrics interface {
	Count(name string, n int64, dims map[string]string)
	Duration(name string, d time.Duration, dims map[string]string)
}

// Metric names emitted by [Spend].
const (
	MetricAccepted     = "UsageAccepted"
	MetricDuplicate    = "UsageDuplicate"
	MetricDeferred     = "UsageDeferred"
	MetricDisagreement = "UsageDisagreement"
	// MetricQuarantined counts records the ledger refused and quarantined.
	MetricQuarantined = "UsageQuarantined"
	// MetricObservedToLedger is the time from the usage record's
	// observation to its ledger commit.
	MetricObservedToLedger = "ObservedToLedger"
	// MetricLedgerToEnforcement is the time from the ledger commit of the
	// record that crossed a threshold to the commit of the pause or
	// escalation.
	MetricLedgerToEnforcement = "LedgerToEnforcement"
)

// Intake paths.
const (
	PathWebhook = "webhook"
	PathPoll    = "poll"
)

// PathContract is the written-down contract of one intake path.
//
// A provider of sums ([sums.Source]) has no contract of its own: its
// sums arrive on the poll path, and its source's interval and lag say how
// late they are. For an OpenAI source (usage and costs) the poll is the
// only path, since OpenAI sends no usage webhook, so:
//
//   - a cap acts at the latest OpenAI's lag (undocumented) plus one poll
//     after the usage: the source's interval, taken at the reconciler's
//     runs (Interval here), plus the run's own time. The open bucket is
//     read, provisional, so no bucket needs to close first. A money cap
//     on costs acts up to a day late, plus the lag: costs come in day
//     buckets only;
//   - usage lost by both paths (the webhooks, when a producer sends any,
//     and OpenAI's sums) leaves max(W, P*) below the truth, and no sum can
//     show it;
//   - the risk tiers do not thin these polls: each run that a source is
//     due reads every workload with one of its references, whatever its
//     tier, one call per workload, meter and page. A near-cap workload is
//     read no sooner than any other, and a thousand projects with two
//     meters are two thousand calls a poll at the source's pace.
type PathContract struct {
	// ExpectedArrival is how long after the usage occurred a record
	// normally reaches us on this path.
	ExpectedArrival time.Duration
	// MaxAge is the maximum tolerated age: a deferred record's deadline is
	// its deferral time plus MaxAge.
	MaxAge time.Duration
	// Interval is the provider's retry interval (webhook) or our poll
	// interval (poll).
	Interval time.Duration
}

func (p PathContract) validate(name string) []error {
	var errs []error
	if p.MaxAge <= 0 {
		errs = append(errs, fmt.Errorf("spend: %s.MaxAge must be positive", name))
	}
	if p.ExpectedArrival < 0 || p.Interval < 0 {
		errs = append(errs, fmt.Errorf("spend: %s.ExpectedArrival and %s.Interval must not be negative", name, name))
	}
	return errs
}

// Config configures [New].
type Config struct {
	DB             DB
	LedgerTable    string
	WorkloadsTable string
	// Pages enqueues pages inside the ledger's transactions. Its outbox
	// must live in LedgerTable's account and region (one transaction).
	Pages Pages
	// Webhook and Poll are the two paths' contracts.
	Webhook, Poll PathContract
	// ReconOwner names the owner of deferred and disagreeing records.
	ReconOwner string
	// ReconRoutingKey is the PagerDuty routing key of the reconciliation owner,
	// paged on disagreements. It is a credential and is never logged.
	ReconRoutingKey string
	// Source is the payload source of pages. Default "hookline-spend".
	Source string
	// Metrics receives counts and latencies. Default: none.
	Metrics Metrics
	// Logger receives decision and conflict lines. Default: discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Sums are the providers of sums (SUM_SOURCES): a webhook record of a
	// usage source and meter they cover is counted in its bucket, by the
	// max rule (bucket.go). Default: none.
	Sums sums.Sources
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.DB == nil {
		errs = append(errs, errors.New("DB is nil"))
	}
	if c.LedgerTable == "" || c.WorkloadsTable == "" {
		errs = append(errs, errors.New("LedgerTable and WorkloadsTable are required"))
	}
	if c.Pages == nil {
		errs = append(errs, errors.New("Pages is nil"))
	}
	errs = append(errs, c.Webhook.validate("Webhook")...)
	errs = append(errs, c.Poll.validate("Poll")...)
	if c.ReconOwner == "" {
		errs = append(errs, errors.New("ReconOwner is empty"))
	}
	if c.ReconRoutingKey == "" {
		errs = append(errs, errors.New("ReconRoutingKey is empty"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// Spend is the spend path's state, split by role. Each role is safe for
// concurrent use and shares the one configuration.
//
// The roles share one state and differ only in their method sets, and
// that is their purpose: each role is one job a reader can name, after
// the glossary's words, and each method set is written down where it is
// implemented. The spend worker uses [*Ledger] (and [*Buckets] for
// providers' alerts); the reconciler [*Ledger], [*Recon], [*Buckets],
// [*SumsPages], [*Caps] and [*Workloads]; the operators [*Workloads] and
// [*Caps]; the explain commands [*Explainer]. A role is a concrete type
// rather than an interface: each has one implementation, which tests run
// against the embedded DynamoDB.
type Spend struct {
	// Workloads is the registry: workloads, their references, their hold
	// policy, retirement and the fleet.
	Workloads *Workloads
	// Caps sets a workload's cap and step, resumes it, enforces the cap
	// and answers admission.
	Caps *Caps
	// Ledger applies usage records (deferral, disagreement, enforcement,
	// quarantine) and reads the entries, deferred and quarantined records
	// they leave.
	Ledger *Ledger
	// Buckets keeps a provider of sums' buckets: their heads, the
	// provider's observations, settling, retiring and threshold alerts.
	Buckets *Buckets
	// Recon is what reconciliation settles and records: webhook entries'
	// markers, deferred records past their deadline, its runs and its
	// published schedule.
	Recon *Recon
	// SumsPages pages the reconciliation owner about a sums source's
	// reads.
	SumsPages *SumsPages
	// Explainer assembles the trace behind a page.
	Explainer *Explainer
}

// Workloads is the workload registry: workloads, their references (the
// aliases a record names them by), their hold policy and the fleet.
type Workloads struct{ *core }

// Caps is a workload's cap and what enforces it: the cap and escalation
// step an operator sets, resuming a paused workload, the reconciler's
// recheck of a total, and admission.
type Caps struct{ *core }

// Ledger applies usage records to the ledger and reads what they left:
// entries, deferred and quarantined records.
type Ledger struct{ *core }

// Buckets keeps the buckets of a provider of sums: the head of each
// workload's bucket (what the webhook path counted and the provider's
// latest value), the provider's observations, settling and retiring
// buckets, and providers' threshold alerts against a bucket's count.
// An entry is one record's effect; a bucket sums many records' and the
// provider's count over one time window. See doc.go.
type Buckets struct{ *core }

// Recon is what reconciliation settles and records of the ledger: the
// markers of webhook entries the export confirms or never shows, the
// deferred records past their deadline, the record of its runs and its
// published run schedule. The reconciler applies what the export holds
// through [Ledger].
type Recon struct{ *core }

// SumsPages pages the reconciliation owner, once each, about a sums
// source's reads: one refused, one failed, a source failing or stalled,
// a sweep behind.
type SumsPages struct{ *core }

// Explainer explains a workload's caps and pages, and an event's way
// through the ledger, from the records the other roles wrote.
type Explainer struct{ *core }

// core is the configuration and the DynamoDB plumbing every role shares.
type core struct {
	db         DB
	ledger     string
	workloads  string
	pages      Pages
	contracts  map[string]PathContract
	owner      string
	routingKey string
	source     string
	metrics    Metrics
	log        *slog.Logger
	now        func() time.Time
	sums       bucketing
	// periods keeps each workload's period as last read (periods.go).
	periods periodCache
}

// New returns the roles of the spend path for cfg.
func New(cfg Config) (*Spend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &core{
		db: cfg.DB, ledger: cfg.LedgerTable, workloads: cfg.WorkloadsTable, pages: cfg.Pages,
		contracts: map[string]PathContract{PathWebhook: cfg.Webhook, PathPoll: cfg.Poll},
		owner:     cfg.ReconOwner, routingKey: cfg.ReconRoutingKey, source: cmp.Or(cfg.Source, "hookline-spend"),
		metrics: cfg.Metrics, log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)), now: cfg.Now,
		sums: bucketing{sources: cfg.Sums},
	}
	if s.metrics == nil {
		s.metrics = noMetrics{}
	}
	if s.now == nil {
		s.now = time.Now
	}
	return &Spend{Workloads: s.asWorkloads(), Caps: s.asCaps(), Ledger: s.asLedger(), Buckets: s.asBuckets(), Recon: &Recon{s},
		SumsPages: &SumsPages{s}, Explainer: &Explainer{s}}, nil
}

func (c *core) asWorkloads() *Workloads { return &Workloads{c} }
func (c *core) asCaps() *Caps           { return &Caps{c} }
func (c *core) asLedger() *Ledger       { return &Ledger{c} }
func (c *core) asBuckets() *Buckets     { return &Buckets{c} }

// Contract returns the contract of an intake path ("webhook" or "poll").
func (s *Ledger) Contract(path string) (PathContract, bool) {
	c, ok := s.contracts[path]
	return c, ok
}

type noMetrics struct{}

func (noMetrics) Count(string, int64, map[string]string)            {}
func (noMetrics) Duration(string, time.Duration, map[string]string) {}
