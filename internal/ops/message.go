package ops

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/pkg/queue"
)

// Message is one dead-lettered message as an operator sees it. The body is
// kept for redrive and status checks but never printed.
type Message struct {
	MessageID string `json:"message_id"`
	EventID   string `json:"event_id"`
	Source    string `json:"source"`
	// ReceiveCount is how often the source queue delivered the message
	// (the worker's receive_count attribute); without that attribute, the
	// dead-letter queue's own ApproximateReceiveCount.
	ReceiveCount       int       `json:"receive_count"`
	FailureReason      string    `json:"failure_reason,omitempty"`
	FirstFailureReason string    `json:"first_failure_reason,omitempty"`
	FailedAt           string    `json:"failed_at,omitempty"`
	SentAt             time.Time `json:"sent_at"`
	// Status is whether its effect is already recorded (see [Checker]).
	Status Status `json:"status"`

	body    string
	attrs   map[string]sqstypes.MessageAttributeValue
	receipt string
}

// Body returns the message body, as SQS holds it: encoded when the
// payload is ([Message.Attribute] of queue.BodyEncodingAttribute).
func (m Message) Body() string { return m.body }

// payload returns the payload the message carries, decoded.
func (m Message) payload() (string, error) {
	return queue.DecodeBody(m.body, m.Attribute(queue.BodyEncodingAttribute))
}

// Attribute returns a string message attribute, or "".
func (m Message) Attribute(name string) string {
	if a, ok := m.attrs[name]; ok {
		return aws.ToString(a.StringValue)
	}
	return ""
}

// lambdaEvent returns the message as a Lambda SQS record, the shape the
// workers parse.
func (m Message) lambdaEvent() events.SQSMessage {
	ev := events.SQSMessage{MessageId: m.MessageID, Body: m.body, MessageAttributes: map[string]events.SQSMessageAttribute{}}
	for k, v := range m.attrs {
		ev.MessageAttributes[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return ev
}

func decodeMessage(sm sqstypes.Message) Message {
	m := Message{
		MessageID: aws.ToString(sm.MessageId),
		body:      aws.ToString(sm.Body),
		attrs:     sm.MessageAttributes,
		receipt:   aws.ToString(sm.ReceiptHandle),
	}
	m.EventID = m.Attribute("event_id")
	m.Source = m.Attribute("source")
	m.FailureReason = m.Attribute("failure_reason")
	m.FirstFailureReason = m.Attribute("first_failure_reason")
	m.FailedAt = m.Attribute("failed_at")
	if n, err := strconv.Atoi(m.Attribute("receive_count")); err == nil {
		m.ReceiveCount = n
	} else {
		m.ReceiveCount, _ = strconv.Atoi(sm.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
	}
	if ms, err := strconv.ParseInt(sm.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		m.SentAt = time.UnixMilli(ms).UTC()
	}
	return m
}

// sendInput returns the SendMessage that puts m on url with the same body
// and attributes.
func (m Message) sendInput(url string) *sqs.SendMessageInput {
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(m.body)}
	if len(m.attrs) > 0 {
		in.MessageAttributes = make(map[string]sqstypes.MessageAttributeValue, len(m.attrs))
		for k, v := range m.attrs {
			in.MessageAttributes[k] = sqstypes.MessageAttributeValue{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
		}
	}
	return in
}

// receive reads up to n (at most 10) messages from url and hides them for
// visibility. An empty answer after a long poll means the queue has no
// visible messages.
func (o *Ops) receive(ctx context.Context, url string, n int, visibility time.Duration) ([]Message, error) {
	out, err := o.cfg.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         int32(min(max(n, 1), 10)),
		VisibilityTimeout:           int32(max(visibility/time.Second, 1)),
		WaitTimeSeconds:             int32(o.cfg.Wait / time.Second),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		// Some emulators read only the older name of the same list.
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}, //nolint:staticcheck
	})
	if err != nil {
		return nil, fmt.Errorf("ops: receive from %s: %w", url, err)
	}
	msgs := make([]Message, 0, len(out.Messages))
	for _, sm := range out.Messages {
		msgs = append(msgs, decodeMessage(sm))
	}
	return msgs, nil
}

// release makes messages visible again. It runs even after ctx is
// cancelled (an interrupted command still puts back what it hid) and
// returns how many it released; a failure only delays a message until its
// visibility timeout passes.
func (o *Ops) release(ctx context.Context, url string, msgs []Message) int {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	n := 0
	for _, m := range msgs {
		_, err := o.cfg.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(url), ReceiptHandle: aws.String(m.receipt), VisibilityTimeout: 0,
		})
		if err != nil {
			o.cfg.Logger.WarnContext(ctx, "make message visible again", "message_id", m.MessageID, "err", err)
			continue
		}
		n++
	}
	return n
}
