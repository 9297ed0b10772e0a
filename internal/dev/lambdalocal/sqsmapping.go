package lambdalocal

import (
	"context"
	"errors"
	"log/slog"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQSHandler is a Lambda handler for an SQS event source.
type SQSHandler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// SQSAPI is the part of the SQS client the mapping uses.
type SQSAPI interface {
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(context.Context, *sqs.DeleteMessageBatchInput, ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

// SQSMappingConfig configures an [SQSMapping].
type SQSMappingConfig struct {
	SQS      SQSAPI
	QueueURL string
	QueueARN string
	Function string
	Handler  SQSHandler
	// BatchSize is at most 10 (default 10).
	BatchSize int
	// Concurrency is the number of batches in flight at once, like the
	// mapping's ScalingConfig.MaximumConcurrency (default 2).
	Concurrency int
	// Timeout is the function timeout; an overrun fails the whole batch.
	Timeout time.Duration
	// ReportBatchItemFailures mirrors FunctionResponseTypes: without it the
	// handler's batchItemFailures are ignored and success deletes all.
	ReportBatchItemFailures bool
	// DropAck, when set, is asked for every record that would be deleted;
	// true skips the delete, emulating a lost acknowledgement.
	DropAck func(messageID string) bool
	// WaitTime is the longest pause between two polls of an empty queue
	// (default 200ms). See [SQSMapping.Run].
	WaitTime time.Duration
	Logger   *slog.Logger
}

// SQSMapping polls a queue and invokes a handler the way a Lambda event
// source mapping does.
type SQSMapping struct {
	cfg   SQSMappingConfig
	stats SQSStats
}

// SQSStats counts what the mapping did.
type SQSStats struct {
	Invocations, FailedBatches, Deleted, Failed, DroppedAcks atomic.Int64
}

// NewSQSMapping validates cfg and builds the mapping.
func NewSQSMapping(cfg SQSMappingConfig) (*SQSMapping, error) {
	if cfg.SQS == nil || cfg.QueueURL == "" || cfg.Handler == nil {
		return nil, errors.New("lambdalocal: sqs mapping needs SQS, QueueURL and Handler")
	}
	if cfg.BatchSize <= 0 || cfg.BatchSize > 10 {
		cfg.BatchSize = 10
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 2
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.WaitTime <= 0 {
		cfg.WaitTime = 200 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &SQSMapping{cfg: cfg}, nil
}

// Stats returns live counters.
func (m *SQSMapping) Stats() *SQSStats { return &m.stats }

// Run polls until ctx is cancelled.
//
// Lambda long-polls, and SQS answers a long poll as soon as a message
// arrives. local-aws-sqs answers only when the wait ends (a message sent
// 0.3 s into a 2 s wait came back 1.74 s later, every time), which would
// add up to a second to every local latency. So each poller short-polls,
// and while the queue is empty it pauses 5 ms, doubling up to WaitTime.
//
// A short poll is not immediate either: local-aws-sqs looks for messages
// every 10 ms and answers when it has as many as were asked for, or after
// 40 ms with fewer (measured: 10 asked with 3 visible came back after
// 43 ms; 5 asked with 5 visible after 12 ms). SQS answers a short poll at
// once. So each poller asks for about as many messages as its last receive
// found (see [BatchAsk]) rather than always BatchSize.
func (m *SQSMapping) Run(ctx context.Context) {
	// The pollers wear the event source's profiler label; ctx does not
	// carry it, so the invocations it reaches wear their function's alone.
	labels := pprof.WithLabels(context.Background(), pprof.Labels(PartLabel, PartEventSource))
	var wg sync.WaitGroup
	for range m.cfg.Concurrency {
		wg.Go(func() {
			pprof.SetGoroutineLabels(labels)
			pause := time.Duration(0)
			ask := NewBatchAsk(m.cfg.BatchSize)
			for ctx.Err() == nil {
				if m.pollOnce(ctx, &ask) {
					pause = 0
					continue
				}
				pause = min(max(2*pause, 5*time.Millisecond), m.cfg.WaitTime)
				sleep(ctx, pause)
			}
		})
	}
	wg.Wait()
}

// BatchAsk is how many messages a poller asks for: as many as its last
// receive found, doubling (up to max) after a receive that found all it
// asked for, so that the emulator answers at its first look instead of
// holding a part-filled batch. The lab's bare pipeline polls with it too.
type BatchAsk struct{ n, max int }

// NewBatchAsk starts asking for max messages.
func NewBatchAsk(max int) BatchAsk { return BatchAsk{max: max} }

// Next is how many messages to ask for now.
func (a *BatchAsk) Next() int {
	if a.n == 0 {
		a.n = a.max
	}
	return a.n
}

// Got records that a receive asking for asked messages found n.
func (a *BatchAsk) Got(asked, n int) {
	switch {
	case n >= asked:
		a.n = min(2*asked, a.max)
	default:
		a.n = max(n, 1)
	}
}

// ReceiveInput is the receive an event source's poller makes: up to n
// messages of queueURL, with every system and message attribute, which
// Lambda puts in the records it hands the function.
func ReceiveInput(queueURL string, n int) *sqs.ReceiveMessageInput {
	return &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(queueURL),
		MaxNumberOfMessages: int32(n),
		//lint:ignore SA1019 local-aws-sqs ignores MessageSystemAttributeNames; AWS accepts both.
		AttributeNames:              []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	}
}

// pollOnce receives one batch and invokes the handler with it. It reports
// whether there was anything to receive.
func (m *SQSMapping) pollOnce(ctx context.Context, ask *BatchAsk) bool {
	asked := ask.Next()
	out, err := m.cfg.SQS.ReceiveMessage(ctx, ReceiveInput(m.cfg.QueueURL, asked))
	if err != nil {
		if ctx.Err() == nil {
			m.cfg.Logger.WarnContext(ctx, "sqs receive failed", "queue", m.cfg.QueueURL, "err", err)
			sleep(ctx, 200*time.Millisecond)
		}
		return false
	}
	ask.Got(asked, len(out.Messages))
	if len(out.Messages) == 0 {
		return false
	}
	m.invoke(ctx, out.Messages)
	return true
}

func (m *SQSMapping) invoke(ctx context.Context, msgs []sqstypes.Message) {
	m.stats.Invocations.Add(1)
	event := toSQSEvent(msgs, m.cfg.QueueARN)
	ictx, cancel := InvokeContext(context.WithoutCancel(ctx), m.cfg.Function, m.cfg.Timeout)
	defer cancel()
	var resp events.SQSEventResponse
	var herr error
	finished := runWithDeadline(ictx, func() { resp, herr = m.cfg.Handler(ictx, event) })
	failed, ok := m.failedIDs(msgs, resp, herr, finished)
	if !ok {
		// The whole batch fails: nothing is deleted, every message comes
		// back after its visibility timeout.
		m.stats.FailedBatches.Add(1)
		m.stats.Failed.Add(int64(len(msgs)))
		m.cfg.Logger.WarnContext(ctx, "batch failed", "function", m.cfg.Function, "records", len(msgs), "finished", finished, "err", herr)
		return
	}
	m.deleteSucceeded(ctx, msgs, failed)
}

// failedIDs returns the records to keep, or ok=false when Lambda would fail
// the whole batch: a handler error, a timeout, or a malformed response.
func (m *SQSMapping) failedIDs(msgs []sqstypes.Message, resp events.SQSEventResponse, herr error, finished bool) (map[string]bool, bool) {
	if !finished || herr != nil {
		return nil, false
	}
	failed := map[string]bool{}
	if !m.cfg.ReportBatchItemFailures {
		return failed, true
	}
	known := map[string]bool{}
	for _, msg := range msgs {
		known[aws.ToString(msg.MessageId)] = true
	}
	for _, f := range resp.BatchItemFailures {
		if !known[f.ItemIdentifier] {
			return nil, false // Lambda treats an unknown or empty ID as a total failure
		}
		failed[f.ItemIdentifier] = true
	}
	return failed, true
}

func (m *SQSMapping) deleteSucceeded(ctx context.Context, msgs []sqstypes.Message, failed map[string]bool) {
	var entries []sqstypes.DeleteMessageBatchRequestEntry
	for i, msg := range msgs {
		id := aws.ToString(msg.MessageId)
		if failed[id] {
			m.stats.Failed.Add(1)
			continue
		}
		if m.cfg.DropAck != nil && m.cfg.DropAck(id) {
			m.stats.DroppedAcks.Add(1)
			continue
		}
		entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: msg.ReceiptHandle})
	}
	if len(entries) == 0 {
		return
	}
	out, err := m.cfg.SQS.DeleteMessageBatch(context.WithoutCancel(ctx), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(m.cfg.QueueURL), Entries: entries})
	if err != nil {
		m.cfg.Logger.WarnContext(ctx, "sqs delete failed", "err", err)
		return
	}
	m.stats.Deleted.Add(int64(len(out.Successful)))
}

// orEmpty is xs, or an empty list for nil.
func orEmpty[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

func toSQSEvent(msgs []sqstypes.Message, queueARN string) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(msgs))}
	for _, msg := range msgs {
		rec := events.SQSMessage{
			MessageId:              aws.ToString(msg.MessageId),
			ReceiptHandle:          aws.ToString(msg.ReceiptHandle),
			Body:                   aws.ToString(msg.Body),
			Md5OfBody:              aws.ToString(msg.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(msg.MD5OfMessageAttributes),
			Attributes:             msg.Attributes,
			MessageAttributes:      map[string]events.SQSMessageAttribute{},
			EventSource:            "aws:sqs",
			EventSourceARN:         queueARN,
			AWSRegion:              "us-east-1",
		}
		for k, v := range msg.MessageAttributes {
			// Lambda sends the list values as empty lists, never null.
			rec.MessageAttributes[k] = events.SQSMessageAttribute{
				StringValue: v.StringValue, BinaryValue: v.BinaryValue, DataType: aws.ToString(v.DataType),
				StringListValues: orEmpty(v.StringListValues), BinaryListValues: orEmpty(v.BinaryListValues),
			}
		}
		ev.Records = append(ev.Records, rec)
	}
	return ev
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
