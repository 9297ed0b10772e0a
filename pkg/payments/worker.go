package payments

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/pkg/emf"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/queue"
)

// Registry is the part of [idempotency.Registry] the worker uses.
type Registry interface {
	Claim(ctx context.Context, key, payloadHash string) (idempotency.Claim, error)
	Complete(ctx context.Context, key, token string, result []byte) error
	Release(ctx context.Context, key, token string) error
}

// Charger is the part of [provider.Client] the worker uses.
type Charger interface {
	ChargeOnce(ctx context.Context, key string, req provider.ChargeRequest) provider.Result
	ResumeCharge(ctx context.Context, key string, req provider.ChargeRequest) provider.Result
}

// Config configures a [Worker].
type Config struct {
	Registry Registry
	Provider Charger
	Queue    Queue
	// Concurrency bounds the records of one batch processed at once
	// (default 10).
	Concurrency int
	// RetryBase is the first backoff of a retriable failure; it doubles
	// with each receive up to 2 minutes (default 2s).
	RetryBase time.Duration
	Metrics   *emf.Logger
	Logger    *slog.Logger
	Now       func() time.Time
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if c.Registry == nil {
		errs = append(errs, errors.New("payments: a registry is required"))
	}
	if c.Provider == nil {
		errs = append(errs, errors.New("payments: a provider client is required"))
	}
	if c.Queue == nil {
		errs = append(errs, errors.New("payments: a queue is required"))
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
	name   string // charged, declined, replayed, in_progress, retry, dead_lettered
	ok     bool   // acknowledged
	reason string
	retry  time.Duration // visibility for a record that comes back; 0 keeps the queue's
}

// process handles one record and reports whether it is acknowledged.
func (w *Worker) process(ctx context.Context, m events.SQSMessage) bool {
	p, err := ParseMessage(m)
	var out outcome
	if err != nil {
		p.Source, p.EventID = cmp.Or(attr(m, "source"), "unknown"), attr(m, "event_id")
		out = outcome{name: "dead_lettered", reason: "malformed_message"}
	} else {
		out = w.pay(ctx, p, receiveCount(m))
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
	dims := emf.Dims{"source": p.Source}
	if out.name == "dead_lettered" {
		reason, _, _ := strings.Cut(out.reason, ":")
		dims["reason"] = reason // payload_mismatch, malformed_message, ... counted apart
	}
	w.cfg.Metrics.Count(out.name, 1, dims)
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

// pay runs claim → charge → complete for one payment.
func (w *Worker) pay(ctx context.Context, p Payment, receives int) outcome {
	claim, err := w.cfg.Registry.Claim(ctx, p.Key(), p.Hash())
	if err != nil {
		return outcome{name: "retry", reason: "registry_unavailable"}
	}
	switch claim.Status {
	case idempotency.AlreadyCompleted:
		return outcome{name: "replayed", ok: true}
	case idempotency.InProgress:
		wait := time.Until(claim.HeldUntil) + time.Second
		return outcome{name: "in_progress", reason: "held_by_another_worker", retry: max(wait, time.Second)}
	case idempotency.PayloadMismatch:
		return outcome{name: "dead_lettered", reason: "payload_mismatch"}
	}
	charge := w.cfg.Provider.ChargeOnce
	if claim.Takeover || receives > 1 {
		// An earlier attempt may have charged and died before Complete.
		charge = w.cfg.Provider.ResumeCharge
	}
	res := charge(ctx, p.Key(), p.Charge)
	return w.settle(ctx, p, claim.Token, res, receives)
}

// settle records a charge result, or decides what a failure means.
func (w *Worker) settle(ctx context.Context, p Payment, token string, res provider.Result, receives int) outcome {
	switch res.Outcome {
	case provider.Succeeded, provider.Declined:
		result, _ := json.Marshal(resultOf(res.Charge))
		if err := w.cfg.Registry.Complete(ctx, p.Key(), token, result); err != nil {
			// The charge exists at the provider; a redelivery looks it up
			// instead of charging again.
			return outcome{name: "retry", reason: "complete_failed", retry: w.backoff(receives)}
		}
		if res.Outcome == provider.Declined {
			return outcome{name: "declined", ok: true, reason: res.Charge.DeclineCode}
		}
		return outcome{name: "charged", ok: true}
	case provider.Rejected:
		w.release(ctx, p, token)
		return outcome{name: "dead_lettered", reason: "provider_rejected"}
	case provider.Retriable:
		w.release(ctx, p, token)
		wait := max(res.RetryAfter, w.backoff(receives))
		return outcome{name: "retry", reason: "provider_retriable", retry: wait}
	}
	// Unknown: keep the claim. A redelivery after the claim's window takes
	// it over and looks the charge up before anything else.
	return outcome{name: "retry", reason: "provider_outcome_unknown"}
}

func (w *Worker) release(ctx context.Context, p Payment, token string) {
	if err := w.cfg.Registry.Release(ctx, p.Key(), token); err != nil {
		w.cfg.Logger.WarnContext(ctx, "release claim", "event_id", p.EventID, "err", err)
	}
}

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
