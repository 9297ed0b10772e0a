package queue_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/pkg/queue"
)

// flakySQS fails GetQueueAttributes while down is set; everything else
// goes to the local SQS.
type flakySQS struct {
	queue.SQSAPI
	down  bool
	calls int
}

func (f *flakySQS) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.calls++
	if f.down {
		return nil, errors.New("RequestThrottled: injected")
	}
	return f.SQSAPI.GetQueueAttributes(ctx, in, opts...)
}

func TestMaxReceiveCountRecoversFromATransientError(t *testing.T) {
	env := localaws.StartForTest(t)
	api := &flakySQS{SQSAPI: env.SQS, down: true}
	q, err := queue.New(queue.Config{SQS: api, URL: env.QueueURL("payments"), DeadLetterURL: env.QueueURL("payments-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Given a first read of the redrive policy that fails,
	if got := q.MaxReceiveCount(ctx); got < 1000 {
		t.Fatalf("with SQS down: %d, want a count that never dead-letters early", got)
	}
	// when SQS answers again,
	api.down = false
	// then the template's maxReceiveCount is read, and then kept.
	if got := q.MaxReceiveCount(ctx); got != 5 {
		t.Fatalf("after recovery: %d, want the template's 5", got)
	}
	calls := api.calls
	q.MaxReceiveCount(ctx)
	if api.calls != calls {
		t.Fatalf("a successful read was not kept: %d calls, then %d", calls, api.calls)
	}
}
