package stripecharge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/pkg/provider"
)

// TestAgainstTheSimulator covers what stripe-mock cannot, because it
// keeps no state: Stripe's replay of a key, a key reused with other
// parameters, and lookups of settled, declined and pending intents
// through a search that lags. The simulator refuses a create that is not
// confirmed and off-session on the customer's default payment method.
func TestAgainstTheSimulator(t *testing.T) {
	ctx := context.Background()
	sim := newStripeSim(t, 0)
	c := newClient(t, sim.URL())
	req := provider.ChargeRequest{EventID: "evt_a", Customer: "cus_a", Amount: 1200, Currency: " EUR ", Description: "invoice 7"}

	t.Run("the create carries the key and the metadata", func(t *testing.T) {
		res := c.CreateCharge(ctx, "stripe:evt_a", req)
		if res.Outcome != provider.Succeeded {
			t.Fatalf("outcome %s, err %v", res.Outcome, res.Err)
		}
		made := sim.Charges.All()
		if len(made) != 1 || made[0].IdempotencyKey != "stripe:evt_a" || made[0].EventID != "evt_a" || made[0].Currency != "eur" {
			t.Fatalf("charges made: %+v", made)
		}
		if res.Charge.IdempotencyKey != "stripe:evt_a" || res.Charge.EventID != "evt_a" {
			t.Errorf("metadata not carried: %+v", res.Charge)
		}
		if m := provider.Match("stripe:evt_a", req, res.Charge); m.Outcome != provider.Succeeded {
			t.Errorf("the intent does not match its request: %s %v", m.Outcome, m.Err)
		}
	})

	t.Run("the same key is replayed, not charged again", func(t *testing.T) {
		r := provider.ChargeRequest{EventID: "evt_r", Customer: "cus_a", Amount: 500, Currency: "usd"}
		first := c.CreateCharge(ctx, "stripe:evt_r", r)
		again := c.CreateCharge(ctx, "stripe:evt_r", r)
		if first.Outcome != provider.Succeeded || again.Outcome != provider.Succeeded || first.Charge.ID != again.Charge.ID || sim.Charges.SucceededCount("evt_r") != 1 {
			t.Fatalf("first %+v, again %+v, %d charges", first.Charge, again.Charge, sim.Charges.SucceededCount("evt_r"))
		}
	})

	t.Run("the same key with another amount is a key conflict", func(t *testing.T) {
		res := c.CreateCharge(ctx, "stripe:evt_r", provider.ChargeRequest{EventID: "evt_r", Customer: "cus_a", Amount: 501, Currency: "usd"})
		if res.Outcome != provider.Rejected || !errors.Is(res.Err, provider.ErrKeyConflict) {
			t.Fatalf("outcome %s, err %v", res.Outcome, res.Err)
		}
	})

	t.Run("a decline is final, and its lookup says so", func(t *testing.T) {
		dreq := provider.ChargeRequest{EventID: "evt_d", Customer: "cus_poor", Amount: 902, Currency: "usd"}
		res := c.CreateCharge(ctx, "stripe:evt_d", dreq)
		if res.Outcome != provider.Declined || res.Charge.DeclineCode != providersim.DeclineInsufficientFunds || res.Charge.ID == "" {
			t.Fatalf("outcome %s, charge %+v", res.Outcome, res.Charge)
		}
		ch, found, err := c.LookupCharge(ctx, "stripe:evt_d")
		if err != nil || !found {
			t.Fatalf("lookup: %v %v", found, err)
		}
		if m := provider.Match("stripe:evt_d", dreq, ch); m.Outcome != provider.Declined || ch.ID != res.Charge.ID {
			t.Fatalf("lookup %+v: %s", ch, m.Outcome)
		}
	})

	t.Run("pending until the customer acts, then settled by lookup", func(t *testing.T) {
		preq := provider.ChargeRequest{EventID: "evt_p", Customer: providersim.RequiresActionCustomer, Amount: 300, Currency: "usd"}
		res := c.CreateCharge(ctx, "stripe:evt_p", preq)
		if res.Outcome != provider.Unknown || res.Charge == nil || res.Charge.Status != "requires_action" {
			t.Fatalf("outcome %s, charge %+v", res.Outcome, res.Charge)
		}
		ch, _, _ := c.LookupCharge(ctx, "stripe:evt_p")
		if m := provider.Match("stripe:evt_p", preq, ch); m.Outcome != provider.Unknown {
			t.Fatalf("a pending intent looked up: %s", m.Outcome)
		}
		if !sim.Charges.Authenticate("stripe:evt_p") {
			t.Fatal("nothing to authenticate")
		}
		ch, _, _ = c.LookupCharge(ctx, "stripe:evt_p")
		if m := provider.Match("stripe:evt_p", preq, ch); m.Outcome != provider.Succeeded {
			t.Fatalf("after the customer acted: %s", m.Outcome)
		}
	})

	t.Run("a customer without a payment method is rejected before any create", func(t *testing.T) {
		before := sim.Charges.Creates()
		res := c.CreateCharge(ctx, "stripe:evt_nopm", provider.ChargeRequest{EventID: "evt_nopm", Customer: providersim.NoPaymentMethodCustomer, Amount: 100, Currency: "usd"})
		if res.Outcome != provider.Rejected || sim.Charges.Creates() != before {
			t.Fatalf("outcome %s, %d creates, err %v", res.Outcome, sim.Charges.Creates()-before, res.Err)
		}
	})

	t.Run("search lags its commits", func(t *testing.T) {
		sim.SetLookupLag(300 * time.Millisecond)
		defer sim.SetLookupLag(0)
		c.CreateCharge(ctx, "stripe:evt_lag", provider.ChargeRequest{EventID: "evt_lag", Customer: "cus_a", Amount: 100, Currency: "usd"})
		if _, found, err := c.LookupCharge(ctx, "stripe:evt_lag"); found || err != nil {
			t.Fatalf("found before the index caught up (err %v)", err)
		}
		time.Sleep(300 * time.Millisecond)
		if _, found, err := c.LookupCharge(ctx, "stripe:evt_lag"); !found || err != nil {
			t.Fatalf("not found after the lag (err %v)", err)
		}
	})

	t.Run("a key nobody used is not found; a key with a quote is looked up exactly", func(t *testing.T) {
		c.CreateCharge(ctx, "stripe:evt_'q'", provider.ChargeRequest{EventID: "evt_'q'", Customer: "cus_a", Amount: 100, Currency: "usd"})
		if _, found, err := c.LookupCharge(ctx, "stripe:evt_none"); found || err != nil {
			t.Fatalf("found %v, err %v", found, err)
		}
		if ch, found, err := c.LookupCharge(ctx, "stripe:evt_'q'"); !found || err != nil || ch.EventID != "evt_'q'" {
			t.Fatalf("found %v %+v, err %v", found, ch, err)
		}
	})
}
