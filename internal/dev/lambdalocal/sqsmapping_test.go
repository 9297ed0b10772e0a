package lambdalocal_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/dev/lambdalocal"
	"github.com/hookline/hookline/internal/dev/localaws"
)

// recorder remembers every body a handler saw and how often.
type recorder struct {
	mu    sync.Mutex
	seen  map[string]int
	count map[string]string // body -> last ApproximateReceiveCount
}

func (r *recorder) note(m events.SQSMessage) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[m.Body]++
	r.count[m.Body] = m.Attributes["ApproximateReceiveCount"]
	return r.seen[m.Body]
}

func sendBodies(t *testing.T, env *localaws.Env, url string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		_, err := env.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{
			QueueUrl: aws.String(url), MessageBody: aws.String(b),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{"source": {DataType: aws.String("String"), StringValue: aws.String("test")}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func depth(t *testing.T, env *localaws.Env, url string) string {
	t.Helper()
	out, err := env.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes["ApproximateNumberOfMessages"]
}

func runMapping(t *testing.T, cfg lambdalocal.SQSMappingConfig, until func() bool) {
	t.Helper()
	m, err := lambdalocal.NewSQSMapping(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	for ctx.Err() == nil && !until() {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-done
	if !until() {
		t.Fatal("condition not reached within 20s")
	}
}

func TestSQSMappingDeletesOnlySuccessfulRecords(t *testing.T) {
	env := localaws.StartForTest(t)
	// A short visibility timeout so failed records return quickly.
	out, err := env.SQS.CreateQueue(context.Background(), &sqs.CreateQueueInput{
		QueueName: aws.String("mapping-test"), Attributes: map[string]string{"VisibilityTimeout": "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(out.QueueUrl)
	var bodies []string
	for i := range 20 {
		bodies = append(bodies, fmt.Sprintf("m%02d", i))
	}
	sendBodies(t, env, url, bodies...)
	rec := &recorder{seen: map[string]int{}, count: map[string]string{}}
	handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		if lc, ok := lambdacontext.FromContext(ctx); !ok || lc.AwsRequestID == "" {
			return events.SQSEventResponse{}, errors.New("no lambda context")
		}
		if _, ok := ctx.Deadline(); !ok {
			return events.SQSEventResponse{}, errors.New("no deadline")
		}
		var resp events.SQSEventResponse
		for _, m := range ev.Records {
			// Odd-numbered messages fail on their first delivery only.
			if n := rec.note(m); n == 1 && strings.ContainsAny(m.Body[len(m.Body)-1:], "13579") {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			}
		}
		return resp, nil
	}
	runMapping(t, lambdalocal.SQSMappingConfig{
		SQS: env.SQS, QueueURL: url, Handler: handler, ReportBatchItemFailures: true, Concurrency: 2,
	}, func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.seen) == 20 && sum(rec.seen) == 30 && depth(t, env, url) == "0"
	})

	for _, b := range bodies {
		odd := strings.ContainsAny(b[len(b)-1:], "13579")
		want, wantCount := 1, "1"
		if odd {
			want, wantCount = 2, "2"
		}
		if rec.seen[b] != want || rec.count[b] != wantCount {
			t.Errorf("%s: seen %d times, receive count %s; want %d and %s", b, rec.seen[b], rec.count[b], want, wantCount)
		}
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func TestSQSMappingFailsWholeBatch(t *testing.T) {
	tests := []struct {
		name    string
		handler lambdalocal.SQSHandler
	}{
		{"handler error", func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{}, errors.New("boom")
		}},
		{"deadline overrun", func(ctx context.Context, _ events.SQSEvent) (events.SQSEventResponse, error) {
			<-ctx.Done()
			time.Sleep(50 * time.Millisecond)
			return events.SQSEventResponse{}, nil
		}},
		{"unknown item identifier", func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: ""}}}, nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := localaws.StartForTest(t)
			url := env.QueueURL("usage")
			sendBodies(t, env, url, "a", "b", "c")
			m, err := lambdalocal.NewSQSMapping(lambdalocal.SQSMappingConfig{
				SQS: env.SQS, QueueURL: url, Handler: tc.handler, ReportBatchItemFailures: true,
				Timeout: 300 * time.Millisecond, Concurrency: 1,
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { m.Run(ctx); close(done) }()
			for m.Stats().FailedBatches.Load() == 0 {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			<-done
			if d := m.Stats().Deleted.Load(); d != 0 {
				t.Fatalf("deleted %d records from a failed batch", d)
			}
			if got := depth(t, env, url); got != "3" {
				t.Fatalf("queue depth = %s, want 3 (all kept)", got)
			}
		})
	}
}
