package provider_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/provider"
)

var okCharge = provider.ChargeRequest{EventID: "evt_1", Customer: "cus_1", Amount: 1999, Currency: "eur"}

// newTestClient returns a client with test-speed timings.
func newTestClient(t *testing.T, baseURL string, attempts int) *provider.Client {
	t.Helper()
	c, err := provider.New(provider.Config{
		BaseURL:     baseURL,
		APIKey:      "sk_test",
		Timeout:     300 * time.Millisecond,
		MaxAttempts: attempts,
		BaseBackoff: 5 * time.Millisecond,
		MaxBackoff:  50 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	return c
}

// hangUpHandler closes the connection without an answer.
func hangUpHandler(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

func TestCreateChargeClassification(t *testing.T) {
	retryDate := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name        string
		status      int
		header      map[string]string
		body        string
		handler     http.HandlerFunc // overrides status/header/body
		want        provider.Outcome
		wantErr     error
		wantCode    string
		retryAfterA time.Duration // RetryAfter must lie in [A, B]
		retryAfterB time.Duration
	}{
		{name: "200 succeeded", status: 200, body: `{"id":"ch_1","status":"succeeded","amount":1999}`, want: provider.Succeeded},
		{name: "201 succeeded", status: 201, body: `{"id":"ch_1","status":"succeeded","amount":1999}`, want: provider.Succeeded},
		{name: "200 declined body", status: 200, body: `{"id":"ch_1","status":"declined","decline_code":"card_declined"}`,
			want: provider.Declined, wantErr: provider.ErrDeclined, wantCode: "card_declined"},
		{name: "200 pending is not settled", status: 200, body: `{"id":"ch_1","status":"pending"}`,
			want: provider.Unknown, wantErr: provider.ErrUnknownOutcome},
		{name: "200 unreadable body", status: 200, body: `<html>`, want: provider.Unknown, wantErr: provider.ErrBadResponse},
		{name: "402 declined", status: 402, body: `{"id":"ch_1","status":"declined","decline_code":"insufficient_funds"}`,
			want: provider.Declined, wantErr: provider.ErrDeclined, wantCode: "insufficient_funds"},
		{name: "402 without body", status: 402, want: provider.Declined, wantErr: provider.ErrDeclined},
		{name: "301 redirect", status: 301, header: map[string]string{"Location": "/elsewhere"},
			want: provider.Rejected, wantErr: provider.ErrRejected},
		{name: "400 bad request", status: 400, body: `{"error":{"type":"invalid_request_error"}}`,
			want: provider.Rejected, wantErr: provider.ErrRejected},
		{name: "401 unauthorized", status: 401, want: provider.Rejected, wantErr: provider.ErrRejected},
		{name: "403 forbidden", status: 403, want: provider.Rejected, wantErr: provider.ErrRejected},
		{name: "404 not found", status: 404, want: provider.Rejected, wantErr: provider.ErrRejected},
		{name: "422 unprocessable", status: 422, want: provider.Rejected, wantErr: provider.ErrRejected},
		{name: "402 Stripe-style error body", status: 402, body: `{"error":{"type":"card_error","code":"card_declined","decline_code":"stolen_card","charge":"ch_9"}}`,
			want: provider.Declined, wantErr: provider.ErrDeclined, wantCode: "stolen_card"},
		{name: "400 key reused with other parameters", status: 400, body: `{"error":{"type":"idempotency_error","code":"key_reused"}}`,
			want: provider.Rejected, wantErr: provider.ErrKeyConflict},
		{name: "408 request timeout", status: 408, want: provider.Unknown, wantErr: provider.ErrUnknownOutcome},
		{name: "409 concurrent key use", status: 409, body: `{"error":{"type":"idempotency_error","code":"idempotency_key_in_use"}}`,
			want: provider.Unknown, wantErr: provider.ErrUnknownOutcome},
		{name: "429 retry-after seconds", status: 429, header: map[string]string{"Retry-After": "7"},
			want: provider.Retriable, wantErr: provider.ErrRetriable, retryAfterA: 7 * time.Second, retryAfterB: 7 * time.Second},
		{name: "429 retry-after http date", status: 429, header: map[string]string{"Retry-After": retryDate},
			want: provider.Retriable, wantErr: provider.ErrRetriable, retryAfterA: 25 * time.Second, retryAfterB: 31 * time.Second},
		{name: "429 retry-after garbage", status: 429, header: map[string]string{"Retry-After": "soon"},
			want: provider.Retriable, wantErr: provider.ErrRetriable},
		{name: "500", status: 500, want: provider.Unknown, wantErr: provider.ErrUnknownOutcome},
		{name: "502", status: 502, want: provider.Unknown, wantErr: provider.ErrUnknownOutcome},
		{name: "503 retry-after", status: 503, header: map[string]string{"Retry-After": "3"},
			want: provider.Unknown, wantErr: provider.ErrUnknownOutcome, retryAfterA: 3 * time.Second, retryAfterB: 3 * time.Second},
		{name: "504", status: 504, want: provider.Unknown, wantErr: provider.ErrUnknownOutcome},
		{name: "timeout", handler: func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // lets the server notice the hang-up
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, want: provider.Unknown, wantErr: provider.ErrUnknownOutcome},
		{name: "EOF after request written", handler: hangUpHandler, want: provider.Unknown, wantErr: provider.ErrUnknownOutcome},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a provider that answers one way
			h := tt.handler
			if h == nil {
				h = func(w http.ResponseWriter, _ *http.Request) {
					for k, v := range tt.header {
						w.Header().Set(k, v)
					}
					w.WriteHeader(tt.status)
					_, _ = w.Write([]byte(tt.body))
				}
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			c := newTestClient(t, srv.URL, 1)

			// When a charge is sent once
			res := c.CreateCharge(context.Background(), "key-1", okCharge)

			// Then the answer is classified
			if res.Outcome != tt.want {
				t.Fatalf("outcome = %v, want %v (err %v)", res.Outcome, tt.want, res.Err)
			}
			if tt.wantErr == nil && res.Err != nil {
				t.Fatalf("err = %v, want nil", res.Err)
			}
			if tt.wantErr != nil && !errors.Is(res.Err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", res.Err, tt.wantErr)
			}
			if res.Outcome == provider.Declined && res.Charge == nil {
				t.Fatalf("a decline without a charge")
			}
			if tt.wantCode != "" && (res.Charge == nil || res.Charge.DeclineCode != tt.wantCode) {
				t.Fatalf("charge = %+v, want decline code %s", res.Charge, tt.wantCode)
			}
			if res.RetryAfter < tt.retryAfterA || res.RetryAfter > tt.retryAfterB {
				t.Fatalf("retry after = %v, want in [%v, %v]", res.RetryAfter, tt.retryAfterA, tt.retryAfterB)
			}
			if res.Attempts != 1 {
				t.Fatalf("attempts = %d, want 1", res.Attempts)
			}
		})
	}
}

func TestCreateChargeConnectionRefusedIsRetriable(t *testing.T) {
	// Given an address where nothing listens
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := newTestClient(t, "http://"+addr, 2)

	// When a charge is sent
	res := c.CreateCharge(context.Background(), "key-1", okCharge)

	// Then it provably never arrived, so it is retriable and was retried
	if res.Outcome != provider.Retriable || !errors.Is(res.Err, provider.ErrRetriable) {
		t.Fatalf("result = %v %v, want retriable", res.Outcome, res.Err)
	}
	if res.Attempts != 2 {
		t.Fatalf("attempts = %d, want 2", res.Attempts)
	}
}

func TestCreateChargeInvalidRequest(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1", 1)
	tests := []struct {
		name string
		key  string
		req  provider.ChargeRequest
	}{
		{name: "empty key", key: "", req: okCharge},
		{name: "no event", key: "k", req: provider.ChargeRequest{Customer: "c", Amount: 1, Currency: "eur"}},
		{name: "zero amount", key: "k", req: provider.ChargeRequest{EventID: "e", Customer: "c", Currency: "eur"}},
		{name: "no currency", key: "k", req: provider.ChargeRequest{EventID: "e", Customer: "c", Amount: 1}},
		{name: "key longer than 255", key: strings.Repeat("k", 256), req: okCharge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// When an invalid charge is sent
			res := c.CreateCharge(context.Background(), tt.key, tt.req)
			// Then it is rejected without a request
			if res.Outcome != provider.Rejected || !errors.Is(res.Err, provider.ErrInvalidRequest) || res.Attempts != 0 {
				t.Fatalf("result = %+v, want rejected invalid request with no attempt", res)
			}
		})
	}
}

// keyRecorder answers with the statuses in order and records the key and
// API key of every request.
type keyRecorder struct {
	mu       sync.Mutex
	statuses []int
	keys     []string
	auth     []string
}

func (k *keyRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	n := len(k.keys)
	k.keys = append(k.keys, r.Header.Get("Idempotency-Key"))
	k.auth = append(k.auth, r.Header.Get("Authorization"))
	status := k.statuses[min(n, len(k.statuses)-1)]
	k.mu.Unlock()
	if status == http.StatusOK {
		_, _ = w.Write([]byte(`{"id":"ch_9","status":"succeeded","amount":1999}`))
		return
	}
	w.WriteHeader(status)
}

func TestCreateChargeRetries(t *testing.T) {
	tests := []struct {
		name         string
		statuses     []int
		attempts     int
		want         provider.Outcome
		wantAttempts int
	}{
		{name: "retries 429 until success", statuses: []int{429, 429, 429, 200}, attempts: 4,
			want: provider.Succeeded, wantAttempts: 4},
		{name: "gives up after max attempts", statuses: []int{429}, attempts: 3,
			want: provider.Retriable, wantAttempts: 3},
		{name: "never resends after a 5xx", statuses: []int{503, 200}, attempts: 4,
			want: provider.Unknown, wantAttempts: 1},
		{name: "does not retry a decline", statuses: []int{402}, attempts: 4,
			want: provider.Declined, wantAttempts: 1},
		{name: "does not retry a rejection", statuses: []int{400}, attempts: 4,
			want: provider.Rejected, wantAttempts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a provider that fails in sequence
			rec := &keyRecorder{statuses: tt.statuses}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			c := newTestClient(t, srv.URL, tt.attempts)

			// When a charge is created
			res := c.CreateCharge(context.Background(), "evt_1:charge", okCharge)

			// Then it is retried the expected number of times, always with
			// the same key and credentials
			if res.Outcome != tt.want || res.Attempts != tt.wantAttempts {
				t.Fatalf("result = %v after %d attempts, want %v after %d (err %v)",
					res.Outcome, res.Attempts, tt.want, tt.wantAttempts, res.Err)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.keys) != tt.wantAttempts {
				t.Fatalf("server saw %d requests, want %d", len(rec.keys), tt.wantAttempts)
			}
			for i, k := range rec.keys {
				if k != "evt_1:charge" || rec.auth[i] != "Bearer sk_test" {
					t.Fatalf("request %d had key %q auth %q", i, k, rec.auth[i])
				}
			}
		})
	}
}

func TestCreateChargeLongRetryAfterIsHandedBack(t *testing.T) {
	// Given a provider that asks for a minute's pause
	var calls int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, 4)

	// When a charge is created
	res := c.CreateCharge(context.Background(), "key-1", okCharge)

	// Then the client does not retry early but hands the wait back
	if res.Outcome != provider.Retriable || res.RetryAfter != time.Minute || res.Attempts != 1 {
		t.Fatalf("result = %v retry after %v after %d attempts, want retriable 1m after 1", res.Outcome, res.RetryAfter, res.Attempts)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Fatalf("calls = %d, want 1", calls)
	}
}

func TestCreateChargeStopsAtDeadline(t *testing.T) {
	// Given a provider that asks for a short pause and a caller with less time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	c, err := provider.New(provider.Config{BaseURL: srv.URL, MaxBackoff: 2 * time.Second, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()

	// When a charge is created
	res := c.CreateCharge(ctx, "key-1", okCharge)

	// Then it returns at once instead of sleeping past the deadline
	if res.Outcome != provider.Retriable || res.Attempts != 1 || ctx.Err() != nil {
		t.Fatalf("result = %v after %d attempts (ctx %v), want retriable after 1 with time left", res.Outcome, res.Attempts, ctx.Err())
	}
}

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  provider.Config
	}{
		{name: "no base URL", cfg: provider.Config{}},
		{name: "not http", cfg: provider.Config{BaseURL: "ftp://x"}},
		{name: "negative attempts", cfg: provider.Config{BaseURL: "http://x", MaxAttempts: -1}},
		{name: "base above max", cfg: provider.Config{BaseURL: "http://x", BaseBackoff: time.Second, MaxBackoff: time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := provider.New(tt.cfg); !errors.Is(err, provider.ErrInvalidConfig) {
				t.Fatalf("err = %v, want ErrInvalidConfig", err)
			}
		})
	}
}
