package stripecharge_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/stripecharge"
	"github.com/hookline/hookline/pkg/provider"
)

var chargeReq = provider.ChargeRequest{EventID: "evt_1", Customer: "cus_1", Amount: 2500, Currency: "USD"}

// TestErrorMapping answers the create call with each kind of Stripe
// answer and checks the outcome the worker gets.
func TestErrorMapping(t *testing.T) {
	const intent = `{"id":"pi_1","object":"payment_intent","amount":2500,"currency":"usd","customer":"cus_1","metadata":{"hookline_key":"k","event_id":"evt_1"},"status":"%s"}`
	tests := []struct {
		name      string
		status    int
		header    map[string]string
		body      string
		outcome   provider.Outcome
		is        error  // the result's Err wraps it
		chargeID  string // the result's charge, when there is one
		decline   string
		retryWait time.Duration
	}{
		{name: "succeeded", status: 200, body: sprintf(intent, "succeeded"), outcome: provider.Succeeded, chargeID: "pi_1"},
		{name: "requires_action is pending", status: 200, body: sprintf(intent, "requires_action"), outcome: provider.Unknown, is: provider.ErrUnknownOutcome, chargeID: "pi_1"},
		{name: "processing is pending", status: 200, body: sprintf(intent, "processing"), outcome: provider.Unknown, is: provider.ErrUnknownOutcome, chargeID: "pi_1"},
		{name: "requires_capture is pending", status: 200, body: sprintf(intent, "requires_capture"), outcome: provider.Unknown, is: provider.ErrUnknownOutcome, chargeID: "pi_1"},
		{name: "canceled is declined", status: 200, body: sprintf(intent, "canceled"), outcome: provider.Declined, is: provider.ErrDeclined, chargeID: "pi_1", decline: "canceled"},
		{name: "failed confirmation in a 200 is declined", status: 200,
			body:    `{"id":"pi_2","object":"payment_intent","amount":2500,"currency":"usd","status":"requires_payment_method","last_payment_error":{"type":"card_error","code":"card_declined","decline_code":"do_not_honor"}}`,
			outcome: provider.Declined, is: provider.ErrDeclined, chargeID: "pi_2", decline: "do_not_honor"},
		{name: "card_error with the intent", status: 402,
			body:    `{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds","payment_intent":{"id":"pi_3","object":"payment_intent","amount":2500,"currency":"usd","status":"requires_payment_method"}}}`,
			outcome: provider.Declined, is: provider.ErrDeclined, chargeID: "pi_3", decline: "insufficient_funds"},
		{name: "card_error without an intent", status: 402, body: `{"error":{"type":"card_error","code":"expired_card","charge":"ch_9"}}`,
			outcome: provider.Declined, is: provider.ErrDeclined, chargeID: "ch_9", decline: "expired_card"},
		{name: "idempotency_error is a key conflict", status: 400, body: `{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters"}}`,
			outcome: provider.Rejected, is: provider.ErrKeyConflict},
		{name: "a key in flight is unknown", status: 409, body: `{"error":{"type":"idempotency_error","code":"idempotency_key_in_use"}}`,
			outcome: provider.Unknown, is: provider.ErrUnknownOutcome},
		{name: "rate limited", status: 429, header: map[string]string{"Retry-After": "3"}, body: `{"error":{"type":"invalid_request_error","code":"rate_limit"}}`,
			outcome: provider.Retriable, is: provider.ErrRetriable, retryWait: 3 * time.Second},
		{name: "rate_limit code without 429", status: 400, body: `{"error":{"type":"invalid_request_error","code":"rate_limit"}}`,
			outcome: provider.Retriable, is: provider.ErrRetriable},
		{name: "api_error", status: 500, body: `{"error":{"type":"api_error"}}`, outcome: provider.Unknown, is: provider.ErrUnknownOutcome},
		{name: "502 from a proxy, not JSON", status: 502, body: `<html>bad gateway</html>`, outcome: provider.Unknown, is: provider.ErrUnknownOutcome},
		{name: "503 with an error object", status: 503, body: `{"error":{"type":"api_error"}}`, outcome: provider.Unknown, is: provider.ErrUnknownOutcome},
		{name: "408", status: 408, body: `{"error":{"type":"invalid_request_error"}}`, outcome: provider.Unknown, is: provider.ErrUnknownOutcome},
		{name: "409 lock timeout", status: 409, body: `{"error":{"type":"invalid_request_error","code":"lock_timeout"}}`, outcome: provider.Unknown, is: provider.ErrUnknownOutcome},
		{name: "an unreadable 200", status: 200, body: `{"id":`, outcome: provider.Unknown, is: provider.ErrUnknownOutcome},
		{name: "a bad parameter", status: 400, body: `{"error":{"type":"invalid_request_error","code":"parameter_missing"}}`, outcome: provider.Rejected, is: provider.ErrRejected},
		{name: "bad credentials", status: 401, body: `{"error":{"type":"invalid_request_error"}}`, outcome: provider.Rejected, is: provider.ErrRejected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given Stripe answering the create with tc's status and body
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					w.Write([]byte(`{"id":"cus_1","object":"customer","invoice_settings":{"default_payment_method":"pm_1"}}`))
					return
				}
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			// When the adapter charges
			res := newClient(t, srv.URL).CreateCharge(context.Background(), "k", chargeReq)
			// Then the outcome is tc's, and the error says why
			if res.Outcome != tc.outcome {
				t.Fatalf("outcome %s, want %s (err %v)", res.Outcome, tc.outcome, res.Err)
			}
			if tc.is != nil && !errors.Is(res.Err, tc.is) {
				t.Fatalf("err %v, want one wrapping %v", res.Err, tc.is)
			}
			if tc.outcome == provider.Succeeded && res.Err != nil {
				t.Fatalf("succeeded with err %v", res.Err)
			}
			if tc.chargeID != "" && (res.Charge == nil || res.Charge.ID != tc.chargeID) {
				t.Fatalf("charge %+v, want %s", res.Charge, tc.chargeID)
			}
			if tc.outcome.Final() {
				// A final outcome always carries a charge that matches the request.
				if m := provider.Match("k", chargeReq, res.Charge); m.Outcome != tc.outcome && res.Charge.EventID != "" {
					t.Fatalf("match of %+v: %s", res.Charge, m.Outcome)
				}
				if res.Charge.DeclineCode != tc.decline {
					t.Fatalf("decline code %q, want %q", res.Charge.DeclineCode, tc.decline)
				}
			}
			if res.RetryAfter != tc.retryWait {
				t.Fatalf("retry after %s, want %s", res.RetryAfter, tc.retryWait)
			}
		})
	}
}

// TestNetworkFaults: a connection that could not be opened proves nothing
// was sent; a connection dropped after sending, or a deadline, proves
// nothing at all.
func TestNetworkFaults(t *testing.T) {
	t.Run("refused connection is retriable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		c, err := stripecharge.New(stripecharge.Config{APIKey: "sk_test_1", URL: "http://" + addr})
		if err != nil {
			t.Fatal(err)
		}
		res := c.CreateCharge(context.Background(), "k", chargeReq)
		if res.Outcome != provider.Retriable || !errors.Is(res.Err, provider.ErrRetriable) {
			t.Fatalf("outcome %s, err %v", res.Outcome, res.Err)
		}
	})
	t.Run("customer read failing sends no charge", func(t *testing.T) {
		var creates atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				creates.Add(1)
			}
			w.WriteHeader(500)
			w.Write([]byte(`{"error":{"type":"api_error"}}`))
		}))
		defer srv.Close()
		res := newClient(t, srv.URL).CreateCharge(context.Background(), "k", chargeReq)
		if res.Outcome != provider.Retriable || creates.Load() != 0 {
			t.Fatalf("outcome %s, %d creates, err %v", res.Outcome, creates.Load(), res.Err)
		}
	})
	sim := newStripeSim(t, 0)
	c := newClient(t, sim.URL())
	t.Run("dropped after a commit: the same key is resent and replayed", func(t *testing.T) {
		// Given Stripe commits and the connection drops before the answer
		sim.Faults.SetFaultFunc(firstRequestOf(providersim.Fault{Kind: providersim.FaultDropAfterCharge}, "k-drop"))
		// When the adapter charges (net/http resends a request that
		// carries an Idempotency-Key on a connection that died before
		// any answer)
		res := c.CreateCharge(context.Background(), "k-drop", chargeReq)
		// Then Stripe replays the first answer: one intent, succeeded
		if res.Outcome != provider.Succeeded || sim.Charges.SucceededCount("evt_1") != 1 {
			t.Fatalf("outcome %s, %d charges, err %v", res.Outcome, sim.Charges.SucceededCount("evt_1"), res.Err)
		}
	})
	t.Run("dropped every time is unknown", func(t *testing.T) {
		sim.Faults.SetFaultFunc(func(string, int) providersim.Fault { return providersim.Fault{Kind: providersim.FaultReset} })
		res := c.CreateCharge(context.Background(), "k-drop2", chargeReq)
		if res.Outcome != provider.Unknown || !errors.Is(res.Err, provider.ErrUnknownOutcome) {
			t.Fatalf("outcome %s, err %v", res.Outcome, res.Err)
		}
	})
	t.Run("deadline is unknown", func(t *testing.T) {
		sim.Faults.SetFaultFunc(func(string, int) providersim.Fault {
			return providersim.Fault{Kind: providersim.FaultSlowCommit, Delay: 300 * time.Millisecond}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		res := c.CreateCharge(ctx, "k-slow", chargeReq)
		if res.Outcome != provider.Unknown {
			t.Fatalf("outcome %s, err %v", res.Outcome, res.Err)
		}
	})
}

func TestSearchQuery(t *testing.T) {
	key := paymentworker.ProviderKey("stripe", `evt_'\`, 2)
	tests := []struct{ name, key, want string }{
		{name: "provider key, in its own field", key: key, want: `metadata['hookline_pkey']:'` + key + `'`},
		{name: "legacy", key: "stripe:evt_1", want: `metadata['hookline_key']:'stripe:evt_1'`},
		{name: "legacy attempt", key: "stripe:evt_1#2", want: `metadata['hookline_key']:'stripe:evt_1#2'`},
		{name: "legacy quote escaped, backslash as it is", key: `a'b\c`, want: `metadata['hookline_key']:'a\'b\c'`},
		{name: "prefix without the hash is legacy", key: "hl1_stripe:evt", want: `metadata['hookline_key']:'hl1_stripe:evt'`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := stripecharge.SearchQuery(tc.key); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	if _, err := stripecharge.New(stripecharge.Config{}); !errors.Is(err, stripecharge.ErrNoAPIKey) {
		t.Fatalf("no key: %v", err)
	}
	if _, err := stripecharge.New(stripecharge.Config{APIKey: "sk", URL: "ftp://x"}); err == nil {
		t.Fatal("ftp URL accepted")
	}
}
