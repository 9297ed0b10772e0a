package ops_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/dev/lambdalocal"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/testkit"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/queue"
)

// startPaymentWorker consumes the payments queue with the real worker
// against the provider simulator with idempotency keys IGNORED, so only
// the registry stands between a redrive and a second charge.
func startPaymentWorker(t *testing.T, h *harness) (*providersim.Sim, *lambdalocal.SQSMapping) {
	t.Helper()
	url := h.env.QueueURL("payments")
	_, err := h.env.SQS.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{
		QueueUrl: aws.String(url), Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(2)},
	})
	must(t, err)
	sim, err := providersim.New(providersim.Config{HonourIdempotencyKeys: false})
	must(t, err)
	must(t, sim.Start())
	t.Cleanup(func() { sim.Close() })
	client, err := provider.New(provider.Config{BaseURL: sim.URL(), Timeout: 500 * time.Millisecond, MaxAttempts: 4,
		BaseBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	must(t, err)
	q, err := queue.New(queue.Config{SQS: h.env.SQS, URL: url, DeadLetterURL: h.env.QueueURL("payments-dlq")})
	must(t, err)
	worker, err := paymentworker.New(paymentworker.Config{Registry: h.registry, Provider: client, Queue: q, RetryBase: 200 * time.Millisecond})
	must(t, err)
	mapping, err := lambdalocal.NewSQSMapping(lambdalocal.SQSMappingConfig{
		SQS: h.env.SQS, QueueURL: url, Function: "PaymentWorkerFunction", Handler: worker.Handle,
		ReportBatchItemFailures: true, Concurrency: 2, Timeout: 3 * time.Second,
	})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { mapping.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return sim, mapping
}

func TestRedriveThenWorkerChargesEachEventOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	sim, mapping := startPaymentWorker(t, h)
	ctx := context.Background()

	// given evt_done, charged and COMPLETED through the worker, whose
	// duplicate was dead-lettered anyway (a lost acknowledgement)
	_, err := h.env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(h.env.QueueURL("payments")),
		MessageBody:       aws.String(paymentBody("evt_done", 1200)),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{"source": str("payments"), "event_id": str("evt_done")}})
	must(t, err)
	testkit.Eventually(t, 30*time.Second, "evt_done charged", func() bool {
		return sim.Charges.ChargeCount("evt_done") == 1 && mapping.Stats().Deleted.Load() == 1
	})
	h.deadLetter(t, "payments-dlq", "payments", "evt_done", paymentBody("evt_done", 1200))
	// and evt_wip, claimed by a worker that died before charging (its claim
	// runs out in 2 s), and evt_new, never processed
	wip := paymentBody("evt_wip", 700)
	p, err := paymentworker.ParseMessage(events.SQSMessage{Body: wip, MessageAttributes: map[string]events.SQSMessageAttribute{
		"source": {DataType: "String", StringValue: aws.String("payments")}, "event_id": {DataType: "String", StringValue: aws.String("evt_wip")},
	}})
	must(t, err)
	store, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: h.env.DynamoDB, Table: h.env.TableName("IdempotencyTable")})
	must(t, err)
	dying, err := idempotency.New(idempotency.Config{Store: store, Namespace: "payments", InProgressTimeout: 2 * time.Second})
	must(t, err)
	_, err = dying.Claim(ctx, p.Key(), p.Hash())
	must(t, err)
	h.deadLetter(t, "payments-dlq", "payments", "evt_wip", wip)
	h.deadLetter(t, "payments-dlq", "payments", "evt_new", paymentBody("evt_new", 300))
	testkit.Eventually(t, 30*time.Second, "three dead letters counted", func() bool { vis, _ := h.counts(t, "payments-dlq"); return vis == 3 })

	// when the operator redrives, skipping completed keys
	rep, err := h.ops.Redrive(ctx, ops.RedriveOptions{Queue: "payments-dlq", SkipCompleted: true})
	must(t, err)
	outcomes := statesByEvent(rep.Items, func(it ops.RedriveItem) (string, string) { return it.EventID, it.Outcome })
	want := map[string]string{"evt_done": ops.OutcomeSkipped, "evt_wip": ops.OutcomeMoved, "evt_new": ops.OutcomeMoved}
	if !equalMaps(outcomes, want) {
		t.Fatalf("outcomes %v, want %v", outcomes, want)
	}

	// then the worker charges each redriven event once, and nothing twice
	testkit.Eventually(t, 60*time.Second, "redriven events charged", func() bool {
		return sim.Charges.ChargeCount("evt_wip") == 1 && sim.Charges.ChargeCount("evt_new") == 1 && mapping.Stats().Deleted.Load() == 3
	})
	time.Sleep(500 * time.Millisecond)
	if sim.Charges.TotalCharges() != 3 || sim.Charges.Duplicates() != 0 || sim.Charges.ChargeCount("evt_done") != 1 {
		t.Fatalf("charges: total %d, duplicates %d, evt_done %d", sim.Charges.TotalCharges(), sim.Charges.Duplicates(), sim.Charges.ChargeCount("evt_done"))
	}
	for _, id := range []string{"evt_done", "evt_wip", "evt_new"} {
		rec, ok, err := h.registry.Status(ctx, "payments:"+id)
		must(t, err)
		if !ok || rec.State != idempotency.StateCompleted {
			t.Fatalf("%s: key %+v (found %t)", id, rec, ok)
		}
	}
}
