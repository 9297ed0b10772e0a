package provider_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/pkg/provider"
)

// startSim starts a simulator on loopback and stops it when the test ends.
func startSim(t testing.TB, cfg providersim.Config) *providersim.Sim {
	t.Helper()
	sim, err := providersim.New(cfg)
	if err != nil {
		t.Fatalf("new sim: %v", err)
	}
	if err := sim.Start(); err != nil {
		t.Fatalf("start sim: %v", err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}

func TestUnknownOnTimeoutAfterChargeAndLookupFindsIt(t *testing.T) {
	// Given a provider that charges and then does not answer in time
	sim := startSim(t, providersim.Config{APIKey: "sk_test"})
	sim.Faults.InjectFaults(1, providersim.Fault{Kind: providersim.FaultTimeoutAfterCharge, Delay: 5 * time.Second})
	c := newTestClient(t, sim.URL(), 4)
	ctx := context.Background()

	// When the charge is created
	res := c.CreateCharge(ctx, "evt_1:charge", okCharge)

	// Then the outcome is unknown and the client did not re-send
	if res.Outcome != provider.Unknown || !errors.Is(res.Err, provider.ErrUnknownOutcome) || res.Attempts != 1 {
		t.Fatalf("result = %v after %d attempts (%v), want unknown after 1", res.Outcome, res.Attempts, res.Err)
	}
	if n := sim.Charges.TotalCharges(); n != 1 {
		t.Fatalf("charges = %d, want 1", n)
	}

	// And a lookup by the same key finds the charge
	ch, found, err := c.LookupCharge(ctx, "evt_1:charge")
	if err != nil || !found {
		t.Fatalf("lookup = %v %v, want found", found, err)
	}
	if ch.EventID != okCharge.EventID || ch.Status != provider.StatusSucceeded || ch.IdempotencyKey != "evt_1:charge" {
		t.Fatalf("charge = %+v", ch)
	}

	// And a key never used is not found
	if _, found, err := c.LookupCharge(ctx, "never-used"); err != nil || found {
		t.Fatalf("lookup of unused key = %v %v, want not found", found, err)
	}
}

func TestCreateChargeNeverResendsAfterAnAmbiguousAnswer(t *testing.T) {
	tests := []struct {
		name  string
		fault providersim.Fault
		want  provider.Outcome
	}{
		{name: "commit then 502", fault: providersim.Fault{Kind: providersim.FaultCommitThenError, Status: 502}, want: provider.Unknown},
		{name: "commit then 504", fault: providersim.Fault{Kind: providersim.FaultCommitThenError, Status: 504}, want: provider.Unknown},
		{name: "commit then 408", fault: providersim.Fault{Kind: providersim.FaultCommitThenError, Status: 408}, want: provider.Unknown},
		{name: "409 key in use", fault: providersim.Fault{Kind: providersim.FaultKeyInUse, Delay: 50 * time.Millisecond}, want: provider.Unknown},
		{name: "dropped after charge", fault: providersim.Fault{Kind: providersim.FaultDropAfterCharge}, want: provider.Unknown},
		{name: "timeout after charge", fault: providersim.Fault{Kind: providersim.FaultTimeoutAfterCharge, Delay: 2 * time.Second}, want: provider.Unknown},
		{name: "slow commit", fault: providersim.Fault{Kind: providersim.FaultSlowCommit, Delay: 500 * time.Millisecond}, want: provider.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a provider that ignores keys, commits, then answers
			// ambiguously,
			sim := startSim(t, providersim.Config{})
			c := newTestClient(t, sim.URL(), 4)
			sim.Faults.InjectFaults(1, tt.fault)

			// when a charge is created with retries allowed,
			res := c.CreateCharge(context.Background(), "evt_1:charge", okCharge)

			// then the outcome is unknown after exactly one request, and the
			// provider holds exactly one charge.
			if res.Outcome != tt.want || res.Attempts != 1 || !errors.Is(res.Err, provider.ErrUnknownOutcome) {
				t.Fatalf("result = %v after %d attempts (%v), want %v after 1", res.Outcome, res.Attempts, res.Err, tt.want)
			}
			sim.Charges.WaitCommits()
			if n := sim.Charges.ChargeCount(okCharge.EventID); n != 1 {
				t.Fatalf("charges = %d, want 1", n)
			}
		})
	}
}

func TestCreateChargeResendsOnlyWhatWasNotExecuted(t *testing.T) {
	tests := []struct {
		name  string
		fault providersim.Fault
	}{
		{name: "rate limited", fault: providersim.Fault{Kind: providersim.FaultRateLimit, RetryAfter: "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := startSim(t, providersim.Config{})
			c := newTestClient(t, sim.URL(), 4)
			sim.Faults.InjectFaults(2, tt.fault)
			res := c.CreateCharge(context.Background(), "evt_1:charge", okCharge)
			if res.Outcome != provider.Succeeded || res.Attempts != 3 || sim.Charges.ChargeCount(okCharge.EventID) != 1 {
				t.Fatalf("result = %v after %d attempts, %d charges; want succeeded after 3, 1 charge", res.Outcome, res.Attempts, sim.Charges.ChargeCount(okCharge.EventID))
			}
		})
	}
}

func TestDeclineWithAnErrorBodyCarriesACharge(t *testing.T) {
	// Given a provider that declines with a Stripe-style error object,
	sim := startSim(t, providersim.Config{DeclineErrorBody: true})
	c := newTestClient(t, sim.URL(), 2)
	req := okCharge
	req.Amount = 1002 // declined by the simulator

	// when the charge is created,
	res := c.CreateCharge(context.Background(), "evt_1:charge", req)

	// then it is declined with a charge made from the error and the request.
	if res.Outcome != provider.Declined || res.Charge == nil {
		t.Fatalf("result = %v charge %+v, want declined with a charge", res.Outcome, res.Charge)
	}
	if res.Charge.ID == "" || res.Charge.DeclineCode != providersim.DeclineInsufficientFunds || res.Charge.EventID != req.EventID || res.Charge.Status != provider.StatusDeclined {
		t.Fatalf("charge = %+v", res.Charge)
	}
}

func TestNoSilentReplayOnReusedConnection(t *testing.T) {
	// Given a key-ignoring provider and a warm pooled connection
	sim := startSim(t, providersim.Config{})
	c := newTestClient(t, sim.URL(), 4)
	ctx := context.Background()
	if res := c.CreateCharge(ctx, "k0", okCharge); res.Outcome != provider.Succeeded {
		t.Fatalf("warm-up: %v", res.Err)
	}
	sim.Faults.InjectFaults(1, providersim.Fault{Kind: providersim.FaultDropAfterCharge})

	// When the provider charges and then drops the reused connection
	req := provider.ChargeRequest{EventID: "evt_2", Customer: "cus_1", Amount: 500, Currency: "eur"}
	res := c.CreateCharge(ctx, "k2", req)

	// Then the client reports unknown and sent exactly one request
	if res.Outcome != provider.Unknown {
		t.Fatalf("outcome = %v (%v), want unknown", res.Outcome, res.Err)
	}
	if n := sim.Charges.ChargeCount("evt_2"); n != 1 {
		t.Fatalf("charges = %d, want 1: the request was replayed behind our back", n)
	}
}

func TestMatch(t *testing.T) {
	found := provider.Charge{ID: "ch_1", Status: provider.StatusSucceeded, EventID: "evt_1", Customer: "cus_1", Amount: 1999, Currency: "eur"}
	tests := []struct {
		name    string
		change  func(*provider.Charge)
		req     func(*provider.ChargeRequest)
		want    provider.Outcome
		wantErr error
	}{
		{name: "same charge", want: provider.Succeeded},
		{name: "currency normalised by the provider", req: func(r *provider.ChargeRequest) { r.Currency = "EUR" }, want: provider.Succeeded},
		{name: "fields left out by the provider", change: func(c *provider.Charge) { c.Currency, c.Customer = "", "" }, want: provider.Succeeded},
		{name: "declined", change: func(c *provider.Charge) { c.Status = provider.StatusDeclined }, want: provider.Declined, wantErr: provider.ErrDeclined},
		{name: "still pending", change: func(c *provider.Charge) { c.Status = "pending" }, want: provider.Unknown, wantErr: provider.ErrUnknownOutcome},
		{name: "another event", change: func(c *provider.Charge) { c.EventID = "evt_2" }, want: provider.Rejected, wantErr: provider.ErrKeyConflict},
		{name: "another amount", change: func(c *provider.Charge) { c.Amount++ }, want: provider.Rejected, wantErr: provider.ErrKeyConflict},
		{name: "another currency", change: func(c *provider.Charge) { c.Currency = "usd" }, want: provider.Rejected, wantErr: provider.ErrKeyConflict},
		{name: "another customer", change: func(c *provider.Charge) { c.Customer = "cus_2" }, want: provider.Rejected, wantErr: provider.ErrKeyConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, req := found, okCharge
			if tt.change != nil {
				tt.change(&ch)
			}
			if tt.req != nil {
				tt.req(&req)
			}
			res := provider.Match("k", req, &ch)
			if res.Outcome != tt.want || (tt.wantErr != nil && !errors.Is(res.Err, tt.wantErr)) || (tt.wantErr == nil && res.Err != nil) {
				t.Fatalf("Match = %v %v, want %v %v", res.Outcome, res.Err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestLookupLagsBehindTheCommit(t *testing.T) {
	// Given a provider whose lookup lags its commits by 300 ms,
	sim := startSim(t, providersim.Config{LookupLag: 300 * time.Millisecond})
	c := newTestClient(t, sim.URL(), 2)
	ctx := context.Background()
	if res := c.CreateCharge(ctx, "k1", okCharge); res.Outcome != provider.Succeeded {
		t.Fatalf("charge: %v", res.Err)
	}
	// when the charge is looked up at once, then after the lag,
	_, early, err := c.LookupCharge(ctx, "k1")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(350 * time.Millisecond)
	_, late, err := c.LookupCharge(ctx, "k1")
	// then only the late lookup finds it.
	if err != nil || early || !late {
		t.Fatalf("found at once = %v, after the lag = %v (%v); want false then true", early, late, err)
	}
}

func TestHonouredKeysReplayTheFirstCharge(t *testing.T) {
	// Given a provider that honours keys
	sim := startSim(t, providersim.Config{HonourIdempotencyKeys: true})
	c := newTestClient(t, sim.URL(), 2)
	ctx := context.Background()

	// When the same key is sent three times
	var ids []string
	for i := range 3 {
		res := c.CreateCharge(ctx, "evt_1:charge", okCharge)
		if res.Outcome != provider.Succeeded {
			t.Fatalf("send %d: %v %v", i, res.Outcome, res.Err)
		}
		ids = append(ids, res.Charge.ID)
	}

	// Then one charge exists and every answer names it
	if sim.Charges.TotalCharges() != 1 || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Fatalf("charges = %d ids = %v, want 1 charge", sim.Charges.TotalCharges(), ids)
	}

	// And the key with other parameters is rejected
	other := okCharge
	other.Amount++
	res := c.CreateCharge(ctx, "evt_1:charge", other)
	if res.Outcome != provider.Rejected || !errors.Is(res.Err, provider.ErrRejected) {
		t.Fatalf("reuse with other amount = %v %v, want rejected", res.Outcome, res.Err)
	}
}
