package intake_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/pkg/queue"
)

// One intake record holds a payload of up to intake.MaxPayload bytes:
// DynamoDB's 400 KB item, less what the rest of the record takes. One
// message holds a body of up to intake.MaxMessageBody bytes: SQS's 256
// KiB, less what attributes take. A payload is sent as its own body, or
// encoded when SQS would refuse it, or, when neither body fits one
// message, by reference to its record.

// text is n bytes of seeded random printable ASCII: gzip saves little of it.
func text(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(' ' + r.IntN('~'-' '+1))
	}
	return b
}

func TestTheLargestPayloadFitsOneRecordAndOneMessage(t *testing.T) {
	t.Parallel()
	c := newClocked(t, localaws.Faults{})
	// Given a queue that takes messages of up to 256 KiB, attributes
	// counted,
	if _, err := c.env.SQS.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(c.env.QueueURL("payments")),
		Attributes: map[string]string{"MaximumMessageSize": strconv.Itoa(intake.MaxMessage)}}); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name     string
		payload  []byte
		encoding string
	}{
		// the longest body the intake sends
		{name: "sent as it is", payload: text(61, intake.MaxMessageBody)},
		// one record's worth, which SQS takes only encoded (U+FFFF), and
		// which gzip makes small
		{name: "sent encoded", payload: []byte(`{"note":"` + "\uffff" + strings.Repeat("a", intake.MaxPayload-17) + "\uffff" + `"}`),
			encoding: queue.BodyGzipBase64},
		// a byte longer than a body: by reference to its record
		{name: "one byte over a message", payload: text(79, intake.MaxMessageBody+1), encoding: queue.BodyIntakeRecord},
		// varied text that SQS takes only encoded, which gzip shrinks
		// less than base64 grows it
		{name: "encoded, over a message", payload: append(text(83, intake.MaxMessageBody-3), "\uffff"...), encoding: queue.BodyIntakeRecord},
		// one record's worth of it
		{name: "a record's worth, encoded", payload: append(text(89, intake.MaxPayload-3), "\uffff"...), encoding: queue.BodyIntakeRecord},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// and an event of that payload, with the longest source name
			// and event ID the receiver lets through,
			ev := intake.Event{Source: strings.Repeat("s", 64), EventID: strings.Repeat("e#", 126) + strconv.Itoa(100+i), QueueURL: c.env.QueueURL("payments"),
				Payload: tc.payload, RequestID: strings.Repeat("r", 64), ProviderTimestamp: t0}
			// when it is delivered, it is accepted,
			if res, err := c.store.Accept(context.Background(), ev); err != nil || res.Outcome != intake.Accepted {
				t.Fatalf("Accept of a %d-byte payload = %+v, %v; want accepted", len(ev.Payload), res, err)
			}
			// its record reads back with the payload whole, and the
			// queue holds it.
			if rec := c.record(t, ev); rec.Payload != string(ev.Payload) {
				t.Fatalf("record holds %d bytes of the %d-byte payload", len(rec.Payload), len(ev.Payload))
			}
			msgs := messagesOf(t, c.env, ev.EventID)
			if len(msgs) != 1 {
				t.Fatalf("queue holds %d messages of the event, want 1", len(msgs))
			}
			if enc := attributeStrings(msgs[0].MessageAttributes)[queue.BodyEncodingAttribute]; enc != tc.encoding {
				t.Fatalf("message encoded %q, want %q", enc, tc.encoding)
			}
			// and a worker reads the payload from it, whole.
			if p := readPayload(t, c.env, msgs[0]); p != string(ev.Payload) {
				t.Fatalf("message carries %d bytes; want the %d-byte payload", len(p), len(ev.Payload))
			}
		})
	}
}

func TestAPayloadOverTheLimitIsRefusedBeforeAnythingIsStored(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
	}{
		// gzip would fit it in one item, but a record read back holds
		// at most one item's worth of payload
		{name: "compressible", payload: []byte(`{"note":"` + strings.Repeat("a", 600<<10) + `"}`)},
		// no form of it fits one item
		{name: "incompressible", payload: text(67, 500<<10)},
		{name: "one byte over", payload: text(71, intake.MaxPayload+1)},
		{name: "one byte over, encoded", payload: append(text(73, intake.MaxPayload-2), "\uffff"...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Given a payload larger than one record holds,
			c := newClocked(t, localaws.Faults{})
			ev := drillEvent(c.env, "evt_too_large")
			ev.Payload = tt.payload
			// when it is delivered,
			res, err := c.store.Accept(context.Background(), ev)
			// then it is refused as bad input (a retry would meet the same
			// refusal: it is not unavailable), before any AWS call, and
			// nothing is stored or queued.
			if err == nil {
				rec := c.record(t, ev)
				t.Fatalf("Accept of a %d-byte payload = %+v; accepted, and its record reads back %d bytes", len(ev.Payload), res, len(rec.Payload))
			}
			if !errors.Is(err, intake.ErrTooLarge) || res.Calls != 0 {
				t.Fatalf("Accept of a %d-byte payload = %+v, %v; want ErrTooLarge before any call", len(ev.Payload), res, err)
			}
			c.absent(t, ev)
			if n := queued(t, c.env, ev.EventID); n != 0 {
				t.Errorf("queue holds %d messages, want none", n)
			}
		})
	}
}
