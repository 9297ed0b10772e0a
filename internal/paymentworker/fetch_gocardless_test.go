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
	"github.com/hookline/hookline/pkg/webhook"
)

// gocardlessPayment is a payment of 15.00 GBP for the merchant's
// customer cus_gc_1.
func gocardlessPayment(id, status string) providersim.GoCardlessPayment {
	return providersim.GoCardlessPayment{ID: id, Status: status, Amount: 1500, Currency: "GBP", ChargeDate: "2026-12-02",
		Metadata: map[string]string{"customer": "cus_gc_1"}, Links: map[string]string{"mandate": "MD0001", "creditor": "CR0001"}}
}

// gocardlessRef is what the worker hands a fetcher for a GoCardless
// event of resource type and action linking payment.
func gocardlessRef(resource, action, payment string) paymentworker.FetchRef {
	item, _ := json.Marshal(map[string]any{"id": "EV0001", "created_at": "2026-11-30T10:00:00.000Z",
		"resource_type": resource, "action": action, "links": map[string]string{"payment": payment}})
	return paymentworker.FetchRef{ID: "EV0001", Type: resource + "." + action, Item: item}
}

func startGoCardless(t *testing.T) (*providersim.GoCardlessAPI, *paymentworker.GoCardlessClient) {
	t.Helper()
	api, err := providersim.StartGoCardlessAPI()
	must(t, err)
	t.Cleanup(func() { api.Close() })
	return api, &paymentworker.GoCardlessClient{BaseURL: api.URL(), AccessToken: providersim.GoCardlessAccessToken, Timeout: time.Second}
}

// TestGoCardlessClientFetches: a payments.confirmed event's payment is
// fetched, and the object is the payment itself, amount in minor units;
// each status asks for its act.
func TestGoCardlessClientFetches(t *testing.T) {
	t.Parallel()
	api, c := startGoCardless(t)
	tests := []struct {
		status string
		want   paymentworker.Act
	}{
		{"confirmed", paymentworker.ActCharge}, {"paid_out", paymentworker.ActCharge},
		{"pending_submission", paymentworker.ActWait}, {"submitted", paymentworker.ActWait},
		{"pending_customer_approval", paymentworker.ActWait}, {"a_status_added_later", paymentworker.ActWait},
		{"failed", paymentworker.ActSkip}, {"cancelled", paymentworker.ActSkip},
		{"customer_approval_denied", paymentworker.ActSkip}, {"charged_back", paymentworker.ActSkip},
	}
	for i, tt := range tests {
		t.Run(tt.status, func(t *testing.T) {
			id := "PM000" + string(rune('A'+i))
			api.SetPayment(gocardlessPayment(id, tt.status))
			got, err := c.Fetch(context.Background(), gocardlessRef("payments", "confirmed", id))
			must(t, err)
			var p struct {
				ID       string `json:"id"`
				Amount   int64  `json:"amount"`
				Currency string `json:"currency"`
			}
			if got.Act != tt.want || got.Status != tt.status || json.Unmarshal(got.Object, &p) != nil || p.ID != id || p.Amount != 1500 || p.Currency != "GBP" {
				t.Fatalf("act %v, status %q, object %s; want act %v and the payment", got.Act, got.Status, got.Object, tt.want)
			}
		})
	}
}

// TestGoCardlessClientRefuses: another event type is no effect with no
// call; a payment ID of another shape, or one GoCardless does not know, is
// not found; a failing or wrong answer is a fetch to retry that never
// holds the token.
func TestGoCardlessClientRefuses(t *testing.T) {
	t.Parallel()
	api, c := startGoCardless(t)
	for _, typ := range [][2]string{{"payments", "created"}, {"payments", "paid_out"}, {"mandates", "active"}, {"payouts", "paid"}} {
		got, err := c.Fetch(context.Background(), gocardlessRef(typ[0], typ[1], "PM0001"))
		if err != nil || got.Act != paymentworker.ActSkip || got.Status != paymentworker.StatusNotAnEffect {
			t.Fatalf("%s.%s: %+v, %v; want no effect", typ[0], typ[1], got, err)
		}
	}
	if api.Reads() != 0 {
		t.Fatalf("%d reads for events that are not payments.confirmed", api.Reads())
	}
	for _, id := range []string{"", "pm0001", "MD0001", "PM0001/../x", "PM" + strings.Repeat("1", 65)} {
		if _, err := c.Fetch(context.Background(), gocardlessRef("payments", "confirmed", id)); !errors.Is(err, paymentworker.ErrNotFound) {
			t.Fatalf("payment %q: err %v, want not found", id, err)
		}
	}
	if api.Reads() != 0 {
		t.Fatalf("%d reads for IDs of the wrong shape", api.Reads())
	}
	if _, err := c.Fetch(context.Background(), gocardlessRef("payments", "confirmed", "PM9999")); !errors.Is(err, paymentworker.ErrNotFound) {
		t.Fatalf("unknown payment: err %v, want not found", err)
	}
	api.SetPayment(gocardlessPayment("PM0001", "confirmed"))
	api.FailNext(1)
	if _, err := c.Fetch(context.Background(), gocardlessRef("payments", "confirmed", "PM0001")); !errors.Is(err, paymentworker.ErrFetch) {
		t.Fatalf("503: err %v, want a fetch to retry", err)
	}
	wrong := *c
	wrong.AccessToken = "sandbox_not-the-token-value"
	_, err := wrong.Fetch(context.Background(), gocardlessRef("payments", "confirmed", "PM0001"))
	if !errors.Is(err, paymentworker.ErrFetch) || strings.Contains(err.Error(), "not-the-token-value") {
		t.Fatalf("bad token: err %v, want a fetch to retry without the token", err)
	}
	for name, body := range map[string]string{
		"another payment": `{"payments":{"id":"PM0002","status":"confirmed"}}`,
		"no wrapper":      `{"id":"PM0001","status":"confirmed"}`,
		"no status":       `{"payments":{"id":"PM0001"}}`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }))
		odd := &paymentworker.GoCardlessClient{BaseURL: srv.URL, AccessToken: "t", Timeout: time.Second}
		if _, err := odd.Fetch(context.Background(), gocardlessRef("payments", "confirmed", "PM0001")); !errors.Is(err, paymentworker.ErrFetch) {
			t.Errorf("%s: err %v, want a fetch to retry", name, err)
		}
		srv.Close()
	}
}

// TestGoCardlessPaymentIsFetchedAndChargedOnce: a payments.confirmed
// event is charged as the payment GoCardless holds (the event has no
// amount), once per payment: its redelivery after the payment was paid
// out, and the paid_out event itself, are no second effect.
func TestGoCardlessPaymentIsFetchedAndChargedOnce(t *testing.T) {
	t.Parallel()
	api, c := startGoCardless(t)
	r := newFetchingRig(t, "shop-gocardless", paymentworker.Mapping{Scheme: "gocardless", Customer: "/item/metadata/customer"}, "gocardless", c)
	const secret = "gocardless-endpoint-secret"
	batch := func(evs ...string) []events.SQSMessage {
		body := []byte(`{"events":[` + strings.Join(evs, ",") + `]}`)
		h, err := webhook.SignPreset(webhook.SchemeGoCardless, secret, webhook.PresetOptions{}, "", effectNow, body)
		must(t, err)
		return r.deliver(t, "shop-gocardless", webhook.SchemeGoCardless, webhook.PresetOptions{}, headerMap(h), body, []string{secret})
	}
	event := func(id, action string) string {
		return `{"id":"` + id + `","created_at":"2026-11-30T10:00:00.000Z","resource_type":"payments","action":"` + action + `","links":{"payment":"PM0001"}}`
	}
	// Given a confirmed payment of 15.00 GBP
	api.SetPayment(gocardlessPayment("PM0001", "confirmed"))
	confirmed := batch(event("EV0001", "confirmed"))
	r.handleAll(t, confirmed...)
	// When it is paid out, and GoCardless sends payments.paid_out and the confirmed event again
	api.SetPayment(gocardlessPayment("PM0001", "paid_out"))
	r.handleAll(t, batch(event("EV0002", "paid_out"), event("EV0001", "confirmed"))...)
	// Then one charge of what GoCardless holds
	all := r.sim.Charges.All()
	if n := r.charger.calls.Load(); n != 1 || len(all) != 1 || all[0].Amount != 1500 || !strings.EqualFold(all[0].Currency, "GBP") || all[0].Customer != "cus_gc_1" {
		t.Fatalf("%d calls, charges %+v; want one of 1500 GBP to cus_gc_1", n, all)
	}
}
