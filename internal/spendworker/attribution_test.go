package spendworker_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/spendworker"
	"github.com/hookline/hookline/pkg/queue"
)

// flakyMarks fails its first mark, then records every mark it is given.
type flakyMarks struct {
	mu    sync.Mutex
	fails int
	marks []intake.Mark
}

func (f *flakyMarks) Mark(_ context.Context, m intake.Mark) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fails > 0 {
		f.fails--
		return false, errors.New("dynamodb: throttled")
	}
	f.marks = append(f.marks, m)
	return true, nil
}

func TestAFailedAttributionMarkRetriesTheRecordAndCountsItOnce(t *testing.T) {
	t.Parallel()
	// Given a worker whose first intake mark fails
	f := newFixture(t)
	q, err := queue.New(queue.Config{SQS: f.env.SQS, URL: f.env.QueueURL("usage"), DeadLetterURL: f.env.QueueURL("usage-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	marks := &flakyMarks{fails: 1}
	w, err := spendworker.New(spendworker.Config{Ledger: f.ledger.Ledger, Queue: q, Attributions: marks})
	if err != nil {
		t.Fatal(err)
	}
	msg := usageMessage("evt_mark_1", "ur_mark_1", "wl-1", 40)
	msg.MessageAttributes["source"] = events.SQSMessageAttribute{StringValue: aws.String("usage"), DataType: "String"}
	ctx := context.Background()
	// When the record is delivered, and delivered again
	first, err := w.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}})
	if err != nil {
		t.Fatal(err)
	}
	second, err := w.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}})
	if err != nil {
		t.Fatal(err)
	}
	// Then the first delivery returns to the queue, the second is
	// acknowledged and marked, and the record is counted once
	if len(first.BatchItemFailures) != 1 || len(second.BatchItemFailures) != 0 {
		t.Fatalf("failures = %v then %v, want the record back once, then acknowledged", first.BatchItemFailures, second.BatchItemFailures)
	}
	want := intake.Mark{Source: "usage", EventID: "evt_mark_1", State: intake.Attributed, Workload: "wl-1"}
	if len(marks.marks) != 1 || marks.marks[0] != want {
		t.Fatalf("marks = %+v, want [%+v]", marks.marks, want)
	}
	wl, err := f.ledger.Workloads.Get(ctx, "wl-1")
	if err != nil || wl.Total != 40 {
		t.Fatalf("total = %d, %v; want 40", wl.Total, err)
	}
}
