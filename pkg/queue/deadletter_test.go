package queue_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/pkg/queue"
)

func deadLetterQueue(t *testing.T, env *localaws.Env) *queue.Queue {
	t.Helper()
	q, err := queue.New(queue.Config{SQS: env.SQS, URL: env.QueueURL("payments"), DeadLetterURL: env.QueueURL("payments-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// deadLetterQueue256KiB is deadLetterQueue with a DLQ that takes
// messages of up to 256 KiB, attributes counted.
func deadLetterQueue256KiB(t *testing.T, env *localaws.Env) *queue.Queue {
	t.Helper()
	if _, err := env.SQS.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(env.QueueURL("payments-dlq")),
		Attributes: map[string]string{"MaximumMessageSize": "262144"}}); err != nil {
		t.Fatal(err)
	}
	return deadLetterQueue(t, env)
}

func receiveDLQ(t *testing.T, env *localaws.Env) sqstypes.Message {
	t.Helper()
	out, err := env.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(env.QueueURL("payments-dlq")),
		MaxNumberOfMessages: 1, WaitTimeSeconds: 2, MessageAttributeNames: []string{"All"}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive from the DLQ: %v, %d messages", err, len(out.Messages))
	}
	return out.Messages[0]
}

func attrs(kv ...string) map[string]events.SQSMessageAttribute {
	out := map[string]events.SQSMessageAttribute{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(kv[i+1])}
	}
	return out
}

// TestADeadLetterCopyCarriesABodySQSWouldRefuse: a worker may dead-letter
// a record whose body it rewrote (the payment worker puts a fetched
// object in its place), and that body may hold a character SQS refuses.
// The copy is encoded, as the intake encodes, and reaches the DLQ.
func TestADeadLetterCopyCarriesABodySQSWouldRefuse(t *testing.T) {
	env := localaws.StartForTest(t)
	q := deadLetterQueue(t, env)
	// Given a record whose body holds U+FFFF and says nothing of an encoding
	body := `{"provider":"mollie","id":"tr_1","status":"paid","item":{"description":"Ada ` + "\uffff" + `"}}`
	m := events.SQSMessage{MessageId: "m1", Body: body, MessageAttributes: attrs("source", "mollie", "event_id", "tr_1:paid")}
	// when it is dead-lettered
	if err := q.DeadLetter(context.Background(), m, "malformed_message: amount"); err != nil {
		t.Fatalf("DeadLetter: %v", err)
	}
	// then the DLQ holds it, and a reader gets the body back
	got := receiveDLQ(t, env)
	enc := aws.ToString(got.MessageAttributes[queue.BodyEncodingAttribute].StringValue)
	if p, err := queue.DecodeBody(aws.ToString(got.Body), enc); err != nil || p != body {
		t.Fatalf("DLQ body decodes to %q, %v; want the record's body", p, err)
	}
}

// TestADeadLetterCopyFitsTheMessageLimitWhateverItsReason: a copy carries
// the message's body and attributes and the failure's, within SQS's
// message limit of 256 KiB, body and attributes counted (SendMessage,
// MessageBody). The intake leaves 4 KiB of it to attributes; a failure
// reason, which may quote the body, is cut so that the copy fits.
func TestADeadLetterCopyFitsTheMessageLimitWhateverItsReason(t *testing.T) {
	env := localaws.StartForTest(t)
	ctx := context.Background()
	// Given a DLQ that takes messages of up to 256 KiB,
	q := deadLetterQueue256KiB(t, env)
	// a record of the largest body the intake sends, with the longest
	// source name and event ID the receiver lets through,
	body := strings.Repeat("a", 252<<10)
	m := events.SQSMessage{MessageId: "m1", Body: body, Attributes: map[string]string{"ApproximateReceiveCount": "5"},
		MessageAttributes: attrs("source", strings.Repeat("s", 64), "event_id", strings.Repeat("e", 255),
			"received_at", "2026-01-02T03:04:05.000Z", "provider_ts", "2026-01-02T03:04:05.000Z")}
	// when it is dead-lettered with a reason that quotes half of it
	reason := "malformed_message: amount: want an integer, got " + body[:len(body)/2]
	if err := q.DeadLetter(ctx, m, reason); err != nil {
		t.Fatalf("DeadLetter: %v", err)
	}
	// then the DLQ holds it whole, with the start of the reason
	got := receiveDLQ(t, env)
	r := aws.ToString(got.MessageAttributes["failure_reason"].StringValue)
	if aws.ToString(got.Body) != body || !strings.HasPrefix(reason, strings.TrimSuffix(r, "…")) || len(r) > 1<<10 {
		t.Fatalf("DLQ copy: %d-byte body, %d-byte reason %.40q", len(aws.ToString(got.Body)), len(r), r)
	}
}

// TestADeadLetterCopyOfAPayloadReadFromItsRecordIsAReferenceAgain: a
// message that carried its payload by reference reaches a worker with the
// payload read into its body (queue.BodyIntakeRecordRead). Dead-lettered,
// it goes as it came, by reference, whatever the payload's size: sent as
// a body, encoded, varied text with U+FFFF would not fit a message.
func TestADeadLetterCopyOfAPayloadReadFromItsRecordIsAReferenceAgain(t *testing.T) {
	env := localaws.StartForTest(t)
	ctx := context.Background()
	q := deadLetterQueue256KiB(t, env)
	// Given a message whose 250 KiB payload of varied text with U+FFFF
	// was read from its intake record
	var b strings.Builder
	for i := range 250 << 10 {
		b.WriteByte(byte(' ' + (i*7919+i*i*31)%95))
	}
	payload := b.String() + "\uffff"
	m := events.SQSMessage{MessageId: "m1", Body: payload, Attributes: map[string]string{"ApproximateReceiveCount": "1"},
		MessageAttributes: attrs("source", "payments", "event_id", "evt_ref", queue.BodyEncodingAttribute, queue.BodyIntakeRecordRead)}
	if p, err := queue.Payload(m); err != nil || p != payload {
		t.Fatalf("Payload of a read message = %d bytes, %v; want its body", len(p), err)
	}
	// when it is dead-lettered
	if err := q.DeadLetter(ctx, m, "malformed_message: amount"); err != nil {
		t.Fatalf("DeadLetter: %v", err)
	}
	// then the DLQ holds it by reference, as the intake sent it
	got := receiveDLQ(t, env)
	enc := aws.ToString(got.MessageAttributes[queue.BodyEncodingAttribute].StringValue)
	if enc != queue.BodyIntakeRecord || aws.ToString(got.Body) != queue.ReferenceBody(payload) {
		t.Fatalf("DLQ copy: encoding %q, body %.80q; want a reference to the payload", enc, aws.ToString(got.Body))
	}
	if aws.ToString(got.MessageAttributes["event_id"].StringValue) != "evt_ref" {
		t.Fatalf("DLQ copy names event %q, want evt_ref", aws.ToString(got.MessageAttributes["event_id"].StringValue))
	}
}
