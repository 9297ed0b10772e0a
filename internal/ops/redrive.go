package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Outcomes of one message in a redrive.
const (
	// OutcomeMoved: sent to the source queue, then deleted from the DLQ.
	OutcomeMoved = "moved"
	// OutcomeSkipped: deleted without resending; its effect is recorded.
	OutcomeSkipped = "skipped"
	// OutcomeFailed: see RedriveItem.Error; the message is still in the DLQ.
	OutcomeFailed = "failed"
	// OutcomeWouldMove and OutcomeWouldSkip are a dry run's answers.
	OutcomeWouldMove = "would move"
	OutcomeWouldSkip = "would skip"
)

// RedriveOptions configures [Ops.Redrive].
type RedriveOptions struct {
	// Queue is the dead-letter queue, by name or logical ID.
	Queue string
	// DryRun reports what would happen and changes nothing.
	DryRun bool
	// SkipCompleted deletes, without resending, messages whose effect is
	// recorded ([Status].Done).
	SkipCompleted bool
	// Rate caps messages handled per second (0: no cap).
	Rate float64
	// Max stops after this many messages (0: all).
	Max int
	// Progress, when set, is called after each message.
	Progress func(Progress)
}

// RedriveItem is what happened to one message.
type RedriveItem struct {
	Message
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
}

// RedriveReport is the result of [Ops.Redrive].
type RedriveReport struct {
	Queue  string        `json:"queue"`
	Source string        `json:"source"`
	DryRun bool          `json:"dry_run"`
	Items  []RedriveItem `json:"items"`
	// Moved, Skipped and Failed count outcomes (a dry run counts what it
	// would do in Moved and Skipped).
	Moved   int `json:"moved"`
	Skipped int `json:"skipped"`
	Failed  int `json:"failed"`
	// Interrupted is true when ctx ended the run between two messages.
	Interrupted bool          `json:"interrupted"`
	Elapsed     time.Duration `json:"elapsed_ns"`
}

// Partial reports whether some messages were not handled as asked.
func (r RedriveReport) Partial() bool { return r.Failed > 0 || r.Interrupted }

// Redrive moves the messages of a dead-letter queue back to its source
// queue one at a time: send to the source queue, then delete from the
// dead-letter queue. A crash or a failed delete between the two leaves the
// message in both queues, never in neither; the workers' idempotency makes
// the extra copy harmless. Messages it could not move, and every message of
// a dry run, are kept hidden during the run (so it meets each message once)
// and made visible again before it returns, even when ctx is cancelled.
//
// An error is returned only when the run could not start or a receive
// failed; per-message failures are in the report.
func (o *Ops) Redrive(ctx context.Context, opts RedriveOptions) (RedriveReport, error) {
	start := o.cfg.Now()
	dlq, src, err := o.cfg.Resolver.DeadLetterQueue(opts.Queue)
	if err != nil {
		return RedriveReport{}, err
	}
	if opts.Max < 0 || opts.Rate < 0 {
		return RedriveReport{}, fmt.Errorf("%w: max and rate must not be negative", ErrInvalidOptions)
	}
	rep := RedriveReport{Queue: dlq.Name, Source: src.Name, DryRun: opts.DryRun}
	dlqURL, err := o.cfg.Resolver.QueueURL(ctx, dlq.Name)
	if err != nil {
		return rep, err
	}
	srcURL, err := o.cfg.Resolver.QueueURL(ctx, src.Name)
	if err != nil {
		return rep, err
	}
	var depth DLQInfo
	depth.Name = dlq.Name
	if err := o.depth(ctx, dlqURL, &depth); err != nil {
		return rep, err
	}
	total := int(depth.Visible)
	if opts.Max > 0 && opts.Max < total {
		total = opts.Max
	}
	r := redrive{o: o, opts: opts, dlqURL: dlqURL, srcURL: srcURL, source: src.Name,
		pace: newPacer(opts.Rate), meter: newMeter(o.cfg.Now, total, opts.Progress), seen: map[string]bool{}}
	defer func() { o.release(ctx, dlqURL, r.held) }()
	err = r.run(ctx, &rep)
	rep.Elapsed = o.cfg.Now().Sub(start)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		rep.Interrupted = true
		return rep, nil
	}
	return rep, err
}

// redrive is the state of one run.
type redrive struct {
	o              *Ops
	opts           RedriveOptions
	dlqURL, srcURL string
	source         string
	pace           *pacer
	meter          *meter
	seen           map[string]bool
	held           []Message
}

func (r *redrive) run(ctx context.Context, rep *RedriveReport) error {
	for r.opts.Max == 0 || len(rep.Items) < r.opts.Max {
		if err := ctx.Err(); err != nil {
			return err
		}
		want := 10
		if r.opts.Max > 0 {
			want = r.opts.Max - len(rep.Items)
		}
		msgs, err := r.o.receive(ctx, r.dlqURL, want, r.o.cfg.HoldVisibility)
		if err != nil {
			return err
		}
		fresh := 0
		for i, m := range msgs {
			if r.seen[m.MessageID] {
				// Back after its hold expired: keep it for the release.
				r.held = append(r.held, m)
				continue
			}
			if err := r.ready(ctx); err != nil {
				r.held = append(r.held, msgs[i:]...)
				return err
			}
			r.seen[m.MessageID] = true
			fresh++
			item := r.one(ctx, m)
			switch item.Outcome {
			case OutcomeMoved, OutcomeWouldMove:
				rep.Moved++
			case OutcomeSkipped, OutcomeWouldSkip:
				rep.Skipped++
			default:
				rep.Failed++
			}
			rep.Items = append(rep.Items, item)
			r.meter.report(len(rep.Items))
		}
		if fresh == 0 {
			return nil
		}
	}
	return nil
}

// ready waits for the rate limit and reports a cancelled ctx.
func (r *redrive) ready(ctx context.Context) error {
	if r.opts.DryRun {
		return ctx.Err()
	}
	return r.pace.wait(ctx)
}

// one handles one message. Anything it does not delete is held for the
// release at the end of the run.
func (r *redrive) one(ctx context.Context, m Message) RedriveItem {
	m.Status = r.o.check(ctx, r.source, m)
	skip := r.opts.SkipCompleted && m.Status.Done
	item := RedriveItem{Message: m}
	if r.opts.DryRun {
		r.held = append(r.held, m)
		item.Outcome = OutcomeWouldMove
		if skip {
			item.Outcome = OutcomeWouldSkip
		}
		return item
	}
	// Once started, a message's send and delete finish even if ctx ends, so
	// an interrupt never leaves a copy in both queues on purpose.
	ctx = context.WithoutCancel(ctx)
	if skip {
		if err := r.delete(ctx, m); err != nil {
			r.held = append(r.held, m)
			item.Outcome, item.Error = OutcomeFailed, "skip: "+err.Error()
			return item
		}
		item.Outcome = OutcomeSkipped
		return item
	}
	if _, err := r.o.cfg.SQS.SendMessage(ctx, m.sendInput(r.srcURL)); err != nil {
		r.held = append(r.held, m)
		item.Outcome, item.Error = OutcomeFailed, "send to "+r.source+": "+err.Error()
		return item
	}
	if err := r.delete(ctx, m); err != nil {
		r.held = append(r.held, m)
		item.Outcome = OutcomeFailed
		item.Error = "sent to " + r.source + " but not deleted from the dead-letter queue (it stays there; the worker's idempotency absorbs the extra copy): " + err.Error()
		return item
	}
	item.Outcome = OutcomeMoved
	return item
}

func (r *redrive) delete(ctx context.Context, m Message) error {
	_, err := r.o.cfg.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.dlqURL), ReceiptHandle: aws.String(m.receipt)})
	if err != nil {
		return fmt.Errorf("delete %s: %w", m.MessageID, err)
	}
	return nil
}
