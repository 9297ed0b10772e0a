package stripecharge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/stripecharge"
	"github.com/hookline/hookline/pkg/provider"
)

// A customer with a default payment method and intents that succeed: the
// bundled fixtures with those two fields changed.
var succeedingFixtures = map[string]map[string]any{
	"customer": {"invoice_settings": map[string]any{
		"custom_fields": nil, "default_payment_method": "pm_card_visa", "footer": nil, "rendering_options": nil,
	}},
	"payment_intent": {"status": "succeeded", "last_payment_error": nil},
}

func newClient(t *testing.T, url string) *stripecharge.Client {
	t.Helper()
	c, err := stripecharge.New(stripecharge.Config{APIKey: "sk_test_123", URL: url, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAgainstStripeMock sends the adapter's real requests to stripe-mock,
// which checks each against Stripe's OpenAPI specification and answers
// from its fixtures (it keeps no state).
func TestAgainstStripeMock(t *testing.T) {
	t.Parallel()
	url := startStripeMock(t, fixtures(t, succeedingFixtures))
	c := newClient(t, url)
	ctx := context.Background()
	req := provider.ChargeRequest{EventID: "evt_1", Customer: "cus_123", Amount: 2500, Currency: "USD", Description: "invoice in_1"}

	t.Run("a charge is a confirmed off-session PaymentIntent", func(t *testing.T) {
		// Given a customer with a default payment method
		// When the adapter charges
		res := c.CreateCharge(ctx, "stripe:evt_1", req)
		// Then stripe-mock accepted every parameter and the intent succeeded
		if res.Outcome != provider.Succeeded || res.Err != nil {
			t.Fatalf("outcome %s, err %v", res.Outcome, res.Err)
		}
		ch := res.Charge
		if ch.ID == "" || ch.Amount != 2500 || ch.Currency != "usd" || ch.Customer != "cus_123" {
			t.Fatalf("charge %+v: want the request's amount, currency in lower case, customer", ch)
		}
		// (stripe-mock reflects scalar parameters but not metadata; the
		// metadata and headers sent are checked against the fake in
		// fake_test.go.)
	})

	t.Run("a lookup is a valid search query", func(t *testing.T) {
		// Given stripe-mock, whose search answers a fixture intent that
		// carries no hookline metadata
		// When the adapter looks a key up
		ch, found, err := c.LookupCharge(ctx, "stripe:evt_'quoted'#2")
		// Then the query passed the specification, and the fixture is not
		// taken for the key's intent
		if err != nil || found || ch != nil {
			t.Fatalf("lookup: found %v %+v, err %v", found, ch, err)
		}
	})

	t.Run("a bad request is rejected before sending", func(t *testing.T) {
		res := c.CreateCharge(ctx, "stripe:evt_2", provider.ChargeRequest{EventID: "evt_2", Customer: "cus_123", Currency: "usd"})
		if res.Outcome != provider.Rejected || !errors.Is(res.Err, provider.ErrInvalidRequest) {
			t.Fatalf("outcome %s, err %v", res.Outcome, res.Err)
		}
	})
}

// TestStripeMockCustomerWithoutPaymentMethod: stripe-mock's bundled
// customer has no default payment method, so nothing is charged and the
// event is rejected with that reason.
func TestStripeMockCustomerWithoutPaymentMethod(t *testing.T) {
	t.Parallel()
	url := startStripeMock(t, "")
	c := newClient(t, url)
	res := c.CreateCharge(context.Background(), "stripe:evt_3", provider.ChargeRequest{EventID: "evt_3", Customer: "cus_9", Amount: 100, Currency: "eur"})
	if res.Outcome != provider.Rejected || !errors.Is(res.Err, stripecharge.ErrNoPaymentMethod) {
		t.Fatalf("outcome %s, err %v", res.Outcome, res.Err)
	}
}
