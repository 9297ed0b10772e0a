package providersim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/pkg/provider"
)

func TestProfilesReplayAsTheyShould(t *testing.T) {
	tests := []struct {
		name string
		p    providersim.Profile
		// charges made by: a success sent twice; a decline sent twice; a
		// server error followed by the same request.
		wantSuccess, wantDecline, wantAfterError int
	}{
		{name: "honours keys", p: providersim.ProfileHonoursKeys, wantSuccess: 1, wantDecline: 1, wantAfterError: 0},
		{name: "replays successes", p: providersim.ProfileReplaysSuccesses, wantSuccess: 1, wantDecline: 2, wantAfterError: 1},
		{name: "ignores keys", p: providersim.ProfileIgnoresKeys, wantSuccess: 2, wantDecline: 2, wantAfterError: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := start(t, providersim.Config{Profile: tt.p})
			c, err := provider.New(provider.Config{BaseURL: sim.URL(), MaxAttempts: 1})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for range 2 {
				c.CreateCharge(ctx, "k-ok", chargeReq("e-ok", 500, "cus_1"))
				c.CreateCharge(ctx, "k-decline", chargeReq("e-decline", 502, "cus_1"))
			}
			sim.Faults.InjectFaults(1, providersim.Fault{Kind: providersim.FaultServerError})
			first := c.CreateCharge(ctx, "k-err", chargeReq("e-err", 700, "cus_1"))
			again := c.CreateCharge(ctx, "k-err", chargeReq("e-err", 700, "cus_1"))
			if first.Outcome != provider.Unknown {
				t.Fatalf("server error = %v, want unknown", first.Outcome)
			}
			got := []int{sim.Charges.ChargeCount("e-ok"), sim.Charges.ChargeCount("e-decline"), sim.Charges.ChargeCount("e-err")}
			want := []int{tt.wantSuccess, tt.wantDecline, tt.wantAfterError}
			if got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
				t.Fatalf("charges (success, decline, after error) = %v, want %v", got, want)
			}
			if tt.p == providersim.ProfileHonoursKeys && again.Outcome != provider.Unknown {
				t.Fatalf("a saved server error was not replayed: %v", again.Outcome)
			}
		})
	}
}

func TestKeyInFlightGets409(t *testing.T) {
	for _, p := range []providersim.Profile{providersim.ProfileHonoursKeys, providersim.ProfileReplaysSuccesses} {
		t.Run(p.String(), func(t *testing.T) {
			// Given a request whose commit is slow,
			sim := start(t, providersim.Config{Profile: p})
			c, err := provider.New(provider.Config{BaseURL: sim.URL(), MaxAttempts: 1, Timeout: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			sim.Faults.InjectFaults(1, providersim.Fault{Kind: providersim.FaultSlowCommit, Delay: 400 * time.Millisecond})
			ctx := context.Background()
			first := c.CreateCharge(ctx, "k1", chargeReq("e1", 500, "cus_1"))
			// when the same key is sent while it is in flight,
			second := c.CreateCharge(ctx, "k1", chargeReq("e1", 500, "cus_1"))
			// then both outcomes are unknown (timeout, 409), and one charge lands.
			if first.Outcome != provider.Unknown || second.Outcome != provider.Unknown || second.StatusCode != 409 {
				t.Fatalf("first %v, second %v (%d); want unknown and a 409", first.Outcome, second.Outcome, second.StatusCode)
			}
			sim.Charges.WaitCommits()
			if n := sim.Charges.ChargeCount("e1"); n != 1 {
				t.Fatalf("charges = %d, want 1", n)
			}
		})
	}
}

func TestHostileFaults(t *testing.T) {
	tests := []struct {
		name        string
		cfg         providersim.Config
		fault       providersim.Fault
		wantOutcome provider.Outcome
		wantStatus  int
		wantCharges int
		lookup      bool // the lookup finds the charge at once
	}{
		{name: "commit then 502", fault: providersim.Fault{Kind: providersim.FaultCommitThenError}, wantOutcome: provider.Unknown, wantStatus: 502, wantCharges: 1, lookup: true},
		{name: "commit then 504", fault: providersim.Fault{Kind: providersim.FaultCommitThenError, Status: 504}, wantOutcome: provider.Unknown, wantStatus: 504, wantCharges: 1, lookup: true},
		{name: "slow commit", fault: providersim.Fault{Kind: providersim.FaultSlowCommit, Delay: 300 * time.Millisecond}, wantOutcome: provider.Unknown, wantCharges: 1},
		{name: "key in use", fault: providersim.Fault{Kind: providersim.FaultKeyInUse, Delay: 100 * time.Millisecond}, wantOutcome: provider.Unknown, wantStatus: 409, wantCharges: 1},
		{name: "decline with an error body", fault: providersim.Fault{Kind: providersim.FaultDeclineErrorBody}, wantOutcome: provider.Declined, wantStatus: 402, wantCharges: 1, lookup: true},
		{name: "lookup lag", cfg: providersim.Config{LookupLag: time.Hour}, wantOutcome: provider.Succeeded, wantStatus: 200, wantCharges: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := start(t, tt.cfg)
			c, err := provider.New(provider.Config{BaseURL: sim.URL(), MaxAttempts: 1, Timeout: 150 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if tt.fault.Kind != providersim.FaultNone {
				sim.Faults.InjectFaults(1, tt.fault)
			}
			ctx := context.Background()
			res := c.CreateCharge(ctx, "k1", chargeReq("e1", 500, "cus_1"))
			if res.Outcome != tt.wantOutcome || res.StatusCode != tt.wantStatus {
				t.Fatalf("outcome %v status %d (%v), want %v %d", res.Outcome, res.StatusCode, res.Err, tt.wantOutcome, tt.wantStatus)
			}
			_, found, err := c.LookupCharge(ctx, "k1")
			if err != nil || found != tt.lookup {
				t.Fatalf("lookup at once found %v (%v), want %v", found, err, tt.lookup)
			}
			sim.Charges.WaitCommits()
			if n := sim.Charges.ChargeCount("e1"); n != tt.wantCharges {
				t.Fatalf("charges = %d, want %d", n, tt.wantCharges)
			}
			if got := sim.Faults.FaultsInjected()[tt.fault.Kind]; tt.fault.Kind != providersim.FaultNone && got != 1 {
				t.Fatalf("faults fired = %d", got)
			}
		})
	}
}

func TestNormalisedCurrency(t *testing.T) {
	sim := start(t, providersim.Config{NormaliseCurrency: true})
	c, err := provider.New(provider.Config{BaseURL: sim.URL()})
	if err != nil {
		t.Fatal(err)
	}
	req := chargeReq("e1", 500, "cus_1")
	req.Currency = "EUR"
	res := c.CreateCharge(context.Background(), "k1", req)
	if res.Outcome != provider.Succeeded || res.Charge.Currency != "eur" {
		t.Fatalf("charge = %+v (%v), want currency eur", res.Charge, res.Err)
	}
	if m := provider.Match("k1", req, res.Charge); m.Outcome != provider.Succeeded || errors.Is(m.Err, provider.ErrKeyConflict) {
		t.Fatalf("the normalised charge does not match its request: %v %v", m.Outcome, m.Err)
	}
}

func TestParseProfile(t *testing.T) {
	for _, p := range providersim.Profiles {
		got, err := providersim.ParseProfile(p.String())
		if err != nil || got != p {
			t.Fatalf("ParseProfile(%q) = %v, %v", p, got, err)
		}
	}
	if _, err := providersim.ParseProfile("sometimes"); !errors.Is(err, providersim.ErrInvalidConfig) {
		t.Fatalf("unknown profile: %v", err)
	}
}
