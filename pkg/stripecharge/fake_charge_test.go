package stripecharge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/provider"
)

// TestAgainstTheFake covers what stripe-mock cannot, because it keeps no
// state: what the adapter sends, Stripe's replay of a key, a key reused
// with other parameters, and lookups of settled, declined and pending
// intents through a search that lags.
func TestAgainstTheFake(t *testing.T) {
	ctx := context.Background()
	f := newFakeStripe(t)
	c := newClient(t, f.URL())
	req := provider.ChargeRequest{EventID: "evt_a", Customer: "cus_a", Amount: 1200, Currency: " EUR ", Description: "invoice 7"}

	t.Run("the create carries the key, the metadata and the payment method", func(t *testing.T) {
		res := c.CreateCharge(ctx, "stripe:evt_a", req)
		if res.Outcome != provider.Succeeded {
			t.Fatalf("outcome %s, err %v", res.Outcome, res.Err)
		}
		f.mu.Lock()
		form, h := f.creates[0], f.headers[0]
		f.mu.Unlock()
		want := map[string]string{
			"amount": "1200", "currency": "eur", "customer": "cus_a", "payment_method": "pm_card_visa",
			"confirm": "true", "off_session": "true", "description": "invoice 7",
			"metadata[hookline_key]": "stripe:evt_a", "metadata[event_id]": "evt_a",
		}
		for k, v := range want {
			if form.Get(k) != v {
				t.Errorf("%s = %q, want %q", k, form.Get(k), v)
			}
		}
		if h.Get("Idempotency-Key") != "stripe:evt_a" {
			t.Errorf("Idempotency-Key %q", h.Get("Idempotency-Key"))
		}
		if m := provider.Match("stripe:evt_a", req, res.Charge); m.Outcome != provider.Succeeded {
			t.Errorf("the intent does not match its request: %s %v", m.Outcome, m.Err)
		}
	})

	t.Run("the same key is replayed, not charged again", func(t *testing.T) {
		first := c.CreateCharge(ctx, "stripe:evt_r", provider.ChargeRequest{EventID: "evt_r", Customer: "cus_a", Amount: 500, Currency: "usd"})
		again := c.CreateCharge(ctx, "stripe:evt_r", provider.ChargeRequest{EventID: "evt_r", Customer: "cus_a", Amount: 500, Currency: "usd"})
		if first.Outcome != provider.Succeeded || again.Outcome != provider.Succeeded || first.Charge.ID != again.Charge.ID || f.charges("evt_r") != 1 {
			t.Fatalf("first %+v, again %+v, %d charges", first.Charge, again.Charge, f.charges("evt_r"))
		}
	})

	t.Run("the same key with another amount is a key conflict", func(t *testing.T) {
		res := c.CreateCharge(ctx, "stripe:evt_r", provider.ChargeRequest{EventID: "evt_r", Customer: "cus_a", Amount: 501, Currency: "usd"})
		if res.Outcome != provider.Rejected || !errors.Is(res.Err, provider.ErrKeyConflict) {
			t.Fatalf("outcome %s, err %v", res.Outcome, res.Err)
		}
	})

	t.Run("a decline is final, and its lookup says so", func(t *testing.T) {
		f.mu.Lock()
		f.declines["cus_poor"] = true
		f.mu.Unlock()
		dreq := provider.ChargeRequest{EventID: "evt_d", Customer: "cus_poor", Amount: 900, Currency: "usd"}
		res := c.CreateCharge(ctx, "stripe:evt_d", dreq)
		if res.Outcome != provider.Declined || res.Charge.DeclineCode != "insufficient_funds" || res.Charge.ID == "" {
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
		f.mu.Lock()
		f.pending["cus_3ds"] = true
		f.mu.Unlock()
		preq := provider.ChargeRequest{EventID: "evt_p", Customer: "cus_3ds", Amount: 300, Currency: "usd"}
		res := c.CreateCharge(ctx, "stripe:evt_p", preq)
		if res.Outcome != provider.Unknown || res.Charge == nil || res.Charge.Status != "requires_action" {
			t.Fatalf("outcome %s, charge %+v", res.Outcome, res.Charge)
		}
		ch, _, _ := c.LookupCharge(ctx, "stripe:evt_p")
		if m := provider.Match("stripe:evt_p", preq, ch); m.Outcome != provider.Unknown {
			t.Fatalf("a pending intent looked up: %s", m.Outcome)
		}
		f.setIntentStatus("stripe:evt_p", "succeeded")
		ch, _, _ = c.LookupCharge(ctx, "stripe:evt_p")
		if m := provider.Match("stripe:evt_p", preq, ch); m.Outcome != provider.Succeeded {
			t.Fatalf("after the customer acted: %s", m.Outcome)
		}
	})

	t.Run("search lags its commits", func(t *testing.T) {
		f.setLag(300 * time.Millisecond)
		defer f.setLag(0)
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
