package spendworker

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/queue"
)

// parsed is one message of a batch with the record read from it.
type parsed struct {
	m          events.SQSMessage
	u          spend.Usage
	receivedAt time.Time
	// outcome is the door's: usage, zero, not usage or alert
	// ([usagein.OutcomeUsage]).
	outcome string
	// alert is the provider's event of an alert ([usagein.OutcomeAlert]).
	alert string
}

// counts reports whether the record goes to the ledger.
func (p parsed) counts() bool { return p.outcome == usagein.OutcomeUsage }

// parse reads a usage message as the door wrote it ([usagein.DecodeMessage]):
// the record the receiver read under the source's mapping, or, from a
// build before envelopes, the usage.recorded body itself. Its time rule
// is applied against the intake time (received_at), so that a redrive
// days later reads the record as the door did; without one, against now.
// The worker never reads a producer's own shape.
func parse(m events.SQSMessage, now time.Time) (parsed, error) {
	received, _ := time.Parse("2006-01-02T15:04:05.000Z07:00", attr(m, "received_at"))
	body, err := queue.Payload(m)
	if err != nil {
		return parsed{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	msg, err := usagein.DecodeMessage([]byte(body), cmp.Or(received, now))
	if err != nil {
		return parsed{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	u := spend.Usage{RecordID: msg.RecordID, WorkloadRef: msg.WorkloadRef, Units: msg.Units, OccurredAt: msg.OccurredAt,
		ObservedAt: now, Path: spend.PathWebhook, EventID: cmp.Or(attr(m, "event_id"), msg.EventID), SeenAt: received,
		Source: cmp.Or(msg.Source, attr(m, "source")), Meter: msg.Meter, Unit: msg.Unit, Unreconciled: !msg.Reconciled}
	return parsed{m: m, u: u, receivedAt: received, outcome: msg.Outcome, alert: msg.Alert}, nil
}

// uncounted acknowledges a record the ledger never sees, an event of
// another type or a zero reading: it is marked on its intake record
// (not_usage or zero) and counted, so that its sender's retries stop and
// an operator sees what became of it.
func (w *Worker) uncounted(ctx context.Context, p parsed) bool {
	state := intake.AttributionNotUsage
	if p.outcome == usagein.OutcomeZero {
		state = intake.AttributionZero
	}
	if !w.markAttribution(ctx, p.m, p.u, state, "", "") {
		return false
	}
	w.cfg.Metrics.Count(MetricUsageEvents, 1, emf.Dims{"Outcome": p.outcome})
	w.cfg.Logger.InfoContext(ctx, "usage "+p.outcome+": acknowledged, not counted", "record_id", p.u.RecordID, "event_id", p.u.EventID,
		"source", p.u.Source)
	return true
}
