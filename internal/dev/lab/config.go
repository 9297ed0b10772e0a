package lab

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/stack"
)

// ErrInvalidConfig reports a [Config] or spike that cannot work.
var ErrInvalidConfig = errors.New("lab: invalid config")

// Config is one experiment.
type Config struct {
	// Name labels the experiment in reports ("idempotency-on").
	Name string
	// Rate is the offered load in webhooks/s, open loop. Default 500.
	Rate float64
	// Duration is how long load is offered. Default 60s.
	Duration time.Duration
	// Warmup is how long load is offered at Rate before the run, without
	// lost acknowledgements or provider faults, and then forgotten (0:
	// none; the command line's default is 5s).
	Warmup time.Duration
	// LostAcks is the share of SQS acknowledgements lost. Default 0.002.
	LostAcks float64
	// Idempotency turns the worker's registry (and its lookups) on.
	Idempotency bool
	// Spike multiplies the rate for a while.
	Spike Spike
	// Profile is the provider's idempotency profile. The default ignores
	// keys, so only the worker's own idempotency prevents duplicates.
	Profile providersim.Profile
	// FaultRate is the share of charge calls that fail in a hostile way
	// (commit then 502, dropped connections, slow commits, ...).
	FaultRate float64
	// AWSLatency is added to every call the local DynamoDB and SQS answer,
	// as a network round trip to AWS would (0: none, or
	// HOOKLINE_LOCAL_AWS_LATENCY).
	AWSLatency time.Duration
	// Seed fixes which acknowledgements are lost and which calls fault.
	Seed uint64
	// Burst is how many events the two ceilings are measured with.
	// Default 3000.
	Burst int
	// Drain bounds the wait for the backlog after the load ends. Default
	// 30s; with provider faults, 30s more than the worker's settle time
	// (its settle horizon and clock skew), since an ambiguous charge is
	// retried only after it.
	Drain time.Duration
	// Concurrency is the number of pollers of the payments queue (the
	// event source's concurrency). Default 8.
	Concurrency int
	// GCPercent is the collector's GOGC for the run, restored after it
	// (0: leave the process's own setting). The process holds all of
	// local AWS, the functions and the load; a run reports the setting
	// it had.
	GCPercent int
	// Prices prices the measured calls and capacity units. Default
	// [DefaultPrices].
	Prices *Prices
	// Payload is the body the webhooks carry. Default: the lab's own
	// small event ([SizedPayload] of 0).
	Payload *Payload
	// Progress receives one line a second while the load runs.
	Progress io.Writer
	Logger   *slog.Logger

	// retain, when set, is how long the run keeps intake records and
	// idempotency keys, with the local DynamoDB deleting them once
	// expired: the live lab's (a batch run keeps the template's).
	retain retentions
}

// retentions are how long intake records and idempotency keys are kept;
// zero keeps the template's, and nothing expires.
type retentions struct {
	intake, idempotency time.Duration
}

func (r retentions) set() bool { return r.intake > 0 }

// lookup is what the functions read in place of the template's
// variables for these retentions, then the process environment: a
// receiver drops an event older than MAX_EVENT_AGE, which must be below
// the intake retention.
func (r retentions) lookup() func(string) (string, bool) {
	vars := map[string]string{
		stack.IntakeRetentionVar: r.intake.String(), stack.IdempotencyRetentionVar: r.idempotency.String(),
		"MAX_EVENT_AGE": (r.intake / 2).String(),
	}
	return func(name string) (string, bool) {
		if v, ok := vars[name]; ok {
			return v, true
		}
		return os.LookupEnv(name)
	}
}

// Spike multiplies the rate by Factor from At for For.
type Spike struct {
	Factor  float64
	At, For time.Duration
}

// ParseSpike reads "3x@20s+10s": three times the rate from second 20 for
// 10 seconds. "" is no spike.
func ParseSpike(s string) (Spike, error) {
	if s == "" {
		return Spike{}, nil
	}
	bad := fmt.Errorf("%w: spike %q is not like 3x@20s+10s", ErrInvalidConfig, s)
	factor, rest, ok := strings.Cut(s, "x@")
	if !ok {
		return Spike{}, bad
	}
	at, dur, ok := strings.Cut(rest, "+")
	if !ok {
		return Spike{}, bad
	}
	var sp Spike
	var err1, err2, err3 error
	sp.Factor, err1 = strconv.ParseFloat(factor, 64)
	sp.At, err2 = time.ParseDuration(at)
	sp.For, err3 = time.ParseDuration(dur)
	if err1 != nil || err2 != nil || err3 != nil || sp.Factor <= 0 || sp.At < 0 || sp.For <= 0 {
		return Spike{}, bad
	}
	return sp, nil
}

func (s Spike) String() string {
	if s.Factor == 0 {
		return "none"
	}
	return fmt.Sprintf("%gx@%s+%s", s.Factor, s.At, s.For)
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.Rate == 0 {
		c.Rate = 500
	}
	if c.Duration == 0 {
		c.Duration = time.Minute
	}
	if c.Burst == 0 {
		c.Burst = 3000
	}
	if c.Drain == 0 {
		c.Drain = 30 * time.Second
		if c.FaultRate > 0 {
			c.Drain += paymentworker.DefaultHorizon + paymentworker.DefaultClockSkew
		}
	}
	if c.Concurrency == 0 {
		c.Concurrency = 8
	}
	if c.Prices == nil {
		p := DefaultPrices()
		c.Prices = &p
	}
	if c.Payload == nil {
		c.Payload, _ = SizedPayload(0) // the lab's own event always parses
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Name == "" {
		c.Name = fmt.Sprintf("rate-%g-idempotency-%v", c.Rate, c.Idempotency)
	}
	return c
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if c.Rate < 0 || c.Duration < 0 || c.Warmup < 0 || c.Burst < 0 || c.Drain < 0 || c.Concurrency < 0 || c.AWSLatency < 0 || c.GCPercent < 0 {
		errs = append(errs, errors.New("rate, duration, warm-up, burst, drain, concurrency, AWS latency and GC percent must not be negative"))
	}
	if c.LostAcks < 0 || c.LostAcks > 1 || c.FaultRate < 0 || c.FaultRate > 1 {
		errs = append(errs, errors.New("lost acks and fault rate must lie in [0, 1]"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// rateAt is the offered rate at t into the run.
func (c Config) rateAt(t time.Duration) float64 {
	if c.Spike.Factor > 0 && t >= c.Spike.At && t < c.Spike.At+c.Spike.For {
		return c.Rate * c.Spike.Factor
	}
	return c.Rate
}
