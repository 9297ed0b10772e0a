package ops

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/internal/intake"
)

// EventIntake is what hookline knows of an event that has no ledger entry,
// such as a payment: its intake record and the effect check of the queue
// it was sent to (for a payment, the worker's idempotency record).
type EventIntake struct {
	Source       string `json:"source"`
	EventID      string `json:"event_id"`
	ReceivedAt   string `json:"received_at"`
	IntakeStatus string `json:"intake_status"`
	// Queue is the queue the intake sent the event to ("" when its URL
	// is none of the template's); DeadLetterQueue is that queue's.
	Queue           string `json:"queue,omitempty"`
	DeadLetterQueue string `json:"dead_letter_queue,omitempty"`
	Effect          Status `json:"effect"`
}

// ExplainIntake reads the intake record of eventID under source and checks
// its effect as dlq peek checks a dead letter's. found is false when the
// source has no record of the event.
func (o *Ops) ExplainIntake(ctx context.Context, source, eventID string) (EventIntake, bool, error) {
	if o.cfg.Intake == nil {
		return EventIntake{}, false, nil
	}
	rec, found, err := o.cfg.Intake.Get(ctx, source, eventID)
	if err != nil || !found {
		return EventIntake{}, found, err
	}
	v := EventIntake{Source: source, EventID: eventID, ReceivedAt: rec.ReceivedAt, IntakeStatus: rec.Status,
		Effect: Status{State: StateUnknown}}
	for _, dlq := range o.cfg.Resolver.Template().DeadLetterQueues() {
		src, err := o.cfg.Resolver.Queue(dlq.SourceQueue)
		if err != nil {
			continue
		}
		if url, err := o.cfg.Resolver.QueueURL(ctx, src.Name); err != nil || url != rec.QueueURL {
			continue
		}
		v.Queue, v.DeadLetterQueue = src.Name, dlq.Name
		in := intake.SendInput(rec)
		m := Message{EventID: eventID, Source: source, body: aws.ToString(in.MessageBody), attrs: in.MessageAttributes}
		v.Effect = o.check(ctx, src.Name, m)
		break
	}
	return v, true, nil
}

// Text says what the event's records hold and what to do next.
func (v EventIntake) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "event %s of source %s: received %s, intake %s", v.EventID, v.Source, v.ReceivedAt, v.IntakeStatus)
	if v.Queue != "" {
		fmt.Fprintf(&b, ", sent to %s", v.Queue)
	}
	b.WriteString("\n")
	what := "effect"
	if v.Effect.Key != "" {
		what = "payment key " + v.Effect.Key
		if v.Queue != "payments" {
			what = "effect key " + v.Effect.Key
		}
	}
	fmt.Fprintf(&b, "%s: %s\n", what, v.Effect.Text())
	if v.Effect.Done {
		b.WriteString("done: its effect is recorded; a redelivery or replay acts no more\n")
		return b.String()
	}
	dlq := v.DeadLetterQueue
	if dlq == "" {
		dlq = "<dlq>"
	}
	fmt.Fprintf(&b, "not done: if a worker gave up on it, it is in hookline dlq peek %s (redrive it from there); "+
		"if it is in no queue, hookline intake replay --source %s --event %s sends it again\n", dlq, v.Source, v.EventID)
	return b.String()
}

// Text is a status in words: its state, with its error, its attempts, or
// while in progress when its key may be claimed again.
func (st Status) Text() string {
	switch {
	case st.Error != "":
		return st.State + " (" + st.Error + ")"
	case st.State == StateInProgress:
		return fmt.Sprintf("%s (attempt %d, claimable %s)", st.State, st.Attempts, stamp(st.HeldUntil))
	case st.Attempts > 1:
		return fmt.Sprintf("%s (after %d attempts)", st.State, st.Attempts)
	}
	return st.State
}
