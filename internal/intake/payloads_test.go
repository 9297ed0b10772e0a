package intake_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/pkg/queue"
)

// lambdaMessage is a received message as Lambda hands it to a worker.
func lambdaMessage(sm sqstypes.Message) events.SQSMessage {
	m := events.SQSMessage{MessageId: aws.ToString(sm.MessageId), Body: aws.ToString(sm.Body), MessageAttributes: map[string]events.SQSMessageAttribute{}}
	for k, v := range sm.MessageAttributes {
		m.MessageAttributes[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue}
	}
	return m
}

// reference is a message that refers to the payload of eventID's record
// on the payments source by its hash.
func reference(eventID, payload string) events.SQSMessage {
	str := func(v string) events.SQSMessageAttribute {
		return events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(v)}
	}
	return events.SQSMessage{MessageId: "m-" + eventID, Body: queue.ReferenceBody(payload), MessageAttributes: map[string]events.SQSMessageAttribute{
		"source": str("payments"), "event_id": str(eventID), queue.BodyEncodingAttribute: str(queue.BodyIntakeRecord)}}
}

// handed runs the batch through a worker behind payloads, which records
// what it is handed and fails the messages in fail.
func handed(t *testing.T, payloads *intake.Payloads, fail map[string]bool, ms ...events.SQSMessage) ([]events.SQSMessage, events.SQSEventResponse) {
	t.Helper()
	var got []events.SQSMessage
	h := payloads.Handler(func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		got = ev.Records
		var resp events.SQSEventResponse
		for _, m := range ev.Records {
			if fail[m.MessageId] {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			}
		}
		return resp, nil
	})
	resp, err := h(context.Background(), events.SQSEvent{Records: ms})
	if err != nil {
		t.Fatal(err)
	}
	return got, resp
}

// readPayload is the payload a worker behind the intake's reader takes
// from sm.
func readPayload(t *testing.T, env *localaws.Env, sm sqstypes.Message) string {
	t.Helper()
	payloads, err := intake.NewPayloads(env.DynamoDB, env.TableName("IntakeTable"), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, resp := handed(t, payloads, nil, lambdaMessage(sm))
	if len(got) != 1 || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the worker is handed %d messages, and %d fail", len(got), len(resp.BatchItemFailures))
	}
	p, err := queue.Payload(got[0])
	if err != nil {
		t.Fatalf("the worker cannot read the message: %v", err)
	}
	return p
}

// countingGets counts GetItem calls, and fails each while failing is set.
type countingGets struct {
	intake.DynamoDBAPI
	gets    atomic.Int32
	failing bool
}

func (c *countingGets) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.gets.Add(1)
	if c.failing {
		return nil, errors.New("injected: GetItem failed")
	}
	return c.DynamoDBAPI.GetItem(ctx, in, opts...)
}

// TestAWorkerReadsAReferencedPayloadOrSaysWhyNot: behind the intake's
// reader, a worker is handed each message that carries its payload by
// reference with the payload read from its record; a message that
// carries its payload is handed on with no read; one whose record is
// gone, or holds another payload, is handed on unread, for the worker to
// dead-letter; one whose record cannot be read now comes back.
func TestAWorkerReadsAReferencedPayloadOrSaysWhyNot(t *testing.T) {
	t.Parallel()
	c := newClocked(t, localaws.Faults{})
	ctx := context.Background()
	db := &countingGets{DynamoDBAPI: c.env.DynamoDB}
	payloads, err := intake.NewPayloads(db, c.env.TableName("IntakeTable"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Given a recorded event,
	ev := drillEvent(c.env, "evt_ref")
	if _, err := c.store.Accept(ctx, ev); err != nil {
		t.Fatal(err)
	}
	plain := lambdaMessage(messagesOf(t, c.env, ev.EventID)[0])
	ref := reference(ev.EventID, string(ev.Payload))
	other := reference(ev.EventID, `{"id":"evt_ref","amount":9900}`)
	other.MessageId = "m-other"
	gone := reference("evt_never", "{}")

	// when a batch of its message, a reference to it, a reference to
	// another payload under its ID and one to no record is handled,
	got, resp := handed(t, payloads, map[string]bool{ref.MessageId: true}, plain, ref, other, gone)
	// then all four are handed on,
	if len(got) != 4 {
		t.Fatalf("handed %d messages, want 4", len(got))
	}
	// the reference with the payload read and marked so,
	if p, err := queue.Payload(got[1]); err != nil || p != string(ev.Payload) ||
		aws.ToString(got[1].MessageAttributes[queue.BodyEncodingAttribute].StringValue) != queue.BodyIntakeRecordRead {
		t.Fatalf("the reference is handed on as %.60q (%v): want its payload, read", got[1].Body, err)
	}
	// the plain one and the two unreadable ones as they came, which the
	// worker cannot decode and dead-letters,
	if got[0].Body != plain.Body || got[2].Body != other.Body || got[3].Body != gone.Body {
		t.Fatal("a message that was not read was changed")
	}
	for _, m := range got[2:] {
		if _, err := queue.Payload(m); !errors.Is(err, queue.ErrBodyEncoding) {
			t.Fatalf("message %s decodes: %v; want ErrBodyEncoding", m.MessageId, err)
		}
	}
	// and the worker's own failures are reported.
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != ref.MessageId {
		t.Fatalf("failures %+v, want the worker's one", resp.BatchItemFailures)
	}
	// The three references were read, the plain message was not.
	if n := db.gets.Load(); n != 3 {
		t.Fatalf("%d reads, want 3", n)
	}
	if _, err := payloads.Read(ctx, gone); !errors.Is(err, intake.ErrPayloadGone) {
		t.Fatalf("Read of a reference to no record: %v; want ErrPayloadGone", err)
	}
	if _, err := payloads.Read(ctx, other); !errors.Is(err, intake.ErrPayloadGone) {
		t.Fatalf("Read of a reference to another payload: %v; want ErrPayloadGone", err)
	}

	// When the table cannot be read, the reference is not handed on and
	// comes back; the plain message goes on.
	db.failing = true
	got, resp = handed(t, payloads, nil, plain, ref)
	if len(got) != 1 || got[0].MessageId != plain.MessageId {
		t.Fatalf("handed %d messages, want the plain one", len(got))
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != ref.MessageId {
		t.Fatalf("failures %+v, want the reference", resp.BatchItemFailures)
	}
	if _, err := payloads.Read(ctx, ref); !errors.Is(err, intake.ErrUnavailable) {
		t.Fatalf("Read while the table fails: %v; want ErrUnavailable", err)
	}
}
