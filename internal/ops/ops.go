package ops

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Errors of the ops package.
var (
	// ErrUnknownQueue means the template has no queue by that name.
	ErrUnknownQueue = errors.New("ops: no such queue in infra/template.yaml")
	// ErrNotDeadLetterQueue means the queue is not a dead-letter queue of
	// any template queue.
	ErrNotDeadLetterQueue = errors.New("ops: not a dead-letter queue in infra/template.yaml")
	// ErrUnknownTable means the template has no table by that name.
	ErrUnknownTable = errors.New("ops: no such table in infra/template.yaml")
	// ErrInvalidOptions means the options of a call contradict each other.
	ErrInvalidOptions = errors.New("ops: invalid options")
	// ErrNoIntake means Replay was called on an Ops built without an intake
	// store.
	ErrNoIntake = errors.New("ops: no intake store configured")
)

// SQSAPI is the part of the SQS client [Ops] uses.
type SQSAPI interface {
	QueueLookupAPI
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	StartMessageMoveTask(context.Context, *sqs.StartMessageMoveTaskInput, ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(context.Context, *sqs.ListMessageMoveTasksInput, ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
}

// Defaults for [Config].
const (
	// DefaultPeekVisibility is how long a peeked message stays hidden if
	// the CLI dies before making it visible again.
	DefaultPeekVisibility = 30 * time.Second
	// DefaultHoldVisibility is how long a redrive keeps hidden the messages
	// it has looked at but not deleted (a dry run's, failures), so that it
	// does not meet them twice; they are made visible at the end.
	DefaultHoldVisibility = 10 * time.Minute
	// DefaultWait is the long-poll wait of each receive; an empty long
	// poll ends a listing.
	DefaultWait = time.Second
)

// Config configures [New].
type Config struct {
	SQS      SQSAPI
	Resolver *Resolver
	// Checkers tell whether a message's effect is already recorded, by the
	// name of the queue the message belongs to (the dead-letter queue's
	// source queue). A queue without one reports "n/a".
	Checkers map[string]Checker
	// Intake reads intake records for Replay; nil disables Replay.
	Intake IntakeReader
	// IdempotencyRetention is how long the workers keep idempotency keys;
	// Replay skips records older than it less ReplayMargin. Zero reads
	// IDEMPOTENCY_RETENTION from the resolver's template.
	IdempotencyRetention time.Duration
	// ReplayMargin defaults to [DefaultReplayMargin].
	ReplayMargin time.Duration
	// PeekVisibility, HoldVisibility and Wait default to the constants
	// above.
	PeekVisibility time.Duration
	HoldVisibility time.Duration
	Wait           time.Duration
	Logger         *slog.Logger
	Now            func() time.Time
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.SQS == nil {
		errs = append(errs, errors.New("ops: SQS client is required"))
	}
	if c.Resolver == nil {
		errs = append(errs, errors.New("ops: resolver is required"))
	}
	if c.PeekVisibility < 0 || c.HoldVisibility < 0 || c.Wait < 0 {
		errs = append(errs, errors.New("ops: visibilities and wait must not be negative"))
	}
	if c.IdempotencyRetention < 0 || c.ReplayMargin < 0 {
		errs = append(errs, errors.New("ops: idempotency retention and replay margin must not be negative"))
	}
	return errors.Join(errs...)
}

// Ops runs the operator's commands against one deployment.
type Ops struct {
	cfg Config
}

// New validates cfg and builds an Ops.
func New(cfg Config) (*Ops, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.PeekVisibility == 0 {
		cfg.PeekVisibility = DefaultPeekVisibility
	}
	if cfg.HoldVisibility == 0 {
		cfg.HoldVisibility = DefaultHoldVisibility
	}
	if cfg.Wait == 0 {
		cfg.Wait = DefaultWait
	}
	if cfg.ReplayMargin == 0 {
		cfg.ReplayMargin = DefaultReplayMargin
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Ops{cfg: cfg}, nil
}
