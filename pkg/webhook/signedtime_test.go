package webhook_test

import (
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/webhook"
	"github.com/hookline/hookline/pkg/webhook/webhooktest"
)

// TestTheSignedTimeOfEachPresetIsRead: where a preset's provider signs
// the event's time in the body, and no replay window holds it, the item
// carries that time marked as signed, so that a replay older than the
// intake remembers can be known; where the time is not signed (Adyen's
// eventDate, Shopify's X-Shopify-Triggered-At) or is held to a replay
// window already (Paddle, PayPal, Stripe, Standard Webhooks), it is not
// marked.
func TestTheSignedTimeOfEachPresetIsRead(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	kitTime := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	want := map[webhook.Scheme]time.Time{
		webhook.SchemeCheckout:   kitTime, // created_on
		webhook.SchemeSquare:     kitTime, // created_at
		webhook.SchemeGoCardless: kitTime, // each event's created_at
		webhook.SchemeBraintree:  kitTime, // the notification's timestamp
		webhook.SchemeRazorpay:   time.Unix(1800000000, 0).UTC(),
	}
	for _, k := range webhooktest.Kits(t) {
		t.Run(string(k.Scheme), func(t *testing.T) {
			secret := ""
			if len(k.Secrets) > 0 {
				secret = k.Secrets[0]
			}
			// Given the provider's delivery of one event, when it is verified
			h, body, err := k.Delivery(secret, "evtSignedTime1", now)
			if err != nil {
				t.Fatal(err)
			}
			d, err := verifierFor(t, k, now).VerifyDelivery(h, body, k.Secrets)
			if err != nil {
				t.Fatal(err)
			}
			// Then its time is marked signed exactly where the provider
			// signs it and nothing else bounds it
			it := d.Items[0]
			wantAt, signed := want[k.Scheme]
			if it.TimeSigned != signed {
				t.Fatalf("TimeSigned = %v (time %v), want %v", it.TimeSigned, it.Timestamp, signed)
			}
			if signed && !it.Timestamp.Equal(wantAt) {
				t.Fatalf("time %v, want %v", it.Timestamp, wantAt)
			}
		})
	}
}

// TestNoSignedTimeIsNotMarkedSigned: a body without the time member, or
// with one that does not parse, has no signed time.
func TestNoSignedTimeIsNotMarkedSigned(t *testing.T) {
	v := presetVerifier(t, webhook.SchemeCheckout, webhook.PresetOptions{}, time.Now())
	for _, body := range []string{`{"id":"evt_untimed","type":"payment_captured"}`, `{"id":"evt_badtime","type":"payment_captured","created_on":"yesterday"}`} {
		h, err := webhook.SignPreset(webhook.SchemeCheckout, "cko-secret", webhook.PresetOptions{}, "", time.Now(), []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		d, err := v.VerifyDelivery(webhook.HeaderMap{webhook.HeaderCheckoutSignature: h.Get(webhook.HeaderCheckoutSignature)}, []byte(body), []string{"cko-secret"})
		if err != nil {
			t.Fatal(err)
		}
		if it := d.Items[0]; it.TimeSigned || !it.Timestamp.IsZero() {
			t.Fatalf("%s: time %v signed %v, want none", body, it.Timestamp, it.TimeSigned)
		}
	}
}
