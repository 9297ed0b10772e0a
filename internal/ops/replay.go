package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/pkg/idempotency"
)

// IntakeReader is the part of [intake.Store] Replay uses.
type IntakeReader interface {
	Get(ctx context.Context, source, eventID string) (intake.Record, bool, error)
	ReceivedBetween(ctx context.Context, source string, since, until time.Time, fn func(eventID string, receivedAt time.Time) error) error
}

var _ IntakeReader = (*intake.Store)(nil)

// Outcomes of one record in a replay.
const (
	OutcomeSent      = "sent"
	OutcomeWouldSend = "would send"
	OutcomeMissing   = "missing"
	// OutcomeTooOld: the record is too old to replay safely; Reason says
	// why. It is skipped, not sent.
	OutcomeTooOld = "too old"
)

// Reasons a replay skips a record.
const (
	// ReasonIntakeExpired: the intake record is past its expires_at.
	// DynamoDB deletes expired items lazily, so it may still be read.
	ReasonIntakeExpired = "intake_expired"
	// ReasonKeyRetention: the record was received longer ago than the
	// idempotency retention less [DefaultReplayMargin]; its key may be gone,
	// so the worker would claim the event afresh and charge it again.
	ReasonKeyRetention = "past_idempotency_retention"
)

// DefaultReplayMargin is how much younger than the idempotency retention
// a record must be to be replayed: time for the replayed message to wait on
// the queue and be retried before the worker claims its key, and for clock
// skew.
const DefaultReplayMargin = 24 * time.Hour

// ReplayOptions configures [Ops.Replay]: either EventIDs, or a time range.
type ReplayOptions struct {
	Source string
	// EventIDs replays these events.
	EventIDs []string
	// Since and Until (inclusive) replay every event of Source received in
	// the range, oldest first.
	Since, Until time.Time
	DryRun       bool
	// Rate caps records sent per second (0: no cap).
	Rate float64
	// Max stops after this many records (0: all).
	Max int
	// Progress, when set, is called after each record.
	Progress func(Progress)
}

func (o ReplayOptions) validate() error {
	var errs []error
	if o.Source == "" {
		errs = append(errs, errors.New("a source is required"))
	}
	byTime := !o.Since.IsZero() || !o.Until.IsZero()
	switch {
	case len(o.EventIDs) > 0 && byTime:
		errs = append(errs, errors.New("give event IDs or a time range, not both"))
	case len(o.EventIDs) == 0 && !byTime:
		errs = append(errs, errors.New("give event IDs or a time range"))
	case byTime && (o.Since.IsZero() || o.Until.IsZero()):
		errs = append(errs, errors.New("a time range needs both since and until"))
	case byTime && o.Until.Before(o.Since):
		errs = append(errs, errors.New("until is before since"))
	}
	if o.Max < 0 || o.Rate < 0 {
		errs = append(errs, errors.New("max and rate must not be negative"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	return nil
}

// ReplayItem is what happened to one intake record.
type ReplayItem struct {
	Source     string `json:"source"`
	EventID    string `json:"event_id"`
	ReceivedAt string `json:"received_at,omitempty"`
	// Status is the intake record's status (received or enqueued).
	Status   string `json:"status,omitempty"`
	QueueURL string `json:"queue_url,omitempty"`
	Outcome  string `json:"outcome"`
	// Reason says why a record was skipped ([ReasonIntakeExpired],
	// [ReasonKeyRetention]).
	Reason    string `json:"reason,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	Error     string `json:"error,omitempty"`
}

// ReplayReport is the result of [Ops.Replay].
type ReplayReport struct {
	Source      string        `json:"source"`
	DryRun      bool          `json:"dry_run"`
	Items       []ReplayItem  `json:"items"`
	Sent        int           `json:"sent"`
	Missing     int           `json:"missing"`
	Skipped     int           `json:"skipped"`
	Failed      int           `json:"failed"`
	Interrupted bool          `json:"interrupted"`
	Elapsed     time.Duration `json:"elapsed_ns"`
}

// Partial reports whether some records were not replayed as asked.
func (r ReplayReport) Partial() bool {
	return r.Failed > 0 || r.Missing > 0 || r.Skipped > 0 || r.Interrupted
}

// Replay re-enqueues intake records on the queue each was first sent to,
// with the same body and attributes (the provider's "resend"). The workers'
// idempotency makes a replay of an already-applied event harmless, but only
// while its idempotency key is kept: a record past its own expiry, or
// received longer ago than the idempotency retention less the replay
// margin, is skipped and reported ([OutcomeTooOld]), never sent. An error
// is returned only when the records could not be listed.
func (o *Ops) Replay(ctx context.Context, opts ReplayOptions) (ReplayReport, error) {
	if o.cfg.Intake == nil {
		return ReplayReport{}, ErrNoIntake
	}
	if err := opts.validate(); err != nil {
		return ReplayReport{}, err
	}
	start := o.cfg.Now()
	rep := ReplayReport{Source: opts.Source, DryRun: opts.DryRun}
	ids := opts.EventIDs
	if len(ids) == 0 {
		err := o.cfg.Intake.ReceivedBetween(ctx, opts.Source, opts.Since, opts.Until, func(id string, _ time.Time) error {
			ids = append(ids, id)
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("ops: list intake of %s: %w", opts.Source, err)
		}
	}
	if opts.Max > 0 && len(ids) > opts.Max {
		ids = ids[:opts.Max]
	}
	cutoff := start.Add(-o.keyRetention() + o.cfg.ReplayMargin)
	m := newMeter(o.cfg.Now, len(ids), opts.Progress)
	pace := newPacer(opts.Rate)
	for _, id := range ids {
		var err error
		if opts.DryRun {
			err = ctx.Err()
		} else {
			err = pace.wait(ctx)
		}
		if err != nil {
			rep.Interrupted = true
			break
		}
		item := o.replayOne(ctx, opts, id, cutoff)
		switch item.Outcome {
		case OutcomeSent, OutcomeWouldSend:
			rep.Sent++
		case OutcomeMissing:
			rep.Missing++
		case OutcomeTooOld:
			rep.Skipped++
		default:
			rep.Failed++
		}
		rep.Items = append(rep.Items, item)
		m.report(len(rep.Items))
	}
	rep.Elapsed = o.cfg.Now().Sub(start)
	return rep, nil
}

func (o *Ops) replayOne(ctx context.Context, opts ReplayOptions, id string, cutoff time.Time) ReplayItem {
	item := ReplayItem{Source: opts.Source, EventID: id}
	rec, found, err := o.cfg.Intake.Get(ctx, opts.Source, id)
	switch {
	case err != nil:
		item.Outcome, item.Error = OutcomeFailed, err.Error()
		return item
	case !found:
		item.Outcome = OutcomeMissing
		return item
	}
	item.ReceivedAt, item.Status, item.QueueURL = rec.ReceivedAt, rec.Status, rec.QueueURL
	if rec.QueueURL == "" {
		item.Outcome, item.Error = OutcomeFailed, "intake record names no queue"
		return item
	}
	if reason, detail := o.tooOld(rec, cutoff); reason != "" {
		item.Outcome, item.Reason, item.Error = OutcomeTooOld, reason, detail
		return item
	}
	if opts.DryRun {
		item.Outcome = OutcomeWouldSend
		return item
	}
	out, err := o.cfg.SQS.SendMessage(context.WithoutCancel(ctx), intake.SendInput(rec))
	if err != nil {
		item.Outcome, item.Error = OutcomeFailed, "send: "+err.Error()
		return item
	}
	item.Outcome, item.MessageID = OutcomeSent, aws.ToString(out.MessageId)
	return item
}

// tooOld says why rec must not be replayed, or "" when it may be: it is
// past its expiry, or was received before cutoff (or at a time that cannot
// be read).
func (o *Ops) tooOld(rec intake.Record, cutoff time.Time) (reason, detail string) {
	now := o.cfg.Now()
	if rec.ExpiresAt > 0 && !now.Before(time.Unix(rec.ExpiresAt, 0)) {
		return ReasonIntakeExpired, fmt.Sprintf("intake record expired at %s", time.Unix(rec.ExpiresAt, 0).UTC().Format(time.RFC3339))
	}
	received, err := time.Parse(time.RFC3339Nano, rec.ReceivedAt)
	if err != nil || received.Before(cutoff) {
		return ReasonKeyRetention, fmt.Sprintf("received %s, before %s: its idempotency key (kept %s) may be gone",
			rec.ReceivedAt, cutoff.UTC().Format(time.RFC3339), o.keyRetention())
	}
	return "", ""
}

// keyRetention is how long the workers keep idempotency keys: the Config's,
// else the template's IDEMPOTENCY_RETENTION, else the default.
func (o *Ops) keyRetention() time.Duration {
	if o.cfg.IdempotencyRetention > 0 {
		return o.cfg.IdempotencyRetention
	}
	if t := o.cfg.Resolver.Template(); t != nil {
		if r, err := t.Retentions(); err == nil {
			return r.Idempotency
		}
	}
	return idempotency.DefaultRetention
}
