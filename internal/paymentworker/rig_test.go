package paymentworker_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/dev/lambdalocal"
	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/queue"
)

// rig is the payment pipeline from the queue on: local AWS, the provider
// simulator with idempotency keys IGNORED (so only our registry prevents
// duplicates), the worker and the SQS event-source adapter.
type rig struct {
	env     *localaws.Env
	sim     *providersim.Sim
	client  *provider.Client
	reg     *idempotency.Registry
	worker  *paymentworker.Worker
	mapping *lambdalocal.SQSMapping
	url     string
}

type rigOptions struct {
	noRegistry bool
	dropAck    func(string) bool
	// visibility overrides the payments queue's visibility timeout so that
	// lost acknowledgements come back in seconds, not the template's 180 s.
	visibility int
	timeout    time.Duration
	// maxReceive overrides the queue's maxReceiveCount. local-aws-sqs counts
	// every ChangeMessageVisibility as a receive, so a record the worker
	// bounces while another claim is in progress (as under provider
	// timeouts) reaches the DLQ after fewer real deliveries than on AWS;
	// drills that bounce many records give it the headroom AWS would.
	maxReceive int
}

// The rig's simulator commits nothing after a client gave up and its
// lookup does not lag, so its horizon is short.
const (
	rigHorizon = 300 * time.Millisecond
	rigSkew    = 100 * time.Millisecond
)

func newRig(t *testing.T, o rigOptions) *rig {
	t.Helper()
	r := &rig{env: localaws.StartForTest(t)}
	r.url = r.env.QueueURL("payments")
	if o.visibility == 0 {
		o.visibility = 2
	}
	if o.timeout == 0 {
		o.timeout = 3 * time.Second
	}
	attrs := map[string]string{"VisibilityTimeout": strconv.Itoa(o.visibility)}
	if o.maxReceive > 0 {
		attrs["RedrivePolicy"] = fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, r.env.QueueARN("payments-dlq"), o.maxReceive)
	}
	_, err := r.env.SQS.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(r.url), Attributes: attrs})
	must(t, err)
	r.sim, err = providersim.New(providersim.Config{HonourIdempotencyKeys: false})
	must(t, err)
	must(t, r.sim.Start())
	t.Cleanup(func() { r.sim.Close() })
	r.client, err = provider.New(provider.Config{BaseURL: r.sim.URL(), Timeout: 500 * time.Millisecond, MaxAttempts: 4, BaseBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	must(t, err)
	store, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: r.env.DynamoDB, Table: r.env.TableName("IdempotencyTable")})
	must(t, err)
	r.reg, err = idempotency.New(idempotency.Config{Store: store, Namespace: "payments", DeadlineMargin: rigHorizon + rigSkew})
	must(t, err)
	q, err := queue.New(queue.Config{SQS: r.env.SQS, URL: r.url, DeadLetterURL: r.env.QueueURL("payments-dlq")})
	must(t, err)
	var registry paymentworker.Registry = r.reg
	var charger paymentworker.Charger = r.client
	if o.noRegistry {
		registry, charger = noRegistry{}, naiveCharger{r.client}
	}
	r.worker, err = paymentworker.New(paymentworker.Config{Registry: registry, Provider: charger, Queue: q, RetryBase: 200 * time.Millisecond, Horizon: rigHorizon, ClockSkew: rigSkew})
	must(t, err)
	r.mapping, err = lambdalocal.NewSQSMapping(lambdalocal.SQSMappingConfig{
		SQS: r.env.SQS, QueueURL: r.url, Function: "PaymentWorkerFunction", Handler: r.worker.Handle,
		ReportBatchItemFailures: true, Concurrency: 4, Timeout: o.timeout, DropAck: o.dropAck,
	})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.mapping.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// noRegistry claims every key every time: the worker without idempotency,
// to prove the drills can fail.
type noRegistry struct{}

func (noRegistry) Claim(context.Context, string, string) (idempotency.Claim, error) {
	return idempotency.Claim{Status: idempotency.StatusClaimed, Token: "none", Attempt: 1, HeldUntil: time.Now().Add(time.Minute)}, nil
}
func (noRegistry) Complete(context.Context, string, string, []byte) error { return nil }
func (noRegistry) CompleteFor(context.Context, string, string, []byte, time.Duration) error {
	return nil
}
func (noRegistry) Status(context.Context, string) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, nil
}
func (noRegistry) Release(context.Context, string, string, time.Time) error {
	return nil
}

// naiveCharger never finds a charge by lookup: with noRegistry it is the
// worker with no idempotency at all.
type naiveCharger struct{ *provider.Client }

func (naiveCharger) LookupCharge(context.Context, string) (*provider.Charge, bool, error) {
	return nil, false, nil
}

func paymentBody(eventID string, amount int64) string {
	return fmt.Sprintf(`{"id":%q,"type":"payment.requested","data":{"customer":"cus_%s","amount":%d,"currency":"usd"}}`, eventID, eventID, amount)
}

// enqueue sends messages as the receiver does: raw body, intake attributes.
func (r *rig) enqueue(t *testing.T, bodies map[string]string) {
	t.Helper()
	var batch []sqstypes.SendMessageBatchRequestEntry
	flush := func() {
		if len(batch) == 0 {
			return
		}
		out, err := r.env.SQS.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(r.url), Entries: batch})
		must(t, err)
		if len(out.Failed) > 0 {
			t.Fatalf("send batch: %d failed", len(out.Failed))
		}
		batch = batch[:0]
	}
	i := 0
	for id, body := range bodies {
		eventID := id
		if k := len(eventID); k > 2 && eventID[k-2] == '#' {
			eventID = eventID[:k-2] // "evt#3": the 3rd copy of evt
		}
		batch = append(batch, sqstypes.SendMessageBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(body),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{
				"source":   {DataType: aws.String("String"), StringValue: aws.String("payments")},
				"event_id": {DataType: aws.String("String"), StringValue: aws.String(eventID)},
			},
		})
		i++
		if len(batch) == 10 {
			flush()
		}
	}
	flush()
}

// acked counts messages the event source deleted: acknowledged records,
// including those the worker dead-lettered itself. A message whose
// visibility lapsed while it was still being processed is received and
// deleted twice (both deletes succeed), so waits compare with >=.
func (r *rig) acked() int { return int(r.mapping.Stats().Deleted.Load()) }

// countingCharger counts provider calls the worker makes.
type countingCharger struct {
	paymentworker.Charger
	calls atomic.Int32
}

func (c *countingCharger) CreateCharge(ctx context.Context, key string, req provider.ChargeRequest) provider.Result {
	c.calls.Add(1)
	return c.Charger.CreateCharge(ctx, key, req)
}
