package provider_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/providersim"
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
	sim.InjectFaults(1, providersim.Fault{Kind: providersim.FaultTimeoutAfterCharge, Delay: 5 * time.Second})
	c := newTestClient(t, sim.URL(), 4)
	ctx := context.Background()

	// When the charge is created
	res := c.CreateCharge(ctx, "evt_1:charge", okCharge)

	// Then the outcome is unknown and the client did not re-send
	if res.Outcome != provider.Unknown || !errors.Is(res.Err, provider.ErrUnknownOutcome) || res.Attempts != 1 {
		t.Fatalf("result = %v after %d attempts (%v), want unknown after 1", res.Outcome, res.Attempts, res.Err)
	}
	if n := sim.TotalCharges(); n != 1 {
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

func TestChargeOnceMakesExactlyOneCharge(t *testing.T) {
	tests := []struct {
		name   string
		fault  providersim.Fault
		faults int
		want   provider.Outcome
		amount int64
	}{
		{name: "no fault", faults: 0, want: provider.Succeeded},
		{name: "server errors", fault: providersim.Fault{Kind: providersim.FaultServerError}, faults: 2, want: provider.Succeeded},
		{name: "bad gateway", fault: providersim.Fault{Kind: providersim.FaultServerError, Status: 502}, faults: 1, want: provider.Succeeded},
		{name: "rate limited", fault: providersim.Fault{Kind: providersim.FaultRateLimit, RetryAfter: "0"}, faults: 2, want: provider.Succeeded},
		{name: "timeout before charge", fault: providersim.Fault{Kind: providersim.FaultTimeoutBeforeCharge, Delay: 2 * time.Second}, faults: 1, want: provider.Succeeded},
		{name: "timeout after charge", fault: providersim.Fault{Kind: providersim.FaultTimeoutAfterCharge, Delay: 2 * time.Second}, faults: 1, want: provider.Succeeded},
		{name: "dropped after charge", fault: providersim.Fault{Kind: providersim.FaultDropAfterCharge}, faults: 1, want: provider.Succeeded},
		{name: "connection reset", fault: providersim.Fault{Kind: providersim.FaultReset}, faults: 2, want: provider.Succeeded},
		{name: "timeout after a declined charge", fault: providersim.Fault{Kind: providersim.FaultTimeoutAfterCharge, Delay: 2 * time.Second},
			faults: 1, want: provider.Declined, amount: 1002},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a provider that ignores idempotency keys and fails first
			sim := startSim(t, providersim.Config{HonourIdempotencyKeys: false})
			// A first charge warms a pooled connection, so that faults also
			// hit reused connections, where net/http would replay on its own.
			c := newTestClient(t, sim.URL(), 4)
			warm := provider.ChargeRequest{EventID: "evt_warm", Customer: "cus_1", Amount: 100, Currency: "eur"}
			if res := c.CreateCharge(context.Background(), "warm", warm); res.Outcome != provider.Succeeded {
				t.Fatalf("warm-up: %v %v", res.Outcome, res.Err)
			}
			sim.InjectFaults(tt.faults, tt.fault)
			req := okCharge
			if tt.amount != 0 {
				req.Amount = tt.amount
			}

			// When the worker charges once
			res := c.ChargeOnce(context.Background(), "evt_1:charge", req)

			// Then exactly one charge exists and the outcome is final
			if res.Outcome != tt.want {
				t.Fatalf("outcome = %v (%v), want %v", res.Outcome, res.Err, tt.want)
			}
			if n := sim.ChargeCount(req.EventID); n != 1 {
				t.Fatalf("charges for event = %d, want 1", n)
			}
			if d := sim.Duplicates(); d != 0 {
				t.Fatalf("duplicates = %d, want 0", d)
			}
			if got := sim.FaultsInjected()[tt.fault.Kind]; tt.faults > 0 && got != tt.faults {
				t.Fatalf("faults fired = %d, want %d", got, tt.faults)
			}
			if res.Charge == nil || res.Charge.EventID != req.EventID {
				t.Fatalf("charge = %+v, want one for %s", res.Charge, req.EventID)
			}
		})
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
	sim.InjectFaults(1, providersim.Fault{Kind: providersim.FaultDropAfterCharge})

	// When the provider charges and then drops the reused connection
	req := provider.ChargeRequest{EventID: "evt_2", Customer: "cus_1", Amount: 500, Currency: "eur"}
	res := c.CreateCharge(ctx, "k2", req)

	// Then the client reports unknown and sent exactly one request
	if res.Outcome != provider.Unknown {
		t.Fatalf("outcome = %v (%v), want unknown", res.Outcome, res.Err)
	}
	if n := sim.ChargeCount("evt_2"); n != 1 {
		t.Fatalf("charges = %d, want 1: the request was replayed behind our back", n)
	}
}

func TestChargeOnceWhenEveryAttemptIsUnknown(t *testing.T) {
	// Given a provider that always resets before charging
	sim := startSim(t, providersim.Config{})
	sim.SetFaultRate(1, providersim.Fault{Kind: providersim.FaultReset})
	c := newTestClient(t, sim.URL(), 3)

	// When the worker charges once
	res := c.ChargeOnce(context.Background(), "evt_1:charge", okCharge)

	// Then it gives up with unknown after a bounded number of rounds
	if res.Outcome != provider.Unknown || res.Attempts != 3 {
		t.Fatalf("result = %v after %d attempts, want unknown after 3", res.Outcome, res.Attempts)
	}
	if n := sim.TotalCharges(); n != 0 {
		t.Fatalf("charges = %d, want 0", n)
	}
}

func TestChargeOnceKeyConflict(t *testing.T) {
	// Given a key already used for another event
	sim := startSim(t, providersim.Config{})
	c := newTestClient(t, sim.URL(), 2)
	ctx := context.Background()
	other := provider.ChargeRequest{EventID: "evt_other", Customer: "cus_1", Amount: 700, Currency: "eur"}
	if res := c.CreateCharge(ctx, "shared-key", other); res.Outcome != provider.Succeeded {
		t.Fatalf("setup: %v", res.Err)
	}
	sim.InjectFaults(1, providersim.Fault{Kind: providersim.FaultDropAfterCharge})

	// When a charge under that key ends unknown and is looked up
	res := c.ChargeOnce(ctx, "shared-key", okCharge)

	// Then the mismatch is reported, not taken as this event's charge
	if res.Outcome != provider.Rejected || !errors.Is(res.Err, provider.ErrKeyConflict) {
		t.Fatalf("result = %v %v, want rejected key conflict", res.Outcome, res.Err)
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
	if sim.TotalCharges() != 1 || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Fatalf("charges = %d ids = %v, want 1 charge", sim.TotalCharges(), ids)
	}

	// And the key with other parameters is rejected
	other := okCharge
	other.Amount++
	res := c.CreateCharge(ctx, "evt_1:charge", other)
	if res.Outcome != provider.Rejected || !errors.Is(res.Err, provider.ErrRejected) {
		t.Fatalf("reuse with other amount = %v %v, want rejected", res.Outcome, res.Err)
	}
}

func TestChargeOnceUnderRandomFaultsAndConcurrency(t *testing.T) {
	// Given a key-ignoring provider failing 30% of requests in mixed ways
	sim := startSim(t, providersim.Config{Seed: 7})
	sim.SetFaultRate(0.3, providersim.Fault{Kind: providersim.FaultDropAfterCharge})
	c := newTestClient(t, sim.URL(), 6)
	const events = 200

	// When 200 events are charged by 20 workers
	errc := make(chan error, events)
	jobs := make(chan int)
	for range 20 {
		go func() {
			for i := range jobs {
				req := provider.ChargeRequest{EventID: fmt.Sprintf("evt_%03d", i), Customer: "cus_1", Amount: 1000, Currency: "eur"}
				res := c.ChargeOnce(context.Background(), req.EventID+":charge", req)
				if res.Outcome != provider.Succeeded {
					errc <- fmt.Errorf("%s: %v %v", req.EventID, res.Outcome, res.Err)
					continue
				}
				errc <- nil
			}
		}()
	}
	for i := range events {
		jobs <- i
	}
	close(jobs)

	// Then every event succeeded once and nothing was charged twice
	for range events {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	if sim.TotalCharges() != events || sim.Duplicates() != 0 {
		t.Fatalf("charges = %d duplicates = %d, want %d and 0", sim.TotalCharges(), sim.Duplicates(), events)
	}
	if sim.FaultsInjected()[providersim.FaultDropAfterCharge] == 0 {
		t.Fatal("no fault fired; the test proves nothing")
	}
}
