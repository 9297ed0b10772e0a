package providersim_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/pkg/provider"
)

// receiver answers with statuses in order (the last repeats) and records
// what arrived.
type receiver struct {
	mu       sync.Mutex
	statuses []int
	ids      []string
	bodies   [][]byte
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	n := len(r.ids)
	r.ids = append(r.ids, req.Header.Get("Webhook-Id"))
	r.bodies = append(r.bodies, body)
	status := http.StatusOK
	if len(r.statuses) > 0 {
		status = r.statuses[min(n, len(r.statuses)-1)]
	}
	r.mu.Unlock()
	w.WriteHeader(status)
}

// testSigner stands in for package webhook: it puts the id and timestamp in
// headers and counts calls.
type testSigner struct {
	mu  sync.Mutex
	ts  []time.Time
	err error
}

func (s *testSigner) sign(id string, ts time.Time, body []byte) (http.Header, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	s.ts = append(s.ts, ts)
	h := http.Header{}
	h.Set("Webhook-Id", id)
	h.Set("Webhook-Signature", "v1,fake")
	return h, nil
}

func newSender(t *testing.T, url string, sign providersim.Signer, attempts int) *providersim.Sender {
	t.Helper()
	s, err := providersim.NewSender(providersim.SenderConfig{URL: url, Sign: sign, MaxAttempts: attempts,
		BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSenderRetries(t *testing.T) {
	tests := []struct {
		name          string
		statuses      []int
		attempts      int
		wantDelivered bool
		wantAttempts  int
	}{
		{name: "first try", statuses: []int{200}, attempts: 5, wantDelivered: true, wantAttempts: 1},
		{name: "retries until 2xx", statuses: []int{500, 503, 429, 204}, attempts: 5, wantDelivered: true, wantAttempts: 4},
		{name: "retries a 4xx too", statuses: []int{400, 200}, attempts: 5, wantDelivered: true, wantAttempts: 2},
		{name: "gives up after max attempts", statuses: []int{500}, attempts: 3, wantDelivered: false, wantAttempts: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a receiver that fails first
			rcv := &receiver{statuses: tt.statuses}
			srv := httptest.NewServer(rcv)
			defer srv.Close()
			sig := &testSigner{}
			snd := newSender(t, srv.URL, sig.sign, tt.attempts)

			// When a webhook is sent
			d := snd.Send(context.Background(), "evt_1", []byte(`{"id":"evt_1"}`))

			// Then it is retried with the same id, signed anew each time
			if d.Delivered != tt.wantDelivered || len(d.Attempts) != tt.wantAttempts {
				t.Fatalf("delivery = %+v", d)
			}
			if tt.wantDelivered != (d.Err == nil) {
				t.Fatalf("err = %v", d.Err)
			}
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			if len(rcv.ids) != tt.wantAttempts || len(sig.ts) != tt.wantAttempts {
				t.Fatalf("received %d, signed %d, want %d", len(rcv.ids), len(sig.ts), tt.wantAttempts)
			}
			for i, id := range rcv.ids {
				if id != "evt_1" || string(rcv.bodies[i]) != `{"id":"evt_1"}` {
					t.Fatalf("attempt %d: id %q body %s", i, id, rcv.bodies[i])
				}
			}
			if got := snd.Deliveries(); len(got) != 1 || got[0].StatusCode != d.StatusCode {
				t.Fatalf("deliveries = %+v", got)
			}
		})
	}
}

func TestSenderNetworkFailureAndSignerError(t *testing.T) {
	// Given a closed port and a signer that fails
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	tests := []struct {
		name    string
		sign    providersim.Signer
		wantErr string
	}{
		{name: "network failure", sign: nil, wantErr: "connect"},
		{name: "signer error", sign: (&testSigner{err: errors.New("no secret")}).sign, wantErr: "sign: no secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snd := newSender(t, url, tt.sign, 2)
			// When a webhook is sent
			d := snd.Send(context.Background(), "evt_1", []byte(`{}`))
			// Then every attempt failed and says why
			if d.Delivered || len(d.Attempts) != 2 || !strings.Contains(d.Attempts[1].Err, tt.wantErr) || d.Err == nil {
				t.Fatalf("delivery = %+v", d)
			}
		})
	}
}

func TestNewSenderValidates(t *testing.T) {
	if _, err := providersim.NewSender(providersim.SenderConfig{URL: "not a url"}); !errors.Is(err, providersim.ErrInvalidConfig) {
		t.Fatalf("err = %v", err)
	}
}

func TestEmitUsage(t *testing.T) {
	// Given records to send, drop and alter
	sim := start(t, providersim.Config{})
	add := func(id string, at int, opts providersim.UsageOptions) {
		t.Helper()
		rec := provider.UsageRecord{RecordID: id, WorkloadRef: "workload-7", Units: 10, OccurredAt: t0.Add(time.Duration(at) * time.Second)}
		if err := sim.Usage.AddUsage(rec, opts); err != nil {
			t.Fatal(err)
		}
	}
	add("r-send", 1, providersim.UsageOptions{Webhook: providersim.WebhookSend})
	add("r-drop", 2, providersim.UsageOptions{Webhook: providersim.WebhookDrop})
	add("r-alter", 3, providersim.UsageOptions{Webhook: providersim.WebhookAltered, WebhookUnits: 99})
	add("r-default", 4, providersim.UsageOptions{})
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	snd := newSender(t, srv.URL, (&testSigner{}).sign, 3)

	// When pending usage is emitted twice
	rep, err := sim.Usage.EmitUsage(context.Background(), snd)
	if err != nil {
		t.Fatal(err)
	}
	again, err := sim.Usage.EmitUsage(context.Background(), snd)
	if err != nil {
		t.Fatal(err)
	}

	// Then each record's webhook went once, as its mode says
	if len(rep.Sent) != 3 || len(rep.Dropped) != 1 || rep.Dropped[0] != "r-drop" || len(rep.Altered) != 1 || rep.Altered[0] != "r-alter" {
		t.Fatalf("report = %+v", rep)
	}
	if len(again.Sent)+len(again.Dropped) != 0 {
		t.Fatalf("second emit = %+v, want nothing", again)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	units := map[string]int64{}
	for _, b := range rcv.bodies {
		var ev provider.UsageEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.ID != providersim.UsageEventID(ev.Data.RecordID) || ev.Type != provider.UsageEventType {
			t.Fatalf("event = %+v", ev)
		}
		units[ev.Data.RecordID] = ev.Data.Units
	}
	if len(units) != 3 || units["r-send"] != 10 || units["r-alter"] != 99 || units["r-default"] != 10 {
		t.Fatalf("units = %v", units)
	}
	// And the export still has the true units
	for _, r := range sim.Usage.Records() {
		if r.Units != 10 {
			t.Fatalf("export record %s has %d units", r.RecordID, r.Units)
		}
	}
}

func TestUsageDropRateIsSeeded(t *testing.T) {
	// Given two simulators with the same seed and a 30% drop rate
	dropped := func() []string {
		sim := start(t, providersim.Config{Seed: 9, UsageDropRate: 0.3})
		for i := range 100 {
			rec := provider.UsageRecord{RecordID: string(rune('A'+i/26)) + string(rune('a'+i%26)), WorkloadRef: "w", Units: 1, OccurredAt: t0}
			if err := sim.Usage.AddUsage(rec, providersim.UsageOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		rcv := &receiver{}
		srv := httptest.NewServer(rcv)
		defer srv.Close()
		rep, err := sim.Usage.EmitUsage(context.Background(), newSender(t, srv.URL, nil, 1))
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(rep.Dropped)
		return rep.Dropped
	}

	// When both emit their usage
	a, b := dropped(), dropped()

	// Then the same records are dropped, about 30 of 100
	if len(a) < 15 || len(a) > 45 || strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatalf("dropped %d and %d: %v vs %v", len(a), len(b), a, b)
	}
}
