package paymentworker_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/paymentworker/paymentworkertest"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/webhook"
)

// mollieRig is the worker with a Mollie fetcher on the Mollie double.
type mollieRig struct {
	mollie *providersim.MollieAPI
	sim    *providersim.Sim
	queue  *paymentworkertest.RecordingQueue
	worker *paymentworker.Worker
	n      int
}

func newMollieRig(t *testing.T) *mollieRig {
	t.Helper()
	env := localaws.StartForTest(t)
	mollie, err := providersim.StartMollieAPI()
	must(t, err)
	t.Cleanup(func() { mollie.Close() })
	sim, err := providersim.New(providersim.Config{})
	must(t, err)
	must(t, sim.Start())
	t.Cleanup(func() { sim.Close() })
	client, err := provider.New(provider.Config{BaseURL: sim.URL()})
	must(t, err)
	store, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: env.DynamoDB, Table: env.TableName("IdempotencyTable")})
	must(t, err)
	reg, err := idempotency.New(idempotency.Config{Store: store, Namespace: "payments"})
	must(t, err)
	// Mollie's payment carries the merchant's own customer and minor
	// amount in its metadata.
	maps, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{
		"shop-mollie": {Scheme: "mollie", Customer: "/item/metadata/customer", Amount: "/item/metadata/amount_minor", Currency: "/item/amount/currency"},
	})
	must(t, err)
	r := &mollieRig{mollie: mollie, sim: sim, queue: paymentworkertest.NewRecordingQueue()}
	r.worker, err = paymentworker.New(paymentworker.Config{Registry: reg, Provider: client, Queue: r.queue, Mappings: maps,
		Effects:  map[string]paymentworker.Charger{paymentworker.EffectContract: client},
		Fetchers: map[string]paymentworker.Fetcher{"mollie": &paymentworker.MollieClient{BaseURL: mollie.URL(), APIKey: providersim.MollieAPIKey, Timeout: time.Second}}})
	must(t, err)
	return r
}

// ping is the queue message the receiver makes of Mollie's ping for id.
func (r *mollieRig) ping(t *testing.T, id string) events.SQSMessage {
	t.Helper()
	v, err := webhook.NewVerifier(webhook.VerifierConfig{Scheme: webhook.SchemeMollie})
	must(t, err)
	d, err := v.VerifyDelivery(webhook.HeaderMap{}, []byte("id="+id), nil)
	must(t, err)
	r.n++
	str := func(s string) events.SQSMessageAttribute {
		return events.SQSMessageAttribute{DataType: "String", StringValue: &s}
	}
	return events.SQSMessage{MessageId: "m" + string(rune('a'+r.n)), ReceiptHandle: "rh" + string(rune('a'+r.n)), Body: string(d.Items[0].Payload),
		Attributes:        map[string]string{"ApproximateReceiveCount": "1"},
		MessageAttributes: map[string]events.SQSMessageAttribute{"source": str("shop-mollie"), "event_id": str(d.Items[0].EventID)}}
}

func (r *mollieRig) handle(t *testing.T, m events.SQSMessage) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := r.worker.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{m}})
	must(t, err)
	return len(resp.BatchItemFailures) == 0
}

func molliePaid(id, status string) providersim.MolliePayment {
	return providersim.MolliePayment{ID: id, Status: status, Amount: providersim.MollieAmount{Value: "12.50", Currency: "EUR"},
		Metadata: map[string]any{"customer": "cus_mollie_1", "amount_minor": 1250}}
}

// TestMollieIsFetchedBeforeActing: a Mollie ping is an untrusted ID. The
// worker fetches the payment, acts on the status it fetched under the key
// ID + status, retries while the read lags or fails, and never acts on an
// ID Mollie does not know, nor dead-letters it.
func TestMollieIsFetchedBeforeActing(t *testing.T) {
	t.Parallel()
	r := newMollieRig(t)
	// Given a payment that is open, then paid, behind a read that lags by 300 ms
	r.mollie.SetPayment(molliePaid("tr_lag1", "open"))
	r.mollie.SetLag(300 * time.Millisecond)
	time.Sleep(350 * time.Millisecond)
	r.mollie.SetPayment(molliePaid("tr_lag1", "paid"))
	ping := r.ping(t, "tr_lag1")
	// When the ping is handled at once, then the stale "open" is not acted on: it comes back
	if r.handle(t, ping) {
		t.Fatal("acknowledged on a stale, unsettled status")
	}
	if n := r.sim.Charges.SucceededCount("tr_lag1:open"); n != 0 {
		t.Fatalf("charged on open %d times", n)
	}
	// When it comes back after the lag, then it is charged once, under ID + status
	time.Sleep(350 * time.Millisecond)
	if !r.handle(t, ping) {
		t.Fatal("not acknowledged once paid")
	}
	// And the same ping again (Mollie's retry), and another ping for the same status, charge nothing more
	if !r.handle(t, ping) || !r.handle(t, r.ping(t, "tr_lag1")) {
		t.Fatal("a repeated ping was not acknowledged")
	}
	if n := r.sim.Charges.SucceededCount("tr_lag1:paid"); n != 1 {
		t.Fatalf("charged %d times, want once", n)
	}

	// Given Mollie failing, then the message is retried, not acted on, not dead-lettered
	r.mollie.SetLag(0)
	r.mollie.SetPayment(molliePaid("tr_fail1", "paid"))
	r.mollie.FailNext(1)
	failing := r.ping(t, "tr_fail1")
	if r.handle(t, failing) || r.queue.DeadLettered(failing.MessageId) != "" {
		t.Fatal("a failed fetch was acknowledged or dead-lettered")
	}
	if !r.handle(t, failing) || r.sim.Charges.SucceededCount("tr_fail1:paid") != 1 {
		t.Fatal("not charged once Mollie answered")
	}

	// Given an ID Mollie never issued (anyone can send one), then it is
	// acknowledged as no effect: not charged, and not dead-lettered, which
	// would page on-call for a stranger's ping
	forged := r.ping(t, "tr_forged1")
	if !r.handle(t, forged) {
		t.Fatal("forged ID: not acknowledged")
	}
	if reason := r.queue.DeadLettered(forged.MessageId); reason != "" {
		t.Fatalf("forged ID: dead-lettered with %q", reason)
	}
	// Given a payment that expired, then it is acknowledged without a charge
	r.mollie.SetPayment(molliePaid("tr_exp1", "expired"))
	if !r.handle(t, r.ping(t, "tr_exp1")) || r.sim.Charges.TotalCharges() != 2 {
		t.Fatalf("expired: total charges %d, want 2", r.sim.Charges.TotalCharges())
	}
}
