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
	if _, err := env.SQS.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(env.QueueURL("payments-dlq")),
		Attributes: map[string]string{"MaximumMessageSize": "262144"}}); err != nil {
		t.Fatal(err)
	}
	q := deadLetterQueue(t, env)
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
