package spendworker

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/spend"
)

// Attributor records on a usage event's intake record what the worker did
// with it; [*intake.Attributions] is one.
type Attributor interface {
	Mark(ctx context.Context, m intake.Mark) (bool, error)
}

var _ Attributor = (*intake.Attributions)(nil)

// attributionOf is the intake state of an applied record.
func attributionOf(res spend.Result) (intake.Attribution, string, string) {
	switch {
	case res.Outcome == spend.Deferred && res.Deferred != nil:
		return intake.AttributionDeferred, res.Deferred.WorkloadID, res.Deferred.Reason
	case res.Outcome == spend.Disagreement:
		return intake.Attributed, res.WorkloadID, string(spend.Disagreement)
	default:
		return intake.Attributed, res.WorkloadID, ""
	}
}

// markAttribution records the state on the message's intake record. It
// reports false when the mark failed: the message then returns to the
// queue, and its redelivery is a ledger duplicate that marks again. A
// message without an intake record (sent by hand, or its record expired)
// has nothing to mark.
func (w *Worker) markAttribution(ctx context.Context, m events.SQSMessage, u spend.Usage, state intake.Attribution, workload, reason string) bool {
	source := attr(m, "source")
	if w.cfg.Attributions == nil || source == "" || u.EventID == "" {
		return true
	}
	_, err := w.cfg.Attributions.Mark(ctx, intake.Mark{Source: source, EventID: u.EventID, State: state,
		Workload: workload, Reason: reason})
	if err != nil {
		w.cfg.Logger.WarnContext(ctx, "attribution not recorded on the intake record; record returns to the queue",
			"record_id", u.RecordID, "event_id", u.EventID, "err", err)
		return false
	}
	return true
}
