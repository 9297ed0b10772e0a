package paymentworker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/webhook"
	"github.com/hookline/hookline/pkg/webhook/webhooktest"
)

// paypalCapture is a completed capture of 9.90 USD for the merchant's
// customer cus_paypal_1.
func paypalCapture(id, status string) providersim.PayPalCapture {
	return providersim.PayPalCapture{ID: id, Status: status, Amount: providersim.PayPalAmount{CurrencyCode: "USD", Value: "9.90"},
		CustomID: "cus_paypal_1", FinalCapture: true}
}

// paypalRef is what the worker hands a fetcher for a PayPal event.
func paypalRef(eventType, resourceID string) paymentworker.FetchRef {
	item, _ := json.Marshal(map[string]any{"id": "WH-TEST-1", "event_type": eventType, "resource": map[string]any{"id": resourceID}})
	return paymentworker.FetchRef{ID: "WH-TEST-1", Type: eventType, Item: item}
}

func startPayPal(t *testing.T) *providersim.PayPalAPI {
	t.Helper()
	api, err := providersim.StartPayPalAPI()
	must(t, err)
	t.Cleanup(func() { api.Close() })
	return api
}

func paypalClient(api *providersim.PayPalAPI) *paymentworker.PayPalClient {
	return &paymentworker.PayPalClient{BaseURL: api.URL(), ClientID: providersim.PayPalClientID, ClientSecret: providersim.PayPalClientSecret, Timeout: 10 * time.Second}
}

// TestPayPalClientFetches: each status of a capture or a sale asks for
// its act, and only the capture or sale the event names is read.
func TestPayPalClientFetches(t *testing.T) {
	t.Parallel()
	api := startPayPal(t)
	c := paypalClient(api)
	tests := []struct {
		name, status string
		sale         bool
		want         paymentworker.Act
	}{
		{name: "a completed capture is charged", status: "COMPLETED", want: paymentworker.ActCharge},
		{name: "a pending capture waits", status: "PENDING", want: paymentworker.ActWait},
		{name: "a declined capture is skipped", status: "DECLINED", want: paymentworker.ActSkip},
		{name: "a failed capture is skipped", status: "FAILED", want: paymentworker.ActSkip},
		{name: "a refunded capture is skipped", status: "REFUNDED", want: paymentworker.ActSkip},
		{name: "a partly refunded capture is skipped", status: "PARTIALLY_REFUNDED", want: paymentworker.ActSkip},
		{name: "a reversed capture is skipped", status: "REVERSED", want: paymentworker.ActSkip},
		{name: "a status added later waits", status: "ON_HOLD_SOMEDAY", want: paymentworker.ActWait},
		{name: "a completed sale is charged", status: "completed", sale: true, want: paymentworker.ActCharge},
		{name: "a denied sale is skipped", status: "denied", sale: true, want: paymentworker.ActSkip},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "CAP" + string(rune('A'+i)) + "0127TN364715T"
			ref := paypalRef("PAYMENT.CAPTURE.COMPLETED", id)
			if tt.sale {
				api.SetSale(providersim.PayPalSale{ID: id, State: tt.status, Amount: providersim.PayPalSaleAmount{Total: "9.90", Currency: "USD"}})
				ref = paypalRef("PAYMENT.SALE.COMPLETED", id)
			} else {
				api.SetCapture(paypalCapture(id, tt.status))
			}
			got, err := c.Fetch(context.Background(), ref)
			must(t, err)
			var obj struct {
				ID string `json:"id"`
			}
			if got.Act != tt.want || got.Status != strings.ToUpper(tt.status) || json.Unmarshal(got.Object, &obj) != nil || obj.ID != id {
				t.Fatalf("act %v, status %q, object %s; want act %v", got.Act, got.Status, got.Object, tt.want)
			}
		})
	}
}

// TestPayPalClientRefusesWhatPayPalDidNotIssue: an ID of the wrong shape
// or unknown to PayPal is not found; an event that is not a completed
// capture or sale is no effect, and neither makes a call.
func TestPayPalClientRefusesWhatPayPalDidNotIssue(t *testing.T) {
	t.Parallel()
	api := startPayPal(t)
	c := paypalClient(api)
	for _, id := range []string{"", "5o190127tn364715t", "5O19/../../v1/oauth2/token", strings.Repeat("A", 65)} {
		if _, err := c.Fetch(context.Background(), paypalRef("PAYMENT.CAPTURE.COMPLETED", id)); !errors.Is(err, paymentworker.ErrNotFound) {
			t.Fatalf("resource id %q: err %v, want not found", id, err)
		}
	}
	for _, typ := range []string{"PAYMENT.CAPTURE.PENDING", "PAYMENT.CAPTURE.REFUNDED", "CHECKOUT.ORDER.APPROVED", ""} {
		got, err := c.Fetch(context.Background(), paypalRef(typ, "5O190127TN364715T"))
		if err != nil || got.Act != paymentworker.ActSkip || got.Status != paymentworker.StatusNotAnEffect {
			t.Fatalf("%q: %+v, %v; want skipped as not an effect", typ, got, err)
		}
	}
	if api.Reads() != 0 || api.TokenRequests() != 0 {
		t.Fatalf("%d reads, %d token requests; want none", api.Reads(), api.TokenRequests())
	}
	// Given an ID of the right shape that PayPal never issued, then it is not found
	if _, err := c.Fetch(context.Background(), paypalRef("PAYMENT.CAPTURE.COMPLETED", "5O190127TN364715T")); !errors.Is(err, paymentworker.ErrNotFound) {
		t.Fatalf("unknown capture: err %v, want not found", err)
	}
}

// TestPayPalClientToken: one token serves fetches until shortly before it
// expires; a 401 (a token PayPal ended early) gets one new token and one
// retry; bad credentials and a failing PayPal are a fetch to retry whose
// error holds neither the secret nor the token.
func TestPayPalClientToken(t *testing.T) {
	t.Parallel()
	api := startPayPal(t)
	api.SetCapture(paypalCapture("5O190127TN364715T", "COMPLETED"))
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	c := paypalClient(api)
	c.Now = func() time.Time { return now }
	fetch := func() error {
		_, err := c.Fetch(context.Background(), paypalRef("PAYMENT.CAPTURE.COMPLETED", "5O190127TN364715T"))
		return err
	}
	// When three captures are fetched, then one token serves them
	for range 3 {
		must(t, fetch())
	}
	if n := api.TokenRequests(); n != 1 {
		t.Fatalf("%d token requests for three fetches, want 1", n)
	}
	// When the token is a minute from its expiry (9 h), then a new one is bought first
	now = now.Add(9*time.Hour - 50*time.Second)
	must(t, fetch())
	if n := api.TokenRequests(); n != 2 {
		t.Fatalf("%d token requests after the token's life, want 2", n)
	}
	// When PayPal ends the token early, then the 401 buys one new token and the fetch succeeds
	api.ExpireTokens()
	reads := api.Reads()
	must(t, fetch())
	if n, r := api.TokenRequests(), api.Reads()-reads; n != 3 || r != 2 {
		t.Fatalf("%d token requests and %d reads after a 401, want 3 and 2", n, r)
	}
	// When PayPal fails, then it is a fetch to retry, and so is a token refused twice
	api.FailNext(1)
	if err := fetch(); !errors.Is(err, paymentworker.ErrFetch) {
		t.Fatalf("503: err %v, want a fetch to retry", err)
	}
	wrong := paypalClient(api)
	wrong.ClientSecret = "not-the-secret-value"
	err := func() error {
		_, err := wrong.Fetch(context.Background(), paypalRef("PAYMENT.CAPTURE.COMPLETED", "5O190127TN364715T"))
		return err
	}()
	if !errors.Is(err, paymentworker.ErrFetch) || strings.Contains(err.Error(), "not-the-secret-value") {
		t.Fatalf("bad credentials: err %v, want a fetch to retry without the secret", err)
	}
	// Given a PayPal whose API refuses every token, then one refresh, not a loop
	var tokens, gets int
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/oauth2/token" {
			tokens++
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"access_token":"A21AAsecret-token-value","token_type":"Bearer","expires_in":32400}`))
			return
		}
		gets++
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(refusing.Close)
	c2 := &paymentworker.PayPalClient{BaseURL: refusing.URL, ClientID: "id", ClientSecret: "secret", Timeout: 10 * time.Second}
	_, err = c2.Fetch(context.Background(), paypalRef("PAYMENT.CAPTURE.COMPLETED", "5O190127TN364715T"))
	if !errors.Is(err, paymentworker.ErrFetch) || tokens != 2 || gets != 2 || strings.Contains(err.Error(), "secret-token-value") {
		t.Fatalf("err %v after %d tokens and %d reads; want a fetch to retry after 2 and 2", err, tokens, gets)
	}
}

// TestPayPalClientBoundsItsWait: a PayPal that answers too late, or
// answers what is not the capture asked for, is a fetch to retry.
func TestPayPalClientBoundsItsWait(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter)
	}{
		{name: "too late", answer: func(w http.ResponseWriter) { time.Sleep(500 * time.Millisecond) }},
		{name: "another capture", answer: func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"id":"OTHER1","status":"COMPLETED"}`)) }},
		{name: "not JSON", answer: func(w http.ResponseWriter) { _, _ = w.Write([]byte(`<html>`)) }},
		{name: "no status", answer: func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"id":"5O190127TN364715T"}`)) }},
		{name: "too long", answer: func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(`{"id":"5O190127TN364715T","status":"COMPLETED","pad":"` + strings.Repeat("x", 2<<20) + `"}`))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/oauth2/token" {
					_, _ = w.Write([]byte(`{"access_token":"A21AAtoken","expires_in":32400}`))
					return
				}
				tt.answer(w)
			}))
			t.Cleanup(srv.Close)
			c := &paymentworker.PayPalClient{BaseURL: srv.URL, ClientID: "id", ClientSecret: "secret", Timeout: 200 * time.Millisecond}
			start := time.Now()
			_, err := c.Fetch(context.Background(), paypalRef("PAYMENT.CAPTURE.COMPLETED", "5O190127TN364715T"))
			if !errors.Is(err, paymentworker.ErrFetch) || time.Since(start) > 400*time.Millisecond {
				t.Fatalf("err %v after %s, want a fetch to retry within the bound", err, time.Since(start))
			}
		})
	}
}

// TestPayPalForgeryWithTheSameCRC32HasNoEffect: under the headers of a
// genuine 9.90 USD capture, a forged body with another id and amount and
// the same CRC32 verifies, since PayPal signs only the CRC32. Queued for
// fetching, it is charged as nothing but what PayPal's API holds, under
// the capture's ID: with the genuine delivery, one charge of 9.90 USD.
// A forgery naming a capture PayPal never issued is no effect.
func TestPayPalForgeryWithTheSameCRC32HasNoEffect(t *testing.T) {
	t.Parallel()
	api := startPayPal(t)
	r := newFetchingRig(t, "shop-paypal", paymentworker.Mapping{Scheme: "paypal", Customer: "/item/custom_id"}, "paypal", paypalClient(api))
	certs, err := webhooktest.StartPayPalCerts()
	must(t, err)
	t.Cleanup(func() { certs.Close() })
	opts := webhook.PresetOptions{WebhookID: webhooktest.PayPalWebhookID, CertHosts: []string{certs.Host()}}
	// The double's certificate is issued now, so the deliveries are signed now.
	now := time.Now().UTC().Truncate(time.Second)
	v, err := webhook.NewVerifier(webhook.VerifierConfig{Scheme: webhook.SchemePayPal, Options: opts, Now: func() time.Time { return now },
		Certs: webhook.NewCertFetcher(webhook.CertFetcherConfig{Hosts: opts.CertHosts, Roots: certs.Roots, Client: certs.Client(10 * time.Second)})})
	must(t, err)
	// Given PayPal holds a completed capture of 9.90 USD, and its genuine webhook's headers
	const capture = "5O190127TN364715T"
	api.SetCapture(paypalCapture(capture, "COMPLETED"))
	genuine := webhooktest.PayPalCaptureEvent("WH-58D329510W468432D-8HN650336L201105X", capture, "9.90", "USD", "cus_paypal_1")
	signed, err := webhook.SignPayPal(certs.Key, certs.CertURL(), webhooktest.PayPalWebhookID, "b2384410-f8d2-11e6-9dc1-a6e0b5d7c20f", now.Add(-time.Minute), genuine)
	must(t, err)
	h := headerMap(signed)
	deliver := func(body []byte) events.SQSMessage {
		t.Helper()
		d, err := v.VerifyDelivery(h, body, nil)
		must(t, err)
		return r.message("shop-paypal", d.Items[0].EventID, string(d.Items[0].Payload))
	}
	// and forgeries under those headers: 9999.00 of the same capture, and of one PayPal never issued
	forged, err := webhooktest.ForgePayPalCapture(genuine, "WH-FORGED-0000000001", capture, "9999.00", "USD", "cus_paypal_1")
	must(t, err)
	invented, err := webhooktest.ForgePayPalCapture(genuine, "WH-FORGED-0000000002", "9XY00000000000000", "9999.00", "USD", "cus_paypal_1")
	must(t, err)
	// When the forgery comes first, then the genuine webhook, then the other forgery
	r.handleAll(t, deliver(forged), deliver(genuine), deliver(invented))
	// Then one charge: what PayPal holds, keyed by the capture
	all := r.sim.Charges.All()
	if n := r.charger.calls.Load(); n != 1 || len(all) != 1 || all[0].Amount != 990 || !strings.EqualFold(all[0].Currency, "USD") || all[0].Customer != "cus_paypal_1" {
		t.Fatalf("%d calls, charges %+v; want one of 990 USD to cus_paypal_1", n, all)
	}
	if rec, ok, err := r.reg.Status(context.Background(), "shop-paypal:"+capture); err != nil || !ok || rec.State != idempotency.StateCompleted {
		t.Fatalf("key shop-paypal:%s: %+v, %v, %v; want completed", capture, rec, ok, err)
	}
}

// newFetchingRig is the effect rig whose worker maps source with m and
// fetches provider's objects with f.
func newFetchingRig(t *testing.T, source string, m paymentworker.Mapping, provider string, f paymentworker.Fetcher) *effectRig {
	t.Helper()
	r := newEffectRig(t, map[string]paymentworker.Mapping{source: m})
	maps, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{source: m})
	must(t, err)
	r.worker, err = paymentworker.New(paymentworker.Config{Registry: r.reg, Provider: r.charger, Queue: r.queue, Mappings: maps,
		Effects:  map[string]paymentworker.Charger{paymentworker.EffectContract: r.charger},
		Fetchers: map[string]paymentworker.Fetcher{provider: f}})
	must(t, err)
	return r
}

// headerMap is h as a verifier reads it.
func headerMap(h http.Header) webhook.HeaderMap {
	m := webhook.HeaderMap{}
	for k := range h {
		m[strings.ToLower(k)] = h.Get(k)
	}
	return m
}
