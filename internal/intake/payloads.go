package intake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/pkg/queue"
)

// ErrPayloadGone means a message refers to a payload ([queue.BodyIntakeRecord])
// that its intake record does not hold: the record has expired, or holds
// another payload. No retry reads it.
var ErrPayloadGone = errors.New("intake: the payload a message refers to is not in its record")

// SQSHandler is a queue worker's Lambda handler.
type SQSHandler = func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// Payloads reads, for a queue worker, the payloads that messages carry by
// reference ([queue.BodyIntakeRecord], sent by [SendInput] when no
// message body holds the payload) from the intake records that hold
// them: one consistent GetItem a message so carried, and none for any
// other. It needs dynamodb:GetItem on the intake table.
type Payloads struct {
	store *Store
}

// NewPayloads builds the reader of the intake table on db; a nil logger
// discards.
func NewPayloads(db DynamoDBAPI, table string, logger *slog.Logger) (*Payloads, error) {
	var errs []error
	if db == nil {
		errs = append(errs, errors.New("intake: DynamoDB client is required"))
	}
	if table == "" {
		errs = append(errs, errors.New("intake: table name is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Payloads{store: &Store{cfg: Config{DynamoDB: db, Table: table, Logger: logger}}}, nil
}

// Read returns m with the payload it refers to as its body, marked
// [queue.BodyIntakeRecordRead], when m carries its payload by reference,
// and any other message as it is. The record is the one m's source and
// event_id attributes name, and its payload must hash to m's body. An
// error wraps [ErrUnavailable] (retry) or [ErrPayloadGone] (never
// readable).
func (p *Payloads) Read(ctx context.Context, m events.SQSMessage) (events.SQSMessage, error) {
	if stringAttribute(m, queue.BodyEncodingAttribute) != queue.BodyIntakeRecord {
		return m, nil
	}
	source, eventID := stringAttribute(m, "source"), stringAttribute(m, "event_id")
	rec, found, err := p.store.Get(ctx, source, eventID)
	switch {
	case err != nil:
		return m, fmt.Errorf("message %s: %w", m.MessageId, err)
	case !found:
		return m, fmt.Errorf("message %s: no record %s/%s: %w", m.MessageId, source, eventID, ErrPayloadGone)
	case queue.ReferenceBody(rec.Payload) != m.Body:
		return m, fmt.Errorf("message %s: record %s/%s holds another payload: %w", m.MessageId, source, eventID, ErrPayloadGone)
	}
	read := queue.BodyIntakeRecordRead
	out := m
	out.Body = rec.Payload
	out.MessageAttributes = maps.Clone(m.MessageAttributes)
	out.MessageAttributes[queue.BodyEncodingAttribute] = events.SQSMessageAttribute{DataType: "String", StringValue: &read}
	return out, nil
}

// Handler returns h behind p: each message of a batch that carries its
// payload by reference is handed to h with the payload read ([Payloads.Read]).
// A message whose record cannot be read now is not handed on: it is
// reported failed, and comes back. One whose payload is gone is handed
// on as it came, and h, which cannot decode it ([queue.DecodeBody]),
// dead-letters it with the reason.
func (p *Payloads) Handler(h SQSHandler) SQSHandler {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var failed []events.SQSBatchItemFailure
		records := make([]events.SQSMessage, 0, len(ev.Records))
		for _, m := range ev.Records {
			read, err := p.Read(ctx, m)
			if err != nil {
				p.store.cfg.Logger.WarnContext(ctx, "payload of a message not read from its intake record", "message_id", m.MessageId,
					"source", stringAttribute(m, "source"), "event_id", stringAttribute(m, "event_id"), "err", err)
			}
			if errors.Is(err, ErrUnavailable) {
				failed = append(failed, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
				continue
			}
			records = append(records, read)
		}
		if len(records) == 0 {
			return events.SQSEventResponse{BatchItemFailures: failed}, nil
		}
		ev.Records = records
		resp, err := h(ctx, ev)
		resp.BatchItemFailures = append(failed, resp.BatchItemFailures...)
		return resp, err
	}
}

// stringAttribute returns a string message attribute of m, or "".
func stringAttribute(m events.SQSMessage, name string) string {
	if a, ok := m.MessageAttributes[name]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}
