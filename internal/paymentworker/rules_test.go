package paymentworker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/paymentworker/paymentworkertest"
	"github.com/hookline/hookline/pkg/idempotency"
)

// TestMappingsAreRefusedAtStart: a rule that could act on what a
// provider does not sign, or that says nothing about which events act,
// is refused when the mappings are read, naming the source and field.
func TestMappingsAreRefusedAtStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		m    paymentworker.Mapping
		want []string
	}{
		{name: "github has no default rule", m: paymentworker.Mapping{Scheme: "github", Customer: "/item/sender/login", Amount: "/item/amount", Currency: "/item/currency"},
			want: []string{"act_when", "github signs no event type", "effect_key: no JSON pointer"}},
		{name: "github's event type is an unsigned header", m: paymentworker.Mapping{Scheme: "github", Customer: "/item/c", Amount: "/item/a", Currency: "/item/cur",
			EffectKey: "/item/id", ActWhen: map[string][]string{"/type": {"sponsorship"}}},
			want: []string{"act_when: /type is not signed by github"}},
		{name: "shopify needs a rule too", m: paymentworker.Mapping{Scheme: "shopify", Customer: "/item/customer/id", Amount: "/item/total", Currency: "/item/currency"},
			want: []string{"act_when", "shopify signs no event type"}},
		{name: "adyen's additionalData is not signed", m: paymentworker.Mapping{Scheme: "adyen", Customer: "/item/additionalData/shopperReference"},
			want: []string{"customer: /item/additionalData/shopperReference is not signed by adyen"}},
		{name: "adyen's live flag is not signed", m: paymentworker.Mapping{Scheme: "adyen", Customer: "/item/merchantReference", ActWhen: map[string][]string{"/live": {"true"}}},
			want: []string{"act_when: /live is not signed by adyen"}},
		{name: "braintree is out of a pointer's reach", m: paymentworker.Mapping{Scheme: "braintree", Customer: "/item/x", Amount: "/item/y", Currency: "/item/z"},
			want: []string{"braintree", "XML"}},
		{name: "a generic source says which events act", m: paymentworker.Mapping{Customer: "/c", Amount: "/a", Currency: "/cur"},
			want: []string{"act_when: no rule says which events act"}},
		{name: "a capture mode is Adyen's", m: paymentworker.Mapping{Scheme: "checkout", Customer: "/item/data/customer/id", Capture: "delayed"},
			want: []string{"capture"}},
		{name: "an unknown format and effect", m: paymentworker.Mapping{Scheme: "paddle", Customer: "/item/data/customer_id", AmountFormat: "cents", Effect: "paypal"},
			want: []string{"amount_format", "effect"}},
		{name: "an unknown scheme", m: paymentworker.Mapping{Scheme: "venmo", Customer: "/c", Amount: "/a", Currency: "/cur", ActWhen: map[string][]string{"/t": {"x"}}},
			want: []string{`scheme: "venmo"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{"src": tc.m})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) || !strings.Contains(err.Error(), `source "src"`) {
					t.Fatalf("error %q does not name %q and the source", err, w)
				}
			}
		})
	}
}

// TestPresetDefaults: a mapping that names a preset and says only where
// the customer is acts as the provider's docs say.
func TestPresetDefaults(t *testing.T) {
	t.Parallel()
	ms, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{
		"adyen-now":   {Scheme: "adyen", Customer: "/item/merchantReference"},
		"adyen-later": {Scheme: "adyen", Customer: "/item/merchantReference", Capture: paymentworker.CaptureDelayed},
		"pp":          {Scheme: "paypal", Customer: "/item/custom_id"},
	})
	must(t, err)
	auth := adyenEnvelope("AUTHORISATION", "true", "PSPAUTH", "")
	capture := adyenEnvelope("CAPTURE", "true", "PSPCAPT", "PSPAUTH")
	tests := []struct {
		source, body, wantKey, wantNoEffect string
		amount                              int64
	}{
		{source: "adyen-now", body: auth, wantKey: "adyen-now:PSPAUTH", amount: 1130},
		{source: "adyen-now", body: capture, wantNoEffect: "/item/eventCode"},
		{source: "adyen-later", body: auth, wantNoEffect: "/item/eventCode"},
		{source: "adyen-later", body: capture, wantKey: "adyen-later:PSPCAPT", amount: 1130},
		{source: "pp", body: `{"provider":"paypal","id":"WH-1","type":"PAYMENT.CAPTURE.COMPLETED","status":"COMPLETED","item":{"id":"CAP1","status":"COMPLETED","custom_id":"cus_1","amount":{"currency_code":"JPY","value":"1200"}}}`,
			wantKey: "pp:CAP1", amount: 1200},
		{source: "pp", body: `{"provider":"paypal","id":"WH-2","type":"PAYMENT.CAPTURE.COMPLETED","status":"COMPLETED","item":{"id":"CAP2","status":"REFUNDED"}}`, wantNoEffect: "/item/status"},
	}
	for _, tc := range tests {
		p, err := paymentworker.ParseMessageWith(mappingMessage(tc.source, tc.body), ms)
		must(t, err)
		switch {
		case tc.wantNoEffect != "":
			if !strings.HasPrefix(p.NotAnEffect, tc.wantNoEffect) {
				t.Errorf("%s %.60s: acts (%q), want no effect by %s", tc.source, tc.body, p.NotAnEffect, tc.wantNoEffect)
			}
		case p.NotAnEffect != "" || p.Key() != tc.wantKey || p.Charge.Amount != tc.amount:
			t.Errorf("%s %.60s: key %q amount %d (%q), want %q %d", tc.source, tc.body, p.Key(), p.Charge.Amount, p.NotAnEffect, tc.wantKey, tc.amount)
		}
	}
}

func adyenEnvelope(code, success, psp, original string) string {
	return `{"provider":"adyen","id":"` + code + ":" + psp + ":" + success + `","type":"` + code + `","item":` +
		`{"eventCode":"` + code + `","success":"` + success + `","pspReference":"` + psp + `","originalReference":"` + original +
		`","merchantAccountCode":"M","merchantReference":"order-1","amount":{"value":1130,"currency":"EUR"}}}`
}

// TestDecimalAmountsScaleByTheCurrency: PayPal and Mollie send "9.90";
// it is scaled by the currency's ISO 4217 exponent and refused when it
// does not scale exactly.
func TestDecimalAmountsScaleByTheCurrency(t *testing.T) {
	t.Parallel()
	ms, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{
		"dec":   {Customer: "/c", Amount: "/v", Currency: "/cur", AmountFormat: paymentworker.AmountDecimal, ActWhen: map[string][]string{"/t": {"pay"}}},
		"minor": {Customer: "/c", Amount: "/v", Currency: "/cur", AmountFormat: paymentworker.AmountMinorString, ActWhen: map[string][]string{"/t": {"pay"}}},
	})
	must(t, err)
	tests := []struct {
		source, value, cur string
		want               int64
		err                string
	}{
		{source: "dec", value: `"9.90"`, cur: "USD", want: 990},
		{source: "dec", value: `"9.9"`, cur: "usd", want: 990},
		{source: "dec", value: `"1200"`, cur: "JPY", want: 1200},
		{source: "dec", value: `"1200.00"`, cur: "JPY", want: 1200},
		{source: "dec", value: `"1.234"`, cur: "KWD", want: 1234},
		{source: "dec", value: `"9.999"`, cur: "USD", err: "does not scale exactly"},
		{source: "dec", value: `"0.5"`, cur: "JPY", err: "does not scale exactly"},
		{source: "dec", value: `"1e3"`, cur: "USD", err: "is not a decimal amount"},
		{source: "dec", value: `"-1.00"`, cur: "USD", err: "is not a decimal amount"},
		{source: "dec", value: `"0.00"`, cur: "USD", err: "is not positive"},
		{source: "dec", value: `9.90`, cur: "USD", err: "is not a decimal string"},
		{source: "dec", value: `"9.90"`, cur: "XYZ", err: "not an ISO 4217 code"},
		{source: "minor", value: `"990"`, cur: "USD", want: 990},
		{source: "minor", value: `"9.90"`, cur: "USD", err: "is not an integer in minor units"},
		{source: "minor", value: `990`, cur: "USD", err: "is not a string of minor units"},
	}
	for _, tc := range tests {
		body := `{"id":"e1","t":"pay","c":"cus_1","cur":"` + tc.cur + `","v":` + tc.value + `}`
		p, err := paymentworker.ParseMessageWith(mappingMessage(tc.source, body), ms)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s %s %s: error %v, want %q", tc.source, tc.value, tc.cur, err, tc.err)
		case tc.err == "" && (err != nil || p.Charge.Amount != tc.want):
			t.Errorf("%s %s %s: %d, %v; want %d", tc.source, tc.value, tc.cur, p.Charge.Amount, err, tc.want)
		}
	}
}

// TestAPresetEnvelopeNeedsItsPresetsMapping: an Adyen item under a
// mapping written for a generic body is refused, not read with pointers
// nobody checked against what Adyen signs; and the other way round.
func TestAPresetEnvelopeNeedsItsPresetsMapping(t *testing.T) {
	t.Parallel()
	ms, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{
		"generic": {Customer: "/item/merchantReference", Amount: "/item/amount/value", Currency: "/item/amount/currency", ActWhen: map[string][]string{"/type": {"AUTHORISATION"}}},
		"adyen":   {Scheme: "adyen", Customer: "/item/merchantReference"},
	})
	must(t, err)
	if _, err := paymentworker.ParseMessageWith(mappingMessage("generic", adyenEnvelope("AUTHORISATION", "true", "P1", "")), ms); err == nil || !strings.Contains(err.Error(), `must say "scheme": "adyen"`) {
		t.Fatalf("an adyen item under a generic mapping: %v", err)
	}
	if _, err := paymentworker.ParseMessageWith(mappingMessage("adyen", `{"id":"e","type":"AUTHORISATION"}`), ms); err == nil || !strings.Contains(err.Error(), "not a adyen event") {
		t.Fatalf("a generic body under an adyen mapping: %v", err)
	}
}

// TestAPresetNeverDefaultsToStripe: a payment service provider's capture
// means the customer paid already. Its source acts through the
// provider-contract service, and a worker that has only Stripe refuses
// to start rather than charge the customer a second time.
func TestAPresetNeverDefaultsToStripe(t *testing.T) {
	t.Parallel()
	ms, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{"shop-adyen": {Scheme: "adyen", Customer: "/item/merchantReference"}})
	must(t, err)
	stripeOnly := map[string]paymentworker.Charger{paymentworker.EffectStripe: stubCharger{}}
	_, err = paymentworker.New(paymentworker.Config{Registry: noRegistry{}, Provider: stubCharger{}, Effects: stripeOnly, Queue: paymentworkertest.NewRecordingQueue(), Mappings: ms})
	if err == nil || !strings.Contains(err.Error(), `source "shop-adyen": effect "contract"`) {
		t.Fatalf("started with a preset and no contract service: %v", err)
	}
}

// stubCharger is a charger that is never called.
type stubCharger struct{ naiveCharger }

// downRegistry is a registry whose store cannot be reached.
type downRegistry struct{ noRegistry }

func (downRegistry) Claim(context.Context, string, string) (idempotency.Claim, error) {
	return idempotency.Claim{}, errors.New("store down")
}
func (downRegistry) Status(context.Context, string) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, errors.New("store down")
}

// TestARegistryThatIsDownLeavesTheMessageToComeBack: neither a legacy
// lookup nor a not-an-effect record that cannot be written acknowledges
// a message; it comes back, and nothing is charged.
func TestARegistryThatIsDownLeavesTheMessageToComeBack(t *testing.T) {
	t.Parallel()
	ms, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{"stripe": paymentworker.StripeInvoiceMapping})
	must(t, err)
	q := paymentworkertest.NewRecordingQueue()
	w, err := paymentworker.New(paymentworker.Config{Registry: downRegistry{}, Provider: stubCharger{}, Queue: q, Mappings: ms})
	must(t, err)
	for _, typ := range []string{"invoice.finalized", "invoice.paid"} { // a legacy lookup; a record of no effect
		m := mappingMessage("stripe", `{"id":"evt_down","type":"`+typ+`","data":{"object":{"id":"in_down","customer":"cus_1","amount_due":100,"currency":"usd"}}}`)
		m.MessageAttributes["event_id"] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String("evt_down")}
		m.Attributes = map[string]string{"ApproximateReceiveCount": "1"}
		resp, err := w.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{m}})
		must(t, err)
		if len(resp.BatchItemFailures) != 1 || q.DeadLettered(m.MessageId) != "" {
			t.Fatalf("%s: %d failures, dead-lettered %q; want the message back", typ, len(resp.BatchItemFailures), q.DeadLettered(m.MessageId))
		}
	}
}
