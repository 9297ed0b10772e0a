package spendworker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/sums"
	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/queue"
)

// ErrMalformed means a message is not a usable usage event.
var ErrMalformed = errors.New("spendworker: malformed usage message")

// Ledger is the part of [spend.Ledger] the worker uses: it applies usage
// records.
type Ledger interface {
	Apply(ctx context.Context, u spend.Usage) (spend.Result, error)
}

var _ Ledger = (*spend.Ledger)(nil)

// Alerter records a provider's threshold alert against the count of its
// bucket; [*spend.Buckets] is one.
type Alerter interface {
	RecordAlert(ctx context.Context, a spend.Alert, nextRun time.Time) (spend.AlertResult, error)
}

var _ Alerter = (*spend.Buckets)(nil)

// BatchLedger applies a whole batch's records, with one ledger
// transaction per workload; [*spend.Ledger] is one. A Ledger that is also
// a BatchLedger gets each SQS batch in one call, so that a hot workload's
// item is written once per batch rather than once per record.
type BatchLedger interface {
	ApplyBatch(ctx context.Context, us []spend.Usage) ([]spend.Result, []error)
}

var _ BatchLedger = (*spend.Ledger)(nil)

// Quarantiner stores a record the ledger refused and pages its owner once;
// [*spend.Ledger] is one. A Ledger that is also a Quarantiner gets refused
// records quarantined and acknowledged; otherwise they are dead-lettered.
type Quarantiner interface {
	Quarantine(ctx context.Context, u spend.Usage, reason string) (spend.QuarantineRecord, bool, error)
}

var _ Quarantiner = (*spend.Ledger)(nil)

// Flusher sends pending pages; [pager.Outbox] is one.
type Flusher interface {
	Flush(ctx context.Context) (pager.FlushResult, error)
}

// KeyFlusher sends the pending pages with the given dedup keys;
// [*pager.Outbox] is one. A Pages that is also a KeyFlusher is flushed
// by the keys of the pages this batch enqueued, with a full Flush at most
// every FullFlushEvery (and after a send failed), so that the cost of a
// batch does not grow with the outbox.
type KeyFlusher interface {
	FlushKeys(ctx context.Context, keys []string) (pager.FlushResult, error)
}

var _ KeyFlusher = (*pager.Outbox)(nil)

// FullFlushEvery bounds how long a page enqueued by an earlier, crashed
// invocation can wait for a worker's flush.
const FullFlushEvery = 30 * time.Second

// Metrics the spend worker emits besides the ledger's own.
const (
	MetricUsageEvents       = "UsageEvents"       // one per record, by Outcome
	MetricUsageDeadLettered = "UsageDeadLettered" // by Reason
	MetricUsageToIntake     = "UsageToIntake"     // the usage's time to the intake record
	MetricIntakeToLedger    = "IntakeToLedger"    // the intake record to the ledger entry
	MetricUsageAlerts       = "UsageAlerts"       // one per alert recorded, by Outcome (paged, recorded, duplicate)
)

// Queue is what the worker needs from the queue it consumes.
type Queue interface {
	DeadLetter(ctx context.Context, m events.SQSMessage, reason string) error
}

// Config configures a [Worker].
type Config struct {
	Ledger      Ledger
	Pages       Flusher
	Queue       Queue
	Concurrency int
	Metrics     *emf.Logger
	Logger      *slog.Logger
	Now         func() time.Time
	// Attributions, if set, records each event's intake state (attributed,
	// deferred, quarantined) on its intake record.
	Attributions Attributor
	// Sums are the providers of sums (SUM_SOURCES): a provider's threshold
	// alert is compared with the ledger's count of the meter of the sums
	// source of its usage source. Workloads resolves an alert's customer
	// to its workload, Alerts records the alert, and PollInterval is the
	// reconciler's base interval (POLL_INTERVAL): an alert asks the
	// workload to be read on the next run, at most that far off. All three
	// are required with Sums.
	Sums         sums.Sources
	Workloads    Resolver
	Alerts       Alerter
	PollInterval time.Duration
}

// Resolver returns the workload a reference (an alias) maps to, or
// [spend.ErrUnknownWorkload]; [*spend.Workloads] is one. It reads with
// GetItem, which the worker's role may call on the workloads table.
type Resolver interface {
	Resolve(ctx context.Context, ref string) (spend.Workload, error)
}

var _ Resolver = (*spend.Workloads)(nil)

// Worker handles SQS batches from the usage queue.
type Worker struct {
	cfg Config

	mu       sync.Mutex
	lastFull time.Time // last full Flush
	backlog  bool      // a send failed: the next flush is a full one
}

// pageKeys collects the dedup keys of the pages one batch enqueued.
type pageKeys struct {
	mu   sync.Mutex
	keys []string
}

func (k *pageKeys) add(keys ...string) {
	k.mu.Lock()
	k.keys = append(k.keys, keys...)
	k.mu.Unlock()
}

// New validates cfg and builds a Worker.
func New(cfg Config) (*Worker, error) {
	if cfg.Ledger == nil || cfg.Queue == nil {
		return nil, errors.New("spendworker: a ledger and a queue are required")
	}
	if len(cfg.Sums) > 0 && (cfg.Workloads == nil || cfg.Alerts == nil || cfg.PollInterval <= 0) {
		return nil, errors.New("spendworker: sums sources need the workloads to resolve alerts, the alerts' recorder and the reconciler's poll interval")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 10
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Worker{cfg: cfg}, nil
}

// Handle is the Lambda entry point.
func (w *Worker) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	keys := &pageKeys{}
	var resp events.SQSEventResponse
	if bl, ok := w.cfg.Ledger.(BatchLedger); ok {
		resp = w.handleBatch(ctx, bl, ev, keys)
	} else {
		resp = queue.HandleBatch(ctx, ev, w.cfg.Concurrency, func(ctx context.Context, m events.SQSMessage) bool {
			return w.process(ctx, m, keys)
		})
	}
	w.flush(ctx, keys.keys)
	return resp, nil
}

// handleBatch applies the batch's records with one ApplyBatch call, then
// finishes each record (quarantine, attribution mark, metrics) as
// [Worker.process] does, at most Concurrency at a time.
func (w *Worker) handleBatch(ctx context.Context, bl BatchLedger, ev events.SQSEvent, keys *pageKeys) events.SQSEventResponse {
	now := w.cfg.Now()
	msgs := make([]parsed, len(ev.Records))
	parseErrs := make([]error, len(ev.Records))
	var us []spend.Usage
	var at []int // at[k] is the message of us[k]
	for i, m := range ev.Records {
		msgs[i], parseErrs[i] = parse(m, now)
		if parseErrs[i] == nil && msgs[i].counts() {
			us = append(us, msgs[i].u)
			at = append(at, i)
		}
	}
	results := make([]spend.Result, len(ev.Records))
	errs := make([]error, len(ev.Records))
	if len(us) > 0 {
		rs, es := bl.ApplyBatch(ctx, us)
		for k, i := range at {
			results[i], errs[i] = rs[k], es[k]
		}
	}
	acked := make([]bool, len(ev.Records))
	var wg sync.WaitGroup
	sem := make(chan struct{}, w.cfg.Concurrency)
	for i := range ev.Records {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			switch {
			case parseErrs[i] != nil:
				acked[i] = w.malformed(ctx, ev.Records[i], parseErrs[i])
			case msgs[i].outcome == usagein.OutcomeAlert:
				acked[i] = w.alert(ctx, msgs[i], keys)
			case !msgs[i].counts():
				acked[i] = w.uncounted(ctx, msgs[i])
			default:
				acked[i] = w.finish(ctx, msgs[i], results[i], errs[i], keys)
			}
		})
	}
	wg.Wait()
	var resp events.SQSEventResponse
	for i, m := range ev.Records {
		if !acked[i] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
	}
	return resp
}

// flush sends the pages this batch enqueued, or every pending page when a
// full flush is due.
func (w *Worker) flush(ctx context.Context, keys []string) {
	if w.cfg.Pages == nil {
		return
	}
	kf, byKey := w.cfg.Pages.(KeyFlusher)
	now := w.cfg.Now()
	w.mu.Lock()
	full := !byKey || w.backlog || now.Sub(w.lastFull) >= FullFlushEvery
	if full {
		w.lastFull, w.backlog = now, false
	}
	w.mu.Unlock()
	var res pager.FlushResult
	var err error
	switch {
	case full:
		res, err = w.cfg.Pages.Flush(ctx)
	case len(keys) > 0:
		res, err = kf.FlushKeys(ctx, keys)
	default:
		return
	}
	if err != nil || res.Retried > 0 {
		w.mu.Lock()
		w.backlog = true
		w.mu.Unlock()
	}
	if err != nil {
		w.cfg.Logger.WarnContext(ctx, "page flush failed; pages stay in the outbox", "err", err)
	}
}

// process applies one record and reports whether it is acknowledged.
func (w *Worker) process(ctx context.Context, m events.SQSMessage, keys *pageKeys) bool {
	p, err := parse(m, w.cfg.Now())
	switch {
	case err != nil:
		return w.malformed(ctx, m, err)
	case p.outcome == usagein.OutcomeAlert:
		return w.alert(ctx, p, keys)
	case !p.counts():
		return w.uncounted(ctx, p)
	}
	res, err := w.cfg.Ledger.Apply(ctx, p.u)
	return w.finish(ctx, p, res, err, keys)
}

// finish completes one record after the ledger: a refused record is
// quarantined, a failed one returns to the queue, an applied one is
// marked on its intake record and counted. It reports whether the message
// is acknowledged.
func (w *Worker) finish(ctx context.Context, p parsed, res spend.Result, err error, keys *pageKeys) bool {
	m, u := p.m, p.u
	if spend.IsRefused(err) {
		return w.refused(ctx, m, u, err, keys)
	}
	if err != nil {
		w.cfg.Logger.WarnContext(ctx, "usage not applied; record returns to the queue", "record_id", u.RecordID, "err", err)
		return false
	}
	for _, d := range res.Decisions {
		keys.add(d.DedupKey)
	}
	if res.Disagreement != nil {
		keys.add(res.Disagreement.DedupKey)
	}
	state, workload, reason := attributionOf(res)
	if !w.markAttribution(ctx, m, u, state, workload, reason) {
		return false
	}
	w.observe(u, p.receivedAt, res)
	w.cfg.Logger.InfoContext(ctx, "usage "+string(res.Outcome), "record_id", u.RecordID, "event_id", u.EventID,
		"workload", res.WorkloadID, "total", res.Total, "decisions", len(res.Decisions))
	return true
}

// observe emits the intake-state count and the cap-path latencies.
func (w *Worker) observe(u spend.Usage, receivedAt time.Time, res spend.Result) {
	dims := emf.Dims{"Outcome": string(res.Outcome)}
	w.cfg.Metrics.Count(MetricUsageEvents, 1, dims)
	if !receivedAt.IsZero() {
		w.cfg.Metrics.Duration(MetricUsageToIntake, receivedAt.Sub(u.OccurredAt), nil)
		w.cfg.Metrics.Duration(MetricIntakeToLedger, u.ObservedAt.Sub(receivedAt), nil)
	}
}

// refused quarantines a record the ledger refuses for good (retrying
// cannot apply it): it is stored with the reason and paged once to the
// reconciliation owner, and the message is acknowledged.
func (w *Worker) refused(ctx context.Context, m events.SQSMessage, u spend.Usage, cause error, keys *pageKeys) bool {
	q, ok := w.cfg.Ledger.(Quarantiner)
	if !ok {
		return w.deadLetter(ctx, m, "invalid_usage", "invalid_usage")
	}
	rec, _, err := q.Quarantine(ctx, u, cause.Error())
	if err != nil {
		w.cfg.Logger.WarnContext(ctx, "quarantine failed; record returns to the queue", "record_id", u.RecordID, "err", err)
		return false
	}
	keys.add(rec.DedupKey)
	if !w.markAttribution(ctx, m, u, intake.AttributionQuarantined, "", cause.Error()) {
		return false
	}
	w.cfg.Logger.WarnContext(ctx, "usage quarantined", "record_id", u.RecordID, "event_id", u.EventID, "reason", cause.Error())
	w.cfg.Metrics.Count(MetricUsageEvents, 1, emf.Dims{"Outcome": "quarantined"})
	return true
}

// Reasons a usage message is dead-lettered for, as the Reason dimension
// of [MetricUsageDeadLettered].
const (
	ReasonMalformed    = "malformed_message" // not a usage event at all
	ReasonInvalidUsage = "invalid_usage"     // a usage event the ledger cannot count
)

// malformed dead-letters a message the usage schema refuses, with a
// reason that names the field ("invalid_usage: data.units: ..."), and
// logs it. The door refuses such bodies already; this is the second line,
// for messages queued before it or sent around it.
func (w *Worker) malformed(ctx context.Context, m events.SQSMessage, err error) bool {
	code, detail, field, why := ReasonMalformed, ReasonMalformed, "", ""
	if fe, ok := provider.AsFieldError(err); ok {
		code, field, why = ReasonInvalidUsage, fe.Field, fe.Reason
		detail = code + ": " + strings.TrimPrefix(fe.Error(), "provider: invalid usage: ")
	}
	w.cfg.Logger.WarnContext(ctx, "usage message refused", "message_id", m.MessageId,
		"event_id", attr(m, "event_id"), "reason", code, "field", field, "why", why)
	return w.deadLetter(ctx, m, code, detail)
}

// deadLetter moves m to the DLQ with detail as its failure_reason, and
// counts it under code.
func (w *Worker) deadLetter(ctx context.Context, m events.SQSMessage, code, detail string) bool {
	if err := w.cfg.Queue.DeadLetter(ctx, m, detail); err != nil {
		w.cfg.Logger.ErrorContext(ctx, "dead-letter failed", "message_id", m.MessageId, "err", err)
		return false
	}
	w.cfg.Metrics.Count(MetricUsageDeadLettered, 1, emf.Dims{"Reason": code})
	return true
}

func attr(m events.SQSMessage, name string) string {
	if a, ok := m.MessageAttributes[name]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}
