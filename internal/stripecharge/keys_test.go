package stripecharge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/paymentworker/paymentworkertest"
	"github.com/hookline/hookline/internal/stripecharge"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
)

// newSourceRig is newWorkerRig for one source of any name, with Stripe's
// invoice mapping.
func newSourceRig(t *testing.T, env *localaws.Env, source string) *workerRig {
	t.Helper()
	sim := newStripeSim(t, drillLag)
	client, err := stripecharge.New(stripecharge.Config{APIKey: "sk_test_123", URL: sim.URL(), Timeout: drillClientTimeout})
	must(t, err)
	store, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: env.DynamoDB, Table: env.TableName("IdempotencyTable")})
	must(t, err)
	reg, err := idempotency.New(idempotency.Config{Store: store, Namespace: fmt.Sprintf("stripe-keys-%d", rigs.Add(1)),
		InProgressTimeout: 3 * time.Second, DeadlineMargin: drillHorizon + drillSkew})
	must(t, err)
	ms, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{source: paymentworker.StripeInvoiceMapping})
	must(t, err)
	q := paymentworkertest.NewRecordingQueue()
	w, err := paymentworker.New(paymentworker.Config{Registry: reg, Provider: client, Queue: q, Mappings: ms,
		RetryBase: 100 * time.Millisecond, Horizon: drillHorizon, ClockSkew: drillSkew})
	must(t, err)
	return &workerRig{sim: sim, worker: w, queue: q}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// sourceEvent is invoiceEvent from another source, for any event ID.
func sourceEvent(t *testing.T, source, eventID, customer string, amount int64) events.SQSMessage {
	t.Helper()
	body, err := json.Marshal(map[string]any{"id": eventID, "object": "event", "type": "invoice.finalized",
		"data": map[string]any{"object": map[string]any{"id": "in_keys", "object": "invoice", "customer": customer,
			"amount_due": amount, "currency": "usd", "number": "N-keys"}}})
	must(t, err)
	m := invoiceEvent("keys", customer, amount)
	m.Body = string(body)
	m.MessageAttributes["source"] = events.SQSMessageAttribute{DataType: "String", StringValue: &source}
	m.MessageAttributes["event_id"] = events.SQSMessageAttribute{DataType: "String", StringValue: &eventID}
	return m
}

// TestWorstCaseIDsChargeOnceThroughStripe: the longest source name and
// event ID, full of the characters a key or a search could trip on, go
// through the worker, the adapter and a simulator that keeps Stripe's
// documented rules (keys of at most 255 characters; only \' escaped in a
// search). The first create commits and its answer is lost, so only the
// search can tell the worker that the customer was charged.
func TestWorstCaseIDsChargeOnceThroughStripe(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	tests := []struct{ name, source, eventID string }{
		{name: "64-character source, 255-byte event ID", source: strings.Repeat("s", 64),
			eventID: "evt" + strings.Repeat(`#'\:é`, 42)},
		{name: "backslash and quote in a short ID", source: "stripe", eventID: `evt_\'_x\\`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if len(tt.source) > 64 || len(tt.eventID) > 255 {
				t.Fatalf("source %d and event ID %d bytes exceed the limits", len(tt.source), len(tt.eventID))
			}
			r := newSourceRig(t, env, tt.source)
			// Given Stripe commits the first create of every key and answers 500,
			r.sim.Faults.SetFaultFunc(func(_ string, n int) providersim.Fault {
				if n == 1 {
					return providersim.Fault{Kind: providersim.FaultCommitThenError, Status: 500}
				}
				return providersim.Fault{}
			})
			// when the event is delivered until acknowledged, and a duplicate
			// copy after it,
			m := sourceEvent(t, tt.source, tt.eventID, fmt.Sprintf("cus_keys_%d", i), 4200)
			if reason := r.settle(t, m); reason != "" {
				t.Fatalf("dead-lettered: %s", reason)
			}
			dup := m
			dup.MessageId, dup.ReceiptHandle = m.MessageId+"-dup", m.MessageId+"-dup"
			if reason := r.settle(t, dup); reason != "" {
				t.Fatalf("duplicate dead-lettered: %s", reason)
			}
			// then the customer was charged exactly once.
			r.sim.Charges.WaitCommits()
			if n := r.sim.Charges.SucceededCount(tt.eventID); n != 1 {
				t.Fatalf("charged %d times (%d creates)", n, r.sim.Charges.Creates())
			}
		})
	}
}

// TestKeyFieldsOnTheIntent: an intent carries the hashed key in its own
// field, which the lookup searches, and the readable reference beside it;
// an intent made under a legacy key is still found under it.
func TestKeyFieldsOnTheIntent(t *testing.T) {
	ctx := context.Background()
	sim := newStripeSim(t, 0)
	c := newClient(t, sim.URL())
	key := paymentworker.ProviderKey("stripe", `evt_'\:é`, 1)
	req := provider.ChargeRequest{EventID: `evt_'\:é`, Customer: "cus_fields", Amount: 700, Currency: "usd",
		Reference: paymentworker.Reference("stripe", `evt_'\:é`, 1)}
	if res := c.CreateCharge(ctx, key, req); res.Outcome != provider.Succeeded {
		t.Fatalf("create: %s %v", res.Outcome, res.Err)
	}
	ch, found, err := c.LookupCharge(ctx, key)
	if err != nil || !found || ch.IdempotencyKey != key || ch.EventID != req.EventID {
		t.Fatalf("lookup: %+v %v %v", ch, found, err)
	}
	for field, value := range map[string]string{stripecharge.MetadataKey: key, stripecharge.MetadataReference: req.Reference} {
		if n := searchCount(t, sim.URL(), field, value); n != 1 {
			t.Errorf("metadata[%s]=%q: %d intents, want 1", field, value, n)
		}
	}
	if n := searchCount(t, sim.URL(), stripecharge.MetadataLegacyKey, key); n != 0 {
		t.Errorf("the hashed key is also in the legacy field")
	}
	// A key Stripe would refuse is refused before anything is sent.
	creates := sim.Charges.Creates()
	long := "stripe:" + strings.Repeat("e", 255)
	if res := c.CreateCharge(ctx, long, req); res.Outcome != provider.Rejected || !errors.Is(res.Err, provider.ErrInvalidRequest) || sim.Charges.Creates() != creates {
		t.Fatalf("a 262-character key: %s %v", res.Outcome, res.Err)
	}
}

// searchCount asks the simulator's search for intents with metadata
// field = value, as Stripe's search API is asked.
func searchCount(t *testing.T, base, field, value string) int {
	t.Helper()
	q := url.Values{"query": {fmt.Sprintf("metadata['%s']:'%s'", field, strings.ReplaceAll(value, "'", `\'`))}}
	hreq, err := http.NewRequest(http.MethodGet, base+"/v1/payment_intents/search?"+q.Encode(), nil)
	must(t, err)
	hreq.Header.Set("Authorization", "Bearer sk_test_123")
	resp, err := http.DefaultClient.Do(hreq)
	must(t, err)
	defer resp.Body.Close()
	var body struct {
		Data []json.RawMessage `json:"data"`
	}
	must(t, json.NewDecoder(resp.Body).Decode(&body))
	return len(body.Data)
}
