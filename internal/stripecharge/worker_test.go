package stripecharge_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/paymentworker/paymentworkertest"
	"github.com/hookline/hookline/internal/stripecharge"
	"github.com/hookline/hookline/pkg/idempotency"
)

// Timings of the worker drills, scaled down: the simulator commits at most
// drillCommit after a client gave up and its search lags drillLag, so the
// horizon covers both.
const (
	drillClientTimeout = 300 * time.Millisecond
	drillCommit        = 600 * time.Millisecond
	drillLag           = 200 * time.Millisecond
	drillHorizon       = 1500 * time.Millisecond
	drillSkew          = 100 * time.Millisecond
)

// workerRig is the payment worker with the Stripe adapter against the
// simulator's Stripe face, its idempotency table on the local DynamoDB, and Stripe's
// invoice.finalized mapping for the source "stripe".
type workerRig struct {
	sim    *providersim.Sim
	worker *paymentworker.Worker
	queue  *paymentworkertest.RecordingQueue
}

// rigs numbers the rigs, so that each has a namespace of its own.
var rigs atomic.Int64

func newWorkerRig(t *testing.T, env *localaws.Env) *workerRig {
	t.Helper()
	sim := newStripeSim(t, drillLag)
	client, err := stripecharge.New(stripecharge.Config{APIKey: "sk_test_123", URL: sim.URL(), Timeout: drillClientTimeout})
	if err != nil {
		t.Fatal(err)
	}
	store, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: env.DynamoDB, Table: env.TableName("IdempotencyTable")})
	if err != nil {
		t.Fatal(err)
	}
	// Each rig its own namespace: the drills share one table, and run in
	// parallel.
	reg, err := idempotency.New(idempotency.Config{Store: store, Namespace: fmt.Sprintf("stripe-drill-%d", rigs.Add(1)),
		InProgressTimeout: 3 * time.Second, DeadlineMargin: drillHorizon + drillSkew})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{"stripe": paymentworker.StripeInvoiceMapping})
	if err != nil {
		t.Fatal(err)
	}
	q := paymentworkertest.NewRecordingQueue()
	w, err := paymentworker.New(paymentworker.Config{Registry: reg, Provider: client, Queue: q, Mappings: ms,
		RetryBase: 100 * time.Millisecond, Horizon: drillHorizon, ClockSkew: drillSkew})
	if err != nil {
		t.Fatal(err)
	}
	return &workerRig{sim: sim, worker: w, queue: q}
}

func invoiceEvent(eventID, customer string, amount int64) events.SQSMessage {
	body := fmt.Sprintf(`{"id":%q,"object":"event","type":"invoice.finalized","data":{"object":{"id":"in_%s","object":"invoice","customer":%q,"amount_due":%d,"currency":"usd","number":"N-%s"}}}`,
		eventID, eventID, customer, amount, eventID)
	src, id := "stripe", eventID
	return events.SQSMessage{MessageId: "m-" + eventID, ReceiptHandle: "m-" + eventID, Body: body,
		MessageAttributes: map[string]events.SQSMessageAttribute{
			"source":   {DataType: "String", StringValue: &src},
			"event_id": {DataType: "String", StringValue: &id},
		}}
}

// deliver invokes the worker with m received for the n-th time and
// reports whether it was acknowledged.
func (r *workerRig) deliver(m events.SQSMessage, n int) bool {
	m.Attributes = map[string]string{"ApproximateReceiveCount": strconv.Itoa(n)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: m.MessageId})
	resp, err := r.worker.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{m}})
	return err == nil && len(resp.BatchItemFailures) == 0
}

// settle delivers m until it is acknowledged, waiting as the worker asked
// between deliveries, and returns its dead-letter reason ("" if none).
func (r *workerRig) settle(t *testing.T, m events.SQSMessage) string {
	t.Helper()
	for n := 1; n <= 12; n++ {
		if r.deliver(m, n) {
			return r.queue.DeadLettered(m.MessageId)
		}
		time.Sleep(min(r.queue.TakeRetryAfter(m.MessageId, 500*time.Millisecond), 4*time.Second))
	}
	t.Fatalf("%s: not acknowledged after 12 deliveries", m.MessageId)
	return ""
}

// TestWorkerChargesOnceThroughStripe runs the hostile-provider drills of
// docs/provider-contract.md through the real worker, the adapter and the
// local DynamoDB, against the simulator in Stripe's profile (keys honoured and
// replayed): every event is charged exactly once.
func TestWorkerChargesOnceThroughStripe(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	drills := []struct {
		name  string
		fault providersim.Fault
	}{
		{name: "commit, then 500", fault: providersim.Fault{Kind: providersim.FaultCommitThenError, Status: 500}},
		{name: "commit, then 502 from a proxy", fault: providersim.Fault{Kind: providersim.FaultCommitThenError, Status: 502, Body: "<html>bad gateway</html>"}},
		{name: "commit, then 408", fault: providersim.Fault{Kind: providersim.FaultCommitThenError, Status: 408}},
		{name: "commit, then the connection drops", fault: providersim.Fault{Kind: providersim.FaultDropAfterCharge}},
		{name: "commit after the client gave up", fault: providersim.Fault{Kind: providersim.FaultSlowCommit, Delay: drillCommit}},
		{name: "409 while the first request commits later", fault: providersim.Fault{Kind: providersim.FaultKeyInUse, Delay: drillCommit}},
		{name: "429 without a commit", fault: providersim.Fault{Kind: providersim.FaultRateLimit, RetryAfter: "0"}},
		{name: "503 without a commit (replayed for the key)", fault: providersim.Fault{Kind: providersim.FaultServerError, Status: 503}},
		{name: "connection reset without a commit", fault: providersim.Fault{Kind: providersim.FaultReset}},
	}
	for i, d := range drills {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			// Given Stripe misbehaving on the event's first create
			r := newWorkerRig(t, env)
			id := fmt.Sprintf("evt_drill_%d", i)
			r.sim.Faults.SetFaultFunc(firstRequestOf(d.fault, paymentworker.ProviderKey("stripe", id, 1)))
			// When the event is delivered until acknowledged, and then a
			// duplicate copy arrives
			m := invoiceEvent(id, "cus_drill", 4200)
			if reason := r.settle(t, m); reason != "" {
				t.Fatalf("dead-lettered: %s", reason)
			}
			dup := m
			dup.MessageId, dup.ReceiptHandle = m.MessageId+"-dup", m.MessageId+"-dup"
			if reason := r.settle(t, dup); reason != "" {
				t.Fatalf("duplicate dead-lettered: %s", reason)
			}
			// Then the customer was charged exactly once
			r.sim.Charges.WaitCommits() // a late commit has landed
			if n := r.sim.Charges.SucceededCount(id); n != 1 {
				t.Fatalf("charged %d times (%d creates)", n, r.sim.Charges.Creates())
			}
		})
	}
}

func TestWorkerThroughStripe(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)

	t.Run("five concurrent copies charge once", func(t *testing.T) {
		t.Parallel()
		r := newWorkerRig(t, env)
		m := invoiceEvent("evt_five", "cus_five", 1000)
		var wg sync.WaitGroup
		var failed atomic.Int32
		for c := range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cp := m
				cp.MessageId, cp.ReceiptHandle = fmt.Sprintf("%s-%d", m.MessageId, c), fmt.Sprintf("%s-%d", m.MessageId, c)
				if r.settle(t, cp) != "" {
					failed.Add(1)
				}
			}()
		}
		wg.Wait()
		if failed.Load() != 0 || r.sim.Charges.SucceededCount("evt_five") != 1 {
			t.Fatalf("%d dead-lettered, %d charges", failed.Load(), r.sim.Charges.SucceededCount("evt_five"))
		}
	})

	t.Run("a decline is acknowledged, never retried into a charge", func(t *testing.T) {
		t.Parallel()
		r := newWorkerRig(t, env)
		m := invoiceEvent("evt_declined", providersim.DeclineCustomer, 1000)
		if reason := r.settle(t, m); reason != "" || r.sim.Charges.Creates() != 1 || r.sim.Charges.SucceededCount("evt_declined") != 0 {
			t.Fatalf("reason %q, %d creates, %d charges", reason, r.sim.Charges.Creates(), r.sim.Charges.SucceededCount("evt_declined"))
		}
	})

	t.Run("requires_action waits for the customer, then completes without a second charge", func(t *testing.T) {
		t.Parallel()
		r := newWorkerRig(t, env)
		m := invoiceEvent("evt_3ds", providersim.RequiresActionCustomer, 1000)
		if r.deliver(m, 1) {
			t.Fatal("a pending intent was acknowledged")
		}
		// The intent is keyed by the invoice, the effect key.
		if !r.sim.Charges.Authenticate(paymentworker.ProviderKey("stripe", "in_evt_3ds", 1)) {
			t.Fatal("no intent waits for the customer")
		}
		time.Sleep(r.queue.TakeRetryAfter(m.MessageId, 500*time.Millisecond))
		for n := 2; !r.deliver(m, n); n++ {
			if n > 10 {
				t.Fatal("never completed")
			}
			time.Sleep(min(r.queue.TakeRetryAfter(m.MessageId, 500*time.Millisecond), 4*time.Second))
		}
		if r.sim.Charges.Creates() != 1 || r.sim.Charges.SucceededCount("evt_3ds") != 1 {
			t.Fatalf("%d creates, %d charges", r.sim.Charges.Creates(), r.sim.Charges.SucceededCount("evt_3ds"))
		}
	})

	t.Run("an invoice without a customer goes to the DLQ with its reason", func(t *testing.T) {
		t.Parallel()
		r := newWorkerRig(t, env)
		m := invoiceEvent("evt_nocus", "", 1000)
		m.Body = strings.Replace(m.Body, `"customer":""`, `"customer":null`, 1)
		reason := r.settle(t, m)
		want := `malformed_message: source "stripe": customer: /data/object/customer is missing`
		if reason != want || r.sim.Charges.Creates() != 0 {
			t.Fatalf("reason %q, want %q; %d creates", reason, want, r.sim.Charges.Creates())
		}
	})
}
