package intake

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/pkg/queue"
)

// MaxMessage is the SQS message size the intake keeps every message
// within: 256 KiB, the body and each attribute's name, type and value
// counted, as SQS counts them (SendMessage, MessageBody). A queue takes
// up to 1 MiB when its MaximumMessageSize says so; the template sets
// none, and a queue created while SQS's default was 256 KiB keeps it.
const MaxMessage = 256 << 10

// MessageReserve is the part of [MaxMessage] left to attributes: the
// intake's own (source, event_id, received_at, provider_ts and
// body_encoding, under 700 bytes at the longest source name and event ID
// the receiver takes) and those a worker adds when it dead-letters the
// message (failure_reason and first_failure_reason, each at most
// queue.MaxReasonLen, failed_at and receive_count).
const MessageReserve = 4 << 10

// MaxMessageBody is the longest message body the intake sends. A
// payload whose body, as it is or encoded, would be longer travels by
// reference ([SendInput]).
const MaxMessageBody = MaxMessage - MessageReserve

// SendInput returns the SendMessage that enqueues rec on its queue: its
// payload as the body, or encoded when SQS would refuse it as one
// ([queue.EncodeBody]), with the intake's attributes. A payload whose
// body would be longer than [MaxMessageBody] (varied text that SQS takes
// only encoded grows by a third) is sent by reference instead
// ([queue.BodyIntakeRecord]): the source and event_id attributes name
// rec, which holds the payload, and the worker reads it from there
// ([Payloads]). So no payload one record holds is refused for the size
// of its message, whatever its characters. The first send and a replay
// send the same message.
func SendInput(rec Record) *sqs.SendMessageInput {
	body, encoding := queue.EncodeBody(rec.Payload)
	if len(body) > MaxMessageBody {
		body, encoding = queue.ReferenceBody(rec.Payload), queue.BodyIntakeRecord
	}
	attrs := messageAttributes(rec)
	if encoding != "" {
		attrs[queue.BodyEncodingAttribute] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(encoding)}
	}
	return &sqs.SendMessageInput{QueueUrl: aws.String(rec.QueueURL), MessageBody: aws.String(body), MessageAttributes: attrs}
}

// checkSize refuses a payload that one record cannot hold. One message
// holds any payload a record does: by reference when not in its body.
func checkSize(ev Event) error {
	if len(ev.Payload) > MaxPayload {
		return fmt.Errorf("event %s/%s: %d bytes, over the %d one record holds: %w", ev.Source, ev.EventID, len(ev.Payload), MaxPayload, ErrTooLarge)
	}
	return nil
}
