package webhook_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/webhook"
)

// TestGoCardlessEventsAreFetched: a GoCardless event names its payment
// (links.payment) and carries no amount, so each event of a batch is
// queued for the worker to fetch the payment, under the event's own id
// and its type resource_type.action.
func TestGoCardlessEventsAreFetched(t *testing.T) {
	const secret = "gocardless-endpoint-secret"
	body := []byte(`{"events":[` +
		`{"id":"EV0001","created_at":"2026-11-30T10:00:00.000Z","resource_type":"payments","action":"confirmed","links":{"payment":"PM0001"}},` +
		`{"id":"EV0002","created_at":"2026-11-30T10:00:01.000Z","resource_type":"mandates","action":"active","links":{"mandate":"MD0001"}}]}`)
	h, err := webhook.SignPreset(webhook.SchemeGoCardless, secret, webhook.PresetOptions{}, "", time.Now(), body)
	if err != nil {
		t.Fatal(err)
	}
	v, err := webhook.NewVerifier(webhook.VerifierConfig{Scheme: webhook.SchemeGoCardless})
	if err != nil {
		t.Fatal(err)
	}
	m := webhook.HeaderMap{}
	for k := range h {
		m[strings.ToLower(k)] = h.Get(k)
	}
	d, err := v.VerifyDelivery(m, body, []string{secret})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ id, typ string }{{"EV0001", "payments.confirmed"}, {"EV0002", "mandates.active"}}
	if len(d.Items) != len(want) {
		t.Fatalf("%d items, want %d", len(d.Items), len(want))
	}
	for i, it := range d.Items {
		var env webhook.ItemEnvelope
		if err := json.Unmarshal(it.Payload, &env); err != nil {
			t.Fatal(err)
		}
		if it.EventID != want[i].id || env.ID != want[i].id || env.Type != want[i].typ || !env.Fetch {
			t.Fatalf("item %d: event %q, envelope id %q, type %q, fetch %v; want %q, %q, fetched",
				i, it.EventID, env.ID, env.Type, env.Fetch, want[i].id, want[i].typ)
		}
	}
}
