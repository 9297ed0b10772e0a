package intake_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
)

// An SQS message holds at most 256 KiB, body and attributes counted as
// SQS counts them, on a queue that keeps SQS's earlier default (the
// template sets no MaximumMessageSize; SendMessage, MessageBody). The
// intake never sends a message that large: a payload whose message would
// be is refused before anything is stored, for good (413), never answered
// 503 for the provider to retry in vain.

func TestAPayloadOverTheMessageLimitIsRefusedNotRetriedForever(t *testing.T) {
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
	// when it is delivered, and delivered again,
	for attempt := 1; attempt <= 2; attempt++ {
		res, err := c.store.Accept(context.Background(), ev)
		// then it is refused as too large before any call, each time,
		if !errors.Is(err, intake.ErrTooLarge) || res.Calls != 0 {
			t.Fatalf("attempt %d: Accept = %+v, %v; want ErrTooLarge before any call", attempt, res, err)
		}
	}
	// and nothing is stored or queued.
	c.absent(t, ev)
	if n := queued(t, c.env, ev.EventID); n != 0 {
		t.Fatalf("queue holds %d messages, want none", n)
	}
}
