package intake_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/pkg/queue"
)

// An SQS message holds at most 256 KiB, body and attributes counted as
// SQS counts them, on a queue that keeps SQS's earlier default (the
// template sets no MaximumMessageSize; SendMessage, MessageBody). The
// intake never sends a message that large: a payload whose body would
// be is sent by reference to the record that holds it, so no payload one
// record holds is refused for its message's size (413 for good), nor
// answered 503 for the provider to retry in vain.

func TestAPayloadOverTheMessageLimitTravelsByReference(t *testing.T) {
	t.Parallel()
	// Given a queue that takes messages of up to 256 KiB,
	c := newClocked(t, localaws.Faults{})
	if _, err := c.env.SQS.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(c.env.QueueURL("payments")),
		Attributes: map[string]string{"MaximumMessageSize": "262144"}}); err != nil {
		t.Fatal(err)
	}
	// and a payload of that size, well within one intake record,
	ev := drillEvent(c.env, "evt_256k")
	ev.Payload = text(73, 256<<10)
	// when it is delivered,
	res, err := c.store.Accept(context.Background(), ev)
	// then it is accepted,
	if err != nil || res.Outcome != intake.Accepted {
		t.Fatalf("Accept = %+v, %v; want accepted", res, err)
	}
	// its message names it by the payload's hash,
	msgs := messagesOf(t, c.env, ev.EventID)
	if len(msgs) != 1 {
		t.Fatalf("queue holds %d messages, want 1", len(msgs))
	}
	attrs := attributeStrings(msgs[0].MessageAttributes)
	if attrs[queue.BodyEncodingAttribute] != queue.BodyIntakeRecord || aws.ToString(msgs[0].Body) != intake.PayloadHash(ev.Payload) {
		t.Fatalf("message encoded %q, body %.80q; want a reference", attrs[queue.BodyEncodingAttribute], aws.ToString(msgs[0].Body))
	}
	// and a worker reads the payload from the record.
	if p := readPayload(t, c.env, msgs[0]); p != string(ev.Payload) {
		t.Fatalf("the worker reads %d bytes, want the %d-byte payload", len(p), len(ev.Payload))
	}
}
