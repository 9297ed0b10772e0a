package paymentworker_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/pkg/webhook"
)

// TestAdyenPartialCapturesEachActOnce: under delayed capture one
// authorisation of 1130 EUR is captured in three parts, 500, 500 and
// 130, each a CAPTURE with its own signed pspReference. Each capture is
// one money movement: each acts once, with its own amount, and the
// batch delivered again acts on none of them.
func TestAdyenPartialCapturesEachActOnce(t *testing.T) {
	t.Parallel()
	r := newEffectRig(t, map[string]paymentworker.Mapping{
		"shop-adyen-manual": {Scheme: "adyen", Capture: paymentworker.CaptureDelayed, Customer: "/item/merchantReference"},
	})
	// Given a signed batch with the authorisation and three partial captures of it
	captures := map[string]int64{"PSPCAPTURE000001": 500, "PSPCAPTURE000002": 500, "PSPCAPTURE000003": 130}
	items := []string{adyenNotification("AUTHORISATION", "true", "PSPAUTH000000001", "", "order-split", 1130)}
	for _, psp := range slices.Sorted(maps.Keys(captures)) {
		items = append(items, adyenNotification("CAPTURE", "true", psp, "PSPAUTH000000001", "order-split", int(captures[psp])))
	}
	signed, err := webhook.SignAdyen(effectAdyenKey, []byte(`{"live":"false","notificationItems":[`+strings.Join(items, ",")+`]}`))
	must(t, err)
	// When the batch is handled, and delivered and handled again
	for range 2 {
		for _, m := range r.deliver(t, "shop-adyen-manual", webhook.SchemeAdyen, webhook.PresetOptions{}, webhook.HeaderMap{}, signed, []string{effectAdyenKey}) {
			resp, err := r.worker.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{m}})
			must(t, err)
			if reason := r.queue.DeadLettered(m.MessageId); reason != "" || len(resp.BatchItemFailures) > 0 {
				t.Errorf("%s: dead-lettered %q, %d failures; want it acknowledged", attrOf(m.MessageAttributes, "event_id"), reason, len(resp.BatchItemFailures))
			}
		}
	}
	// Then each capture was charged once, with its own amount, and nothing else was
	got := map[string]int64{}
	for _, ch := range r.sim.Charges.All() {
		psp := strings.TrimSuffix(strings.TrimPrefix(ch.EventID, "CAPTURE:"), ":true")
		if _, twice := got[psp]; twice {
			t.Errorf("%s charged twice", ch.EventID)
		}
		got[psp] = ch.Amount
	}
	for psp, amount := range captures {
		if got[psp] != amount {
			t.Errorf("capture %s: charged %d, want %d", psp, got[psp], amount)
		}
	}
	if len(got) != len(captures) {
		t.Errorf("charged %v, want the three captures %v", got, captures)
	}
}

// TestFetchedProvidersKeyOnlyOnTheFetchedObject: PayPal signs only a
// CRC32 of the body, GoCardless's events carry no amount and Mollie's
// pings are not signed, so the worker fetches each object from its
// provider's API. A mapping that keys, amounts, describes or selects by
// the webhook's envelope (a forged body can name a genuine capture under
// a new WH- ID, and act again) is refused at start, naming the field.
func TestFetchedProvidersKeyOnlyOnTheFetchedObject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		m    paymentworker.Mapping
		want []string
	}{
		{name: "paypal keyed on the envelope's id", m: paymentworker.Mapping{Scheme: "paypal", Customer: "/item/custom_id", EffectKey: "/id"},
			want: []string{"effect_key: /id is not", "/item/id"}},
		{name: "paypal acting on the envelope's type", m: paymentworker.Mapping{Scheme: "paypal", Customer: "/item/custom_id", ActWhen: map[string][]string{"/type": {"PAYMENT.CAPTURE.COMPLETED"}}},
			want: []string{"act_when: /type is not"}},
		{name: "paypal on the fetched status outside the object", m: paymentworker.Mapping{Scheme: "paypal", Customer: "/item/custom_id", ActWhen: map[string][]string{"/status": {"COMPLETED"}}},
			want: []string{"act_when: /status is not"}},
		{name: "mollie keyed on the ping's id", m: paymentworker.Mapping{Scheme: "mollie", Customer: "/item/metadata/customer", EffectKey: "/id"},
			want: []string{"effect_key: /id is not"}},
		{name: "gocardless customer and description from the envelope", m: paymentworker.Mapping{Scheme: "gocardless", Customer: "/id", Description: "/type"},
			want: []string{"customer: /id is not", "description: /type is not"}},
		{name: "gocardless amount from the event", m: paymentworker.Mapping{Scheme: "gocardless", Customer: "/item/links/customer", Amount: "/provider", Currency: "/header_id"},
			want: []string{"amount: /provider is not", "currency: /header_id is not"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{"src": tc.m})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range append(tc.want, `source "src"`, "fetched") {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// And the event ID, which names the event and never keys a preset's
	// effect, may still be the envelope's.
	if _, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{"src": {Scheme: "paypal", Customer: "/item/custom_id", EventID: "/id"}}); err != nil {
		t.Fatalf("event_id /id refused: %v", err)
	}
}

// TestEveryPresetPassesItsOwnRule: each preset's defaults, in each
// capture mode, start under the checks they impose on an operator's
// mapping.
func TestEveryPresetPassesItsOwnRule(t *testing.T) {
	t.Parallel()
	for _, s := range webhook.Schemes() {
		for _, capture := range []string{"", paymentworker.CaptureDelayed} {
			d, ok := paymentworker.PresetRule(s, capture)
			if !ok || (capture != "" && s != webhook.SchemeAdyen) {
				continue
			}
			d.Scheme, d.Capture, d.Customer = string(s), capture, "/item/customer"
			if s == webhook.SchemeAdyen {
				d.Customer = "/item/merchantReference"
			}
			if _, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{"src": d}); err != nil {
				t.Errorf("%s %s: its own defaults are refused: %v", s, capture, err)
			}
		}
	}
}

// TestAnEarlierBuildsMappingOnAPresetSourceSaysHowToUpgrade: a mapping of
// the build before effect rules named no scheme and no act_when. On a
// preset source it is refused with the fix, naming the preset, not with
// the generic act_when example.
func TestAnEarlierBuildsMappingOnAPresetSourceSaysHowToUpgrade(t *testing.T) {
	t.Parallel()
	earlier := `{"shop-mollie": {"customer": "/item/metadata/customer", "amount": "/item/amount/value", "currency": "/item/amount/currency"}}`
	sources := []webhook.SourceSpec{{Name: "shop-mollie", Scheme: webhook.SchemeMollie, Queue: paymentworker.PaymentsQueue}}
	_, err := paymentworker.ParseMappingsFor([]byte(earlier), sources)
	if err == nil {
		t.Fatal("accepted")
	}
	if msg := err.Error(); !strings.Contains(msg, `source "shop-mollie"`) || !strings.Contains(msg, "name the preset: `\"scheme\": \"mollie\"`") ||
		strings.Contains(msg, "payment.requested") {
		t.Fatalf("error %q: want the source and `\"scheme\": \"mollie\"`, not the generic example", msg)
	}
	// And without the sources, a source named for its preset, or a mapping
	// that reads a preset's item, is told the same.
	for _, raw := range []string{
		`{"mollie": {"customer": "/item/metadata/customer", "amount": "/item/amount/value", "currency": "/item/amount/currency"}}`,
		`{"shop": {"customer": "/item/metadata/customer", "amount": "/item/amount/value", "currency": "/item/amount/currency"}}`,
	} {
		_, err := paymentworker.ParseMappings([]byte(raw))
		if err == nil || !strings.Contains(err.Error(), "name the preset") || strings.Contains(err.Error(), "payment.requested") {
			t.Errorf("%s: error %v, want it to say name the preset", raw, err)
		}
	}
	if _, err := paymentworker.ParseMappings([]byte(`{"mollie": {"customer": "/item/metadata/customer", "amount": "/item/amount/value", "currency": "/item/amount/currency"}}`)); err == nil ||
		!strings.Contains(err.Error(), "`\"scheme\": \"mollie\"`") {
		t.Errorf("a source named mollie: error %v, want `\"scheme\": \"mollie\"`", err)
	}
}
