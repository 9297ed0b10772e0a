package receiver

import (
	"fmt"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/pkg/webhook"
)

// A body within a source's max_body is never refused for its size: one
// queue message body, and one intake record, must hold the message of
// any such body as it is. A preset's message is an envelope around the
// item, larger than the body by a bounded amount, and Braintree's XML,
// held as a JSON string, may grow to 3/2 of it
// ([webhook.Scheme.MaxPayload]). A message that SQS takes only encoded,
// and that no message body holds encoded, travels by reference to its
// intake record ([intake.SendInput]), so the bound is on the message as
// it is.

// MaxBody is the body limit of a source: its max_body, or, left unset,
// [webhook.DefaultMaxBody] or the largest body whose messages one queue
// message holds ([intake.MaxMessageBody]), whichever is smaller.
func MaxBody(spec webhook.SourceSpec) int64 {
	if spec.MaxBody > 0 {
		return spec.MaxBody
	}
	return min(webhook.DefaultMaxBody, spec.Scheme.MaxBodyFor(intake.MaxMessageBody))
}

// checkMaxBody refuses a max_body under which a body could make a message
// that no queue message holds: such a body would be answered 413 for
// good, or, before the intake checked, 503 until the provider gave up.
func checkMaxBody(spec webhook.SourceSpec) error {
	limit := MaxBody(spec)
	if spec.Scheme.MaxPayload(limit) <= intake.MaxMessageBody {
		return nil
	}
	return fmt.Errorf("receiver: source %q: max_body %d: a %s body that large can make a %d-byte queue message, over the %d bytes an SQS message "+
		"holds beside its attributes; at most %d", spec.Name, limit, spec.Scheme, spec.Scheme.MaxPayload(limit), intake.MaxMessageBody,
		spec.Scheme.MaxBodyFor(intake.MaxMessageBody))
}
