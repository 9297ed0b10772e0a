package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQSAPI is the part of the SQS client a [Queue] uses.
type SQSAPI interface {
	SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// Config configures a [Queue].
type Config struct {
	SQS SQSAPI
	// URL is the queue the worker consumes.
	URL string
	// DeadLetterURL is its dead-letter queue.
	DeadLetterURL string
	Logger        *slog.Logger
}

// Queue is a consumed queue and its dead-letter queue.
type Queue struct {
	cfg Config

	mu         sync.Mutex
	maxReceive int // 0 until a read of the redrive policy succeeded
}

// New validates cfg and builds a Queue.
func New(cfg Config) (*Queue, error) {
	var errs []error
	if cfg.SQS == nil {
		errs = append(errs, errors.New("queue: SQS client is required"))
	}
	if cfg.URL == "" || cfg.DeadLetterURL == "" {
		errs = append(errs, errors.New("queue: queue and dead-letter queue URLs are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Queue{cfg: cfg}, nil
}

// maxVisibility is SQS's limit on a visibility timeout.
const maxVisibility = 12 * time.Hour

// RetryAfter makes a failed record visible again after d (best effort: if
// it fails, the queue's own visibility timeout applies).
func (q *Queue) RetryAfter(ctx context.Context, receipt string, d time.Duration) {
	secs := int32(min(max(d, time.Second), maxVisibility) / time.Second)
	_, err := q.cfg.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(q.cfg.URL), ReceiptHandle: aws.String(receipt), VisibilityTimeout: secs,
	})
	if err != nil {
		q.cfg.Logger.WarnContext(ctx, "change visibility", "err", err)
	}
}

// MaxReasonLen bounds a failure reason on a dead-letter copy, in bytes.
// The intake leaves a message's last 4 KiB of SQS's 256 KiB to
// attributes; a reason may quote the body, and is cut to fit.
const MaxReasonLen = 1 << 10

// DeadLetter sends a copy of m to the dead-letter queue with its
// attributes plus failure_reason, first_failure_reason (kept from an
// earlier failure when present), failed_at and receive_count. A reason
// over [MaxReasonLen] is cut, a body that SQS would refuse and that no
// [BodyEncodingAttribute] marks (one a worker rewrote) is encoded, and a
// payload a worker read from its intake record ([BodyIntakeRecordRead])
// is sent by reference again, as it came.
func (q *Queue) DeadLetter(ctx context.Context, m events.SQSMessage, reason string) error {
	reason = clip(reason, MaxReasonLen)
	attrs := map[string]string{
		"failure_reason": reason,
		"failed_at":      time.Now().UTC().Format(time.RFC3339),
		"receive_count":  m.Attributes["ApproximateReceiveCount"],
	}
	if a, ok := m.MessageAttributes["first_failure_reason"]; !ok || a.StringValue == nil {
		attrs["first_failure_reason"] = reason
	}
	out := map[string]sqstypes.MessageAttributeValue{}
	for k, v := range m.MessageAttributes {
		if v.StringValue != nil {
			out[k] = sqstypes.MessageAttributeValue{DataType: aws.String(v.DataType), StringValue: v.StringValue}
		}
	}
	body := m.Body
	switch enc, marked := out[BodyEncodingAttribute]; {
	case !marked:
		body, attrs[BodyEncodingAttribute] = EncodeBody(m.Body)
	case aws.ToString(enc.StringValue) == BodyIntakeRecordRead:
		body, attrs[BodyEncodingAttribute] = ReferenceBody(m.Body), BodyIntakeRecord
	}
	for k, v := range attrs {
		if v == "" {
			continue
		}
		out[k] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	_, err := q.cfg.SQS.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(q.cfg.DeadLetterURL), MessageBody: aws.String(body), MessageAttributes: out,
	})
	if err != nil {
		return fmt.Errorf("queue: dead-letter %s: %w", m.MessageId, err)
	}
	return nil
}

// clip cuts s to at most n bytes, on a character's boundary, ending it
// with "…" when it cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// MaxReceiveCount returns the queue's redrive maxReceiveCount, so the
// template stays the one place that sets it. A successful read is kept for
// the life of the Queue; a failed one is not, and the next call reads
// again. While it cannot be read, or the queue has no redrive policy, it
// returns 1<<30: never dead-letter early.
func (q *Queue) MaxReceiveCount(ctx context.Context) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.maxReceive == 0 {
		out, err := q.cfg.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(q.cfg.URL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy},
		})
		if err != nil {
			q.cfg.Logger.WarnContext(ctx, "read redrive policy", "err", err)
			return 1 << 30
		}
		q.maxReceive = parseMaxReceive(out.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)])
		if q.maxReceive <= 0 {
			q.maxReceive = 1 << 30
		}
	}
	return q.maxReceive
}

func parseMaxReceive(policy string) int {
	var p struct {
		MaxReceiveCount json.RawMessage `json:"maxReceiveCount"`
	}
	if json.Unmarshal([]byte(policy), &p) != nil {
		return 0
	}
	var s string
	if json.Unmarshal(p.MaxReceiveCount, &s) == nil {
		n, _ := strconv.Atoi(s)
		return n
	}
	var n int
	json.Unmarshal(p.MaxReceiveCount, &n)
	return n
}
