package providersim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/pkg/provider"
)

func start(t *testing.T, cfg providersim.Config) *providersim.Sim {
	t.Helper()
	sim, err := providersim.New(cfg)
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	if err := sim.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}

// post sends a raw charge request with a short timeout.
func post(t *testing.T, sim *providersim.Sim, key string, body any, auth string) (*http.Response, []byte, error) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sim.URL()+"/v1/charges", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.GetBody = nil // no silent replays in these tests either
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp, out, err
}

func chargeReq(event string, amount int64, customer string) provider.ChargeRequest {
	return provider.ChargeRequest{EventID: event, Customer: customer, Amount: amount, Currency: "eur"}
}

func TestChargeResponses(t *testing.T) {
	tests := []struct {
		name       string
		body       any
		auth       string
		wantStatus int
		wantCharge string // expected charge status, "" when none is made
		wantCode   string
	}{
		{name: "succeeds", body: chargeReq("e1", 1999, "cus_1"), auth: "Bearer sk", wantStatus: 200, wantCharge: "succeeded"},
		{name: "declined customer", body: chargeReq("e1", 1999, providersim.DeclineCustomer), auth: "Bearer sk",
			wantStatus: 402, wantCharge: "declined", wantCode: providersim.DeclineCardDeclined},
		{name: "declined amount ending in 02", body: chargeReq("e1", 1202, "cus_1"), auth: "Bearer sk",
			wantStatus: 402, wantCharge: "declined", wantCode: providersim.DeclineInsufficientFunds},
		{name: "missing amount", body: chargeReq("e1", 0, "cus_1"), auth: "Bearer sk", wantStatus: 400},
		{name: "not a charge", body: []int{1}, auth: "Bearer sk", wantStatus: 400},
		{name: "wrong api key", body: chargeReq("e1", 1999, "cus_1"), auth: "Bearer nope", wantStatus: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a simulator that wants an API key
			sim := start(t, providersim.Config{APIKey: "sk"})

			// When a charge is posted
			resp, body, err := post(t, sim, "k1", tt.body, tt.auth)
			if err != nil {
				t.Fatal(err)
			}

			// Then the status and the charge match
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d (%s)", resp.StatusCode, tt.wantStatus, body)
			}
			if tt.wantCharge == "" {
				if sim.Charges.TotalCharges() != 0 {
					t.Fatalf("charges = %d, want 0", sim.Charges.TotalCharges())
				}
				return
			}
			var ch provider.Charge
			if err := json.Unmarshal(body, &ch); err != nil {
				t.Fatal(err)
			}
			if ch.Status != tt.wantCharge || ch.DeclineCode != tt.wantCode || ch.IdempotencyKey != "k1" || ch.EventID != "e1" {
				t.Fatalf("charge = %+v", ch)
			}
			if sim.Charges.ChargeCount("e1") != 1 {
				t.Fatalf("count = %d, want 1", sim.Charges.ChargeCount("e1"))
			}
		})
	}
}

func TestIdempotencyKeySwitch(t *testing.T) {
	tests := []struct {
		name        string
		honour      bool
		wantCharges int
		wantDup     int
	}{
		{name: "honoured", honour: true, wantCharges: 1, wantDup: 0},
		{name: "ignored", honour: false, wantCharges: 3, wantDup: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a simulator with the switch set
			sim := start(t, providersim.Config{HonourIdempotencyKeys: tt.honour})
			c, err := provider.New(provider.Config{BaseURL: sim.URL()})
			if err != nil {
				t.Fatal(err)
			}

			// When the same charge is sent three times with one key
			var first string
			for i := range 3 {
				res := c.CreateCharge(context.Background(), "key-1", chargeReq("e1", 500, "cus_1"))
				if res.Outcome != provider.Succeeded {
					t.Fatalf("send %d: %v", i, res.Err)
				}
				if i == 0 {
					first = res.Charge.ID
				}
			}

			// Then the charges and duplicates follow the switch
			if sim.Charges.TotalCharges() != tt.wantCharges || sim.Charges.ChargeCount("e1") != tt.wantCharges || sim.Charges.Duplicates() != tt.wantDup {
				t.Fatalf("total = %d count = %d dup = %d", sim.Charges.TotalCharges(), sim.Charges.ChargeCount("e1"), sim.Charges.Duplicates())
			}

			// And a lookup returns the first charge made with the key
			ch, found, err := c.LookupCharge(context.Background(), "key-1")
			if err != nil || !found || ch.ID != first {
				t.Fatalf("lookup = %+v %v %v, want %s", ch, found, err, first)
			}
		})
	}
}

func TestFaultKinds(t *testing.T) {
	tests := []struct {
		name        string
		fault       providersim.Fault
		wantStatus  int // 0: the request fails without an answer
		wantCharges int
		wantHeader  string
	}{
		{name: "server error", fault: providersim.Fault{Kind: providersim.FaultServerError}, wantStatus: 503},
		{name: "server error 500", fault: providersim.Fault{Kind: providersim.FaultServerError, Status: 500}, wantStatus: 500},
		{name: "rate limit", fault: providersim.Fault{Kind: providersim.FaultRateLimit, RetryAfter: "3"}, wantStatus: 429, wantHeader: "3"},
		{name: "timeout before charge answered late", fault: providersim.Fault{Kind: providersim.FaultTimeoutBeforeCharge, Delay: 20 * time.Millisecond}, wantStatus: 503},
		{name: "timeout before charge past client", fault: providersim.Fault{Kind: providersim.FaultTimeoutBeforeCharge}},
		{name: "reset", fault: providersim.Fault{Kind: providersim.FaultReset}},
		{name: "timeout after charge answered late", fault: providersim.Fault{Kind: providersim.FaultTimeoutAfterCharge, Delay: 20 * time.Millisecond}, wantStatus: 200, wantCharges: 1},
		{name: "timeout after charge past client", fault: providersim.Fault{Kind: providersim.FaultTimeoutAfterCharge}, wantCharges: 1},
		{name: "drop after charge", fault: providersim.Fault{Kind: providersim.FaultDropAfterCharge}, wantCharges: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given one programmed fault
			sim := start(t, providersim.Config{})
			sim.Faults.InjectFaults(1, tt.fault)

			// When a charge is posted twice
			resp, _, err := post(t, sim, "k1", chargeReq("e1", 700, "cus_1"), "")
			again, _, againErr := post(t, sim, "k2", chargeReq("e2", 700, "cus_1"), "")

			// Then the first meets the fault and the second does not
			if tt.wantStatus == 0 && err == nil {
				t.Fatalf("status = %d, want no answer", resp.StatusCode)
			}
			if tt.wantStatus != 0 && (err != nil || resp.StatusCode != tt.wantStatus) {
				t.Fatalf("answer = %v %v, want %d", resp, err, tt.wantStatus)
			}
			if tt.wantHeader != "" && resp.Header.Get("Retry-After") != tt.wantHeader {
				t.Fatalf("Retry-After = %q", resp.Header.Get("Retry-After"))
			}
			if sim.Charges.ChargeCount("e1") != tt.wantCharges {
				t.Fatalf("charges for the faulted request = %d, want %d", sim.Charges.ChargeCount("e1"), tt.wantCharges)
			}
			if againErr != nil || again.StatusCode != 200 || sim.Charges.ChargeCount("e2") != 1 {
				t.Fatalf("second request = %v %v", again, againErr)
			}
			if sim.Faults.FaultsInjected()[tt.fault.Kind] != 1 {
				t.Fatalf("faults = %v", sim.Faults.FaultsInjected())
			}
		})
	}
}

func TestFaultRateIsSeeded(t *testing.T) {
	// Given two simulators with the same seed and fault rate
	run := func() []int {
		sim := start(t, providersim.Config{Seed: 42})
		sim.Faults.SetFaultRate(0.5, providersim.Fault{Kind: providersim.FaultServerError})
		var statuses []int
		for i := range 20 {
			resp, _, err := post(t, sim, "", chargeReq(fmt.Sprint("e", i), 700, "cus_1"), "")
			if err != nil {
				t.Fatal(err)
			}
			statuses = append(statuses, resp.StatusCode)
		}
		return statuses
	}

	// When each serves the same 20 requests
	a, b := run(), run()

	// Then the faults fall on the same requests, and some do fall
	failed := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("request %d: %d vs %d", i, a[i], b[i])
		}
		if a[i] == 503 {
			failed++
		}
	}
	if failed == 0 || failed == len(a) {
		t.Fatalf("failed = %d of %d, want some", failed, len(a))
	}
}

func TestLatencyPastClientTimeoutMakesNoCharge(t *testing.T) {
	// Given a slow simulator
	sim := start(t, providersim.Config{Latency: 2 * time.Second})

	// When the client gives up first
	_, _, err := post(t, sim, "k1", chargeReq("e1", 700, "cus_1"), "")

	// Then the request failed, the server noticed well before the latency
	// ran out, and no charge exists
	if err == nil {
		t.Fatal("want a client timeout")
	}
	deadline := time.Now().Add(1500 * time.Millisecond)
	for sim.Charges.InFlight() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if sim.Charges.InFlight() != 0 {
		t.Fatal("the server is still holding the abandoned request")
	}
	if sim.Charges.ChargeCount("e1") != 0 {
		t.Fatalf("charges = %d, want 0", sim.Charges.ChargeCount("e1"))
	}
}

func TestConcurrentCharges(t *testing.T) {
	// Given a key-honouring simulator
	sim := start(t, providersim.Config{HonourIdempotencyKeys: true})
	c, err := provider.New(provider.Config{BaseURL: sim.URL()})
	if err != nil {
		t.Fatal(err)
	}

	// When 50 workers send 500 events, each event twice (a copy that meets
	// its twin in flight is answered 409 key in use, an unknown outcome)
	var wg sync.WaitGroup
	errc := make(chan error, 1000)
	for w := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				n := (w*20 + i) % 500
				req := chargeReq(fmt.Sprintf("e%03d", n), 1000, "cus_1")
				res := c.CreateCharge(context.Background(), req.EventID, req)
				inFlight := res.Outcome == provider.Unknown && res.StatusCode == http.StatusConflict
				if res.Outcome != provider.Succeeded && !inFlight {
					errc <- res.Err
				}
			}
		}()
	}
	wg.Wait()
	close(errc)

	// Then each event was charged exactly once
	for err := range errc {
		t.Error(err)
	}
	if sim.Charges.TotalCharges() != 500 || sim.Charges.Duplicates() != 0 || len(sim.Charges.All()) != 500 {
		t.Fatalf("total = %d dup = %d", sim.Charges.TotalCharges(), sim.Charges.Duplicates())
	}
}

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  providersim.Config
	}{
		{name: "negative latency", cfg: providersim.Config{Latency: -1}},
		{name: "drop rate above one", cfg: providersim.Config{UsageDropRate: 1.5}},
		{name: "page size too large", cfg: providersim.Config{UsagePageSize: 5000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := providersim.New(tt.cfg); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func TestListenAndServeStopsWithContext(t *testing.T) {
	// Given a simulator serving on a loopback port
	sim, err := providersim.New(providersim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.ListenAndServe(ctx, "127.0.0.1:0") }()
	deadline := time.Now().Add(5 * time.Second)
	for sim.URL() == "" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if resp, _, err := post(t, sim, "k", chargeReq("e1", 700, "cus_1"), ""); err != nil || resp.StatusCode != 200 {
		t.Fatalf("serve: %v %v", resp, err)
	}

	// When the context ends
	cancel()

	// Then it returns without error
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ListenAndServe did not return")
	}
}
