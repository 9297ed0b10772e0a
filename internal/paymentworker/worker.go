package paymentworker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/queue"
)

// Metrics the worker emits, one per message, with the dimension Source
// (and Reason for dead letters).
const (
	MetricCharged      = "PaymentCharged"
	MetricDeclined     = "PaymentDeclined"
	MetricReplayed     = "PaymentReplayed"     // already completed: acknowledged, not charged
	MetricInProgress   = "PaymentInProgress"   // another worker holds the key
	MetricRetry        = "PaymentRetry"        // left on the queue to try again
	MetricDeadLettered = "PaymentDeadLettered" // sent to the DLQ with its reason
	MetricNotAnEffect  = "PaymentNotAnEffect"  // not a payment by its source's rule: acknowledged, recorded
)

// outcomeMetrics names the metric of each outcome.
var outcomeMetrics = map[string]string{
	"charged": MetricCharged, "declined": MetricDeclined, "replayed": MetricReplayed,
	"in_progress": MetricInProgress, "retry": MetricRetry, "dead_lettered": MetricDeadLettered,
	"not_an_effect": MetricNotAnEffect,
}

// Registry is the part of [idempotency.Registry] the worker uses.
type Registry interface {
	Claim(ctx context.Context, key, payloadHash string) (idempotency.Claim, error)
	Status(ctx context.Context, key string) (idempotency.Record, bool, error)
	Complete(ctx context.Context, key, token string, result []byte) error
	CompleteFor(ctx context.Context, key, token string, result []byte, keep time.Duration) error
	Release(ctx context.Context, key, token string, retryAt time.Time) error
}

// Charger is the provider as the worker uses it ([provider.Client]): one
// charge call that never re-sends after an ambiguous answer, and a lookup
// by idempotency key.
type Charger interface {
	CreateCharge(ctx context.Context, key string, req provider.ChargeRequest) provider.Result
	LookupCharge(ctx context.Context, key string) (*provider.Charge, bool, error)
}

// Defaults for [Config].
const (
	DefaultHorizon   = 30 * time.Second
	DefaultClockSkew = time.Second
	// DefaultEffectRetention keeps the effect keys of unstamped
	// deliveries for 400 days: a record of a few hundred bytes a payment.
	DefaultEffectRetention = 400 * 24 * time.Hour
)

// Config configures a [Worker].
type Config struct {
	Registry Registry
	// Provider is the effect of a source whose mapping names none.
	Provider Charger
	// Effects are the clients of the effects a mapping may name
	// ([EffectContract], [EffectStripe]).
	Effects map[string]Charger
	Queue   Queue
	// Mappings says how each source's body becomes a charge (nil:
	// [HooklineMapping] for every source).
	Mappings *Mappings
	// Fetchers read the objects of unsigned webhooks (Mollie's) before
	// anything is acted on, by provider name ("mollie").
	Fetchers map[string]Fetcher
	// Concurrency bounds the records of one batch processed at once
	// (default 10).
	Concurrency int
	// RetryBase is the first backoff of a retriable failure; it doubles
	// with each receive up to 2 minutes (default 2s).
	RetryBase time.Duration
	// Horizon is the provider's settle horizon (docs/provider-contract.md):
	// how long after a charge call ends the provider may still commit it,
	// plus how long its lookup may lag a commit. Default 30s. Every charge
	// call ends Horizon + ClockSkew before its claim's lease does, so a
	// takeover's lookup sees everything the call did.
	Horizon time.Duration
	// ClockSkew bounds the difference between the clocks of two workers.
	// Default 1s.
	ClockSkew time.Duration
	// EffectRetention is how long the key of an effect made from a
	// delivery with no signed time (Adyen, GitHub, Shopify, Mollie) is
	// kept: a replay of such a delivery after the intake and the
	// registry's retention has only this key to stop it. Default
	// [DefaultEffectRetention].
	EffectRetention time.Duration
	Metrics         *emf.Logger
	Logger          *slog.Logger
	Now             func() time.Time
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if c.Registry == nil {
		errs = append(errs, errors.New("paymentworker: a registry is required"))
	}
	if c.Provider == nil {
		errs = append(errs, errors.New("paymentworker: a provider client is required"))
	}
	if c.Queue == nil {
		errs = append(errs, errors.New("paymentworker: a queue is required"))
	}
	needed := c.Mappings.effectsNeeded()
	for _, source := range slices.Sorted(maps.Keys(needed)) {
		if c.Effects[needed[source]] == nil {
			errs = append(errs, fmt.Errorf("%w: source %q: effect %q is configured for no service (docs/providers.md)", errNoCharger, source, needed[source]))
		}
	}
	return errors.Join(errs...)
}

// Worker handles SQS batches from the payments queue.
type Worker struct {
	cfg Config
}

// New validates cfg and builds a Worker.
func New(cfg Config) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 10
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 2 * time.Second
	}
	if cfg.Horizon <= 0 {
		cfg.Horizon = DefaultHorizon
	}
	if cfg.ClockSkew <= 0 {
		cfg.ClockSkew = DefaultClockSkew
	}
	cfg.EffectRetention = cmp.Or(cfg.EffectRetention, DefaultEffectRetention)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Worker{cfg: cfg}, nil
}

// Handle is the Lambda entry point. It returns only the records that must
// come back; everything else is acknowledged.
func (w *Worker) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return queue.HandleBatch(ctx, ev, w.cfg.Concurrency, w.process), nil
}

// outcome is how one record ended, for logs and metrics.
type outcome struct {
	name   string // charged, declined, replayed, in_progress, retry, dead_lettered, not_an_effect
	ok     bool   // acknowledged
	reason string
	retry  time.Duration // visibility for a record that comes back; 0 keeps the queue's
}

// process handles one record and reports whether it is acknowledged.
func (w *Worker) process(ctx context.Context, m events.SQSMessage) bool {
	m, fetchOut := w.fetchUntrusted(ctx, m)
	p, err := ParseMessageWith(m, w.cfg.Mappings)
	var out outcome
	if fetchOut != nil {
		p.Source, p.EventID = cmp.Or(attr(m, "source"), "unknown"), attr(m, "event_id")
		out = *fetchOut
	} else if err != nil {
		p.Source, p.EventID = cmp.Or(attr(m, "source"), "unknown"), attr(m, "event_id")
		out = outcome{name: "dead_lettered", reason: MalformedReason(err)}
	} else if p.NotAnEffect != "" {
		out = outcome{name: "not_an_effect", ok: true, reason: "not_acting: " + p.NotAnEffect}
	} else {
		out = w.pay(ctx, p, receiveCount(m))
	}
	if out.name == "not_an_effect" {
		out = w.recordNoEffect(ctx, p, out)
	}
	if !out.ok && out.name != "dead_lettered" && receiveCount(m) >= w.cfg.Queue.MaxReceiveCount(ctx) {
		// The last receive: dead-letter it ourselves so the reason travels.
		out = outcome{name: "dead_lettered", reason: "retries_exhausted: " + out.reason}
	}
	if out.name == "dead_lettered" {
		out.ok = w.deadLetter(ctx, m, out.reason)
	} else if !out.ok && out.retry > 0 {
		w.cfg.Queue.RetryAfter(ctx, m.ReceiptHandle, out.retry)
	}
	dims := emf.Dims{"Source": p.Source}
	if out.name == "dead_lettered" || out.name == "not_an_effect" {
		reason, _, _ := strings.Cut(out.reason, ":")
		dims["Reason"] = reason // payload_mismatch, malformed_message, not_acting, ... counted apart
	}
	w.cfg.Metrics.Count(outcomeMetrics[out.name], 1, dims)
	level := slog.LevelInfo
	if !out.ok {
		level = slog.LevelWarn
	}
	w.cfg.Logger.Log(ctx, level, "payment "+out.name, "event_id", p.EventID, "message_id", m.MessageId, "receive_count", receiveCount(m), "reason", out.reason)
	return out.ok
}

func receiveCount(m events.SQSMessage) int {
	n, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
	return max(n, 1)
}

// pay claims the payment's key and runs one attempt at charging it.
func (w *Worker) pay(ctx context.Context, p Payment, receives int) outcome {
	charger := w.cfg.Provider
	if p.Effect != "" {
		charger = w.cfg.Effects[p.Effect]
	}
	if charger == nil {
		return outcome{name: "dead_lettered", reason: "malformed_message: effect " + p.Effect + " is configured for no service"}
	}
	if out, done := w.legacyOutcome(ctx, p, charger, receives); done {
		return out
	}
	claim, err := w.cfg.Registry.Claim(ctx, p.Key(), p.Hash())
	if err != nil {
		return outcome{name: "retry", reason: "registry_unavailable"}
	}
	switch claim.Status {
	case idempotency.StatusAlreadyCompleted:
		return outcome{name: "replayed", ok: true}
	case idempotency.StatusInProgress:
		wait := time.Until(claim.HeldUntil) + time.Second
		return outcome{name: "in_progress", reason: "held_by_another_worker", retry: max(wait, time.Second)}
	case idempotency.StatusPayloadMismatch:
		return outcome{name: "dead_lettered", reason: "payload_mismatch"}
	}
	a := attempt{w: w, charger: charger, p: p, claim: claim, receives: receives}
	return a.run(ctx)
}

// keep is how long p's completed key is kept beyond the registry's
// retention: the effect retention for an unstamped payment, else none.
func (w *Worker) keep(p Payment) time.Duration {
	if p.Unstamped {
		return w.cfg.EffectRetention
	}
	return 0
}

// settleTime is how long after a provider call ends its effects may still
// appear: the provider's horizon plus the clock skew between workers.
func (w *Worker) settleTime() time.Duration { return w.cfg.Horizon + w.cfg.ClockSkew }

// backoff grows with each receive: RetryBase, twice that, ... capped at 2
// minutes.
func (w *Worker) backoff(receives int) time.Duration {
	d := w.cfg.RetryBase << min(receives-1, 10)
	return min(d, 2*time.Minute)
}

// Queue is what the worker needs from the queue it consumes.
type Queue interface {
	// RetryAfter makes a failed record visible again after d.
	RetryAfter(ctx context.Context, receipt string, d time.Duration)
	// DeadLetter sends a copy of m to the dead-letter queue with reason.
	DeadLetter(ctx context.Context, m events.SQSMessage, reason string) error
	// MaxReceiveCount is the source queue's redrive maxReceiveCount.
	MaxReceiveCount(ctx context.Context) int
}

func (w *Worker) deadLetter(ctx context.Context, m events.SQSMessage, reason string) bool {
	if err := w.cfg.Queue.DeadLetter(ctx, m, reason); err != nil {
		w.cfg.Logger.ErrorContext(ctx, "dead-letter failed; record returns to the queue", "message_id", m.MessageId, "err", err)
		return false
	}
	return true
}

// recordNoEffect records durably that an event has no effect, and why,
// under a key no payment can have ("!" never starts a source name). A
// store that cannot record it now leaves the message to come back.
func (w *Worker) recordNoEffect(ctx context.Context, p Payment, out outcome) outcome {
	key := "!none:" + p.Source + ":" + p.EventID
	claim, err := w.cfg.Registry.Claim(ctx, key, idempotency.Hash(out.reason))
	switch {
	case err != nil:
		return outcome{name: "retry", reason: "registry_unavailable"}
	case claim.Status != idempotency.StatusClaimed:
		return out // recorded before, or being recorded
	}
	result, _ := json.Marshal(struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	}{"not_an_effect", out.reason})
	if err := w.cfg.Registry.Complete(ctx, key, claim.Token, result); err != nil {
		return outcome{name: "retry", reason: "registry_unavailable"}
	}
	return out
}
