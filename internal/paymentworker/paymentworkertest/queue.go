package paymentworkertest

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/paymentworker"
)

// RecordingQueue is a [paymentworker.Queue] that records the waits and dead
// letters the worker asks for. It is safe for concurrent use.
type RecordingQueue struct {
	mu    sync.Mutex
	after map[string]time.Duration
	dead  map[string]string
}

var _ paymentworker.Queue = (*RecordingQueue)(nil)

// NewRecordingQueue returns an empty RecordingQueue.
func NewRecordingQueue() *RecordingQueue {
	return &RecordingQueue{after: map[string]time.Duration{}, dead: map[string]string{}}
}

// RetryAfter implements [paymentworker.Queue].
func (q *RecordingQueue) RetryAfter(_ context.Context, receipt string, d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.after[receipt] = d
}

// DeadLetter implements [paymentworker.Queue].
func (q *RecordingQueue) DeadLetter(_ context.Context, m events.SQSMessage, reason string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.dead[m.MessageId] = reason
	return nil
}

// MaxReceiveCount implements [paymentworker.Queue]: 10.
func (q *RecordingQueue) MaxReceiveCount(context.Context) int { return 10 }

// TakeRetryAfter returns, and forgets, the wait the worker asked for
// receipt, or def when it asked for none.
func (q *RecordingQueue) TakeRetryAfter(receipt string, def time.Duration) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	d, ok := q.after[receipt]
	delete(q.after, receipt)
	if !ok {
		return def
	}
	return d
}

// DeadLettered returns the reason the message with id was dead-lettered
// for, or "".
func (q *RecordingQueue) DeadLettered(id string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dead[id]
}
