package paymentworker_test

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/webhook"
)

// TestRolloutAdyenCaptureAfterAnEarlierBuildActedOnTheAuthorisation: an
// earlier build acted on Adyen's AUTHORISATION of 1130 EUR, under its
// event's key, or under the payment's pspReference with immediate
// capture. The source now captures later, and a CAPTURE of the same
// payment (its originalReference is the authorisation's pspReference)
// comes in. A partial capture of 1000 is another payload of a payment
// already acted on: it is stopped for a person, never acted on again; a
// capture of the whole amount is the effect already made. A record under
// the pspReference of another partial capture (the build that keyed
// every capture by originalReference) is that capture's, not this one's.
func TestRolloutAdyenCaptureAfterAnEarlierBuildActedOnTheAuthorisation(t *testing.T) {
	t.Parallel()
	delayed := paymentworker.Mapping{Scheme: "adyen", Capture: paymentworker.CaptureDelayed,
		Customer: "/item/merchantReference", Amount: "/item/amount/value", Currency: "/item/amount/currency"}
	r := newEffectRig(t, map[string]paymentworker.Mapping{"shop-adyen": delayed})
	tests := []struct {
		name string
		// byEvent: the earlier build keyed the event; else the payment.
		byEvent bool
		// earlierEvent is the event the earlier build acted on, for
		// earlierAmount; "" is the authorisation.
		earlierEvent  string
		earlierAmount int64
		capture       int
		wantReason    string // "" for acknowledged
		wantCalls     int32
	}{
		{name: "keyed by event, partial capture", byEvent: true, earlierAmount: 1130, capture: 1000, wantReason: "legacy_payload_mismatch"},
		{name: "keyed by payment, partial capture", earlierAmount: 1130, capture: 1000, wantReason: "payload_mismatch"},
		{name: "keyed by event, whole capture", byEvent: true, earlierAmount: 1130, capture: 1130},
		{name: "keyed by payment, whole capture", earlierAmount: 1130, capture: 1130},
		{name: "keyed by payment, another partial capture of the same amount", earlierEvent: "CAPTURE:PSPCAPTOTHER00005:true", earlierAmount: 500, capture: 500, wantCalls: 1},
		{name: "keyed by payment, another partial capture of another amount", earlierEvent: "CAPTURE:PSPCAPTOTHER00006:true", earlierAmount: 600, capture: 500, wantCalls: 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given the earlier build's completed effect of the payment,
			auth := fmt.Sprintf("PSPAUTH00000000%d", i+1)
			event := cmp.Or(tt.earlierEvent, "AUTHORISATION:"+auth+":true")
			key := auth
			if tt.byEvent {
				key = event
			}
			earlier := provider.ChargeRequest{EventID: event, Customer: "order-7", Amount: tt.earlierAmount, Currency: "EUR"}
			if res := r.charger.Charger.CreateCharge(context.Background(), paymentworker.ProviderKey("shop-adyen", key, 1), earlier); res.Outcome != provider.Succeeded {
				t.Fatalf("earlier build's charge: %v", res.Err)
			}
			r.completeAs(t, "shop-adyen:"+key, earlier)
			before := r.charger.calls.Load()
			// when a capture of that payment arrives under the new build,
			signed, err := webhook.SignAdyen(effectAdyenKey, []byte(`{"live":"false","notificationItems":[`+
				adyenNotification("CAPTURE", "true", fmt.Sprintf("PSPCAPT00000000%d", i+1), auth, "order-7", tt.capture)+`]}`))
			must(t, err)
			ms := r.deliver(t, "shop-adyen", webhook.SchemeAdyen, webhook.PresetOptions{}, webhook.HeaderMap{}, signed, []string{effectAdyenKey})
			resp, err := r.worker.Handle(context.Background(), events.SQSEvent{Records: ms})
			must(t, err)
			// then it acts only if the earlier effect was another
			// movement's, and a partial capture of an authorisation acted
			// on is dead-lettered with its reason.
			if n := r.charger.calls.Load() - before; n != tt.wantCalls {
				t.Fatalf("acted on %d times, want %d", n, tt.wantCalls)
			}
			reason := r.queue.DeadLettered(ms[0].MessageId)
			switch {
			case len(resp.BatchItemFailures) != 0:
				t.Fatalf("the capture is left to come back")
			case tt.wantReason == "" && reason != "":
				t.Fatalf("dead-lettered: %s", reason)
			case !strings.Contains(reason, tt.wantReason):
				t.Fatalf("dead-letter reason %q, want %s", reason, tt.wantReason)
			}
		})
	}
}

// TestRolloutAnUnsignedHeaderIDStopsNothing: the build before effect keys
// keyed a Razorpay delivery by its ID header, which no signature covers.
// A genuine captured payment sent under the header of another payment's
// completed record is that record's only if the payloads are the same:
// with another payload it is acted on, once, not stopped.
func TestRolloutAnUnsignedHeaderIDStopsNothing(t *testing.T) {
	t.Parallel()
	r := newEffectRig(t, effectMappings)
	const secret = "razorpay-webhook-secret"
	// Given the earlier build's completed record of another payment under
	// header rzp-evt-other,
	r.completeAs(t, "shop-razorpay:rzp-evt-other", provider.ChargeRequest{Customer: "cust_other", Amount: 99, Currency: "INR"})
	// when a captured payment arrives under that header,
	body := razorpayEvent("payment.captured", "pay_29QQoUBi66xm3g")
	h, err := webhook.SignPreset(webhook.SchemeRazorpay, secret, webhook.PresetOptions{}, "rzp-evt-other", effectNow, body)
	must(t, err)
	r.handleAll(t, r.deliver(t, "shop-razorpay", webhook.SchemeRazorpay, webhook.PresetOptions{}, h, body, []string{secret})...)
	// then it is acted on once.
	if n := r.charger.calls.Load(); n != 1 {
		t.Fatalf("%d charges, want 1", n)
	}
}
