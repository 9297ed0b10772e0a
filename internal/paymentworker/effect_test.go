package paymentworker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/paymentworker/paymentworkertest"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/webhook"
)

// effectRig is the worker behind real verifiers: each delivery is signed
// as its provider signs it, verified and split by the preset, and handed
// to the worker as the receiver queues it. The charger counts calls.
type effectRig struct {
	sim     *providersim.Sim
	mollie  *providersim.MollieAPI
	charger *countingCharger
	queue   *paymentworkertest.RecordingQueue
	worker  *paymentworker.Worker
	reg     *idempotency.Registry
	n       int
}

// effectMappings are the mappings an operator adds per source: each says
// where its provider keeps the customer, and the preset's defaults say the
// rest.
var effectMappings = map[string]paymentworker.Mapping{
	"shop-adyen":    {Scheme: "adyen", Customer: "/item/merchantReference", Amount: "/item/amount/value", Currency: "/item/amount/currency"},
	"shop-square":   {Scheme: "square", Customer: "/item/data/object/payment/customer_id", Amount: "/item/data/object/payment/amount_money/amount", Currency: "/item/data/object/payment/amount_money/currency"},
	"shop-checkout": {Scheme: "checkout", Customer: "/item/data/customer/id", Amount: "/item/data/amount", Currency: "/item/data/currency"},
	"shop-razorpay": {Scheme: "razorpay", Customer: "/item/payload/payment/entity/customer_id", Amount: "/item/payload/payment/entity/amount", Currency: "/item/payload/payment/entity/currency"},
	"shop-mollie":   {Scheme: "mollie", Customer: "/item/metadata/customer", Amount: "/item/metadata/amount_minor", Currency: "/item/amount/currency"},
	"stripe":        paymentworker.StripeInvoiceMapping,
}

func newEffectRig(t *testing.T, mappings map[string]paymentworker.Mapping) *effectRig {
	t.Helper()
	env := localaws.StartForTest(t)
	sim, err := providersim.New(providersim.Config{})
	must(t, err)
	must(t, sim.Start())
	t.Cleanup(func() { sim.Close() })
	mollie, err := providersim.StartMollieAPI()
	must(t, err)
	t.Cleanup(func() { mollie.Close() })
	client, err := provider.New(provider.Config{BaseURL: sim.URL()})
	must(t, err)
	store, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: env.DynamoDB, Table: env.TableName("IdempotencyTable")})
	must(t, err)
	reg, err := idempotency.New(idempotency.Config{Store: store, Namespace: "payments"})
	must(t, err)
	maps, err := paymentworker.NewMappings(mappings)
	must(t, err)
	r := &effectRig{sim: sim, mollie: mollie, charger: &countingCharger{Charger: client}, queue: paymentworkertest.NewRecordingQueue(), reg: reg}
	r.worker, err = paymentworker.New(paymentworker.Config{Registry: reg, Provider: r.charger, Queue: r.queue, Mappings: maps,
		Effects:  map[string]paymentworker.Charger{paymentworker.EffectContract: r.charger},
		Fetchers: map[string]paymentworker.Fetcher{"mollie": &paymentworker.MollieClient{BaseURL: mollie.URL(), APIKey: providersim.MollieAPIKey, Timeout: time.Second}}})
	must(t, err)
	return r
}

// deliver verifies a delivery with the source's preset and returns the
// messages the receiver would queue, one per item.
func (r *effectRig) deliver(t *testing.T, source string, scheme webhook.Scheme, opts webhook.PresetOptions, h webhook.Headers, body []byte, secrets []string) []events.SQSMessage {
	t.Helper()
	v, err := webhook.NewVerifier(webhook.VerifierConfig{Scheme: scheme, Options: opts, Now: func() time.Time { return effectNow }})
	must(t, err)
	d, err := v.VerifyDelivery(h, body, secrets)
	must(t, err)
	var out []events.SQSMessage
	for _, it := range d.Items {
		out = append(out, r.message(source, it.EventID, string(it.Payload)))
	}
	return out
}

// message is one queue message with the intake's attributes.
func (r *effectRig) message(source, eventID, body string) events.SQSMessage {
	r.n++
	str := func(s string) events.SQSMessageAttribute {
		return events.SQSMessageAttribute{DataType: "String", StringValue: &s}
	}
	return events.SQSMessage{MessageId: fmt.Sprintf("m-%d", r.n), ReceiptHandle: fmt.Sprintf("rh-%d", r.n), Body: body,
		Attributes:        map[string]string{"ApproximateReceiveCount": "1"},
		MessageAttributes: map[string]events.SQSMessageAttribute{"source": str(source), "event_id": str(eventID)}}
}

// handleAll hands each message to the worker once and fails the test for
// any that is not acknowledged or that was dead-lettered.
func (r *effectRig) handleAll(t *testing.T, ms ...events.SQSMessage) {
	t.Helper()
	for _, m := range ms {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := r.worker.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{m}})
		cancel()
		must(t, err)
		if len(resp.BatchItemFailures) > 0 {
			t.Fatalf("message %s (%s) was not acknowledged: it would be retried", m.MessageId, attrOf(m.MessageAttributes, "event_id"))
		}
		if reason := r.queue.DeadLettered(m.MessageId); reason != "" {
			t.Fatalf("message %s (%s) was dead-lettered: %s", m.MessageId, attrOf(m.MessageAttributes, "event_id"), reason)
		}
	}
}

// effectNow is the clock of the verifiers: the deliveries' signed times
// are minutes before it.
var effectNow = time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)

const effectAdyenKey = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"

func adyenNotification(code, success, psp, original, reference string, value int) string {
	return fmt.Sprintf(`{"NotificationRequestItem":{"eventCode":%q,"success":%q,"pspReference":%q,"originalReference":%q,`+
		`"merchantAccountCode":"ShopMerchant","merchantReference":%q,"amount":{"value":%d,"currency":"EUR"},`+
		`"eventDate":"2026-11-30T10:00:00+01:00","reason":"","additionalData":{}}}`, code, success, psp, original, reference, value)
}

// TestAnAdyenBatchActsOnlyOnTheSuccessfulPayment: one signed batch holds
// a successful authorisation of order-1, a refused one of order-2 and a
// refund of order-1. Only the first is a payment; the other two are
// acknowledged with no effect, and none is dead-lettered.
func TestAnAdyenBatchActsOnlyOnTheSuccessfulPayment(t *testing.T) {
	t.Parallel()
	r := newEffectRig(t, effectMappings)
	body := `{"live":"false","notificationItems":[` +
		adyenNotification("AUTHORISATION", "true", "PSP0000000000001", "", "order-1", 1130) + "," +
		adyenNotification("AUTHORISATION", "false", "PSP0000000000002", "", "order-2", 2500) + "," +
		adyenNotification("REFUND", "true", "PSP0000000000003", "PSP0000000000001", "order-1", 1130) + `]}`
	signed, err := webhook.SignAdyen(effectAdyenKey, []byte(body))
	must(t, err)
	ms := r.deliver(t, "shop-adyen", webhook.SchemeAdyen, webhook.PresetOptions{}, webhook.HeaderMap{}, signed, []string{effectAdyenKey})
	if len(ms) != 3 {
		t.Fatalf("%d messages, want 3", len(ms))
	}
	// When every item is handled, and the batch is delivered again
	r.handleAll(t, ms...)
	r.handleAll(t, r.deliver(t, "shop-adyen", webhook.SchemeAdyen, webhook.PresetOptions{}, webhook.HeaderMap{}, signed, []string{effectAdyenKey})...)
	// Then one payment made one charge
	if n := r.charger.calls.Load(); n != 1 {
		t.Fatalf("%d charges for one successful payment, want 1", n)
	}
}

func squarePayment(eventID, typ, paymentID, status string) []byte {
	return fmt.Appendf(nil, `{"merchant_id":"MLX","type":%q,"event_id":%q,"created_at":"2026-11-30T10:01:00Z",`+
		`"data":{"type":"payment","id":%q,"object":{"payment":{"id":%q,"status":%q,"customer_id":"CUST_1",`+
		`"amount_money":{"amount":1999,"currency":"USD"},"total_money":{"amount":1999,"currency":"USD"}}}}}`,
		typ, eventID, paymentID, paymentID, status)
}

// TestSquareActsOncePerCompletedPayment: Square sends payment.created,
// then payment.updated as the payment moves on, and payment.updated again
// after it completed. One payment is one effect, on COMPLETED.
func TestSquareActsOncePerCompletedPayment(t *testing.T) {
	t.Parallel()
	r := newEffectRig(t, effectMappings)
	opts := webhook.PresetOptions{SignedURL: "https://hooks.example.com/webhooks/square"}
	const secret = "square-signature-key"
	var ms []events.SQSMessage
	for _, ev := range []struct{ id, typ, status string }{
		{"sq-evt-1", "payment.created", "APPROVED"},
		{"sq-evt-2", "payment.updated", "COMPLETED"},
		{"sq-evt-3", "payment.updated", "COMPLETED"},
	} {
		body := squarePayment(ev.id, ev.typ, "KkAkhdMsgzn59SM8A89WgKwekxLZY", ev.status)
		h, err := webhook.SignPreset(webhook.SchemeSquare, secret, opts, "", effectNow, body)
		must(t, err)
		ms = append(ms, r.deliver(t, "shop-square", webhook.SchemeSquare, opts, h, body, []string{secret})...)
	}
	r.handleAll(t, ms...)
	if n := r.charger.calls.Load(); n != 1 {
		t.Fatalf("%d charges for one completed payment, want 1", n)
	}
}

func checkoutEvent(id, typ, actionID string, amount int) []byte {
	return fmt.Appendf(nil, `{"id":%q,"type":%q,"created_on":"2026-11-30T10:01:00Z","data":{"id":"pay_mbabizu24mvu3mela5njyhpit4",`+
		`"action_id":%q,"amount":%d,"currency":"GBP","customer":{"id":"cus_ckout_1"}}}`, id, typ, actionID, amount)
}

// TestCheckoutActsOncePerCapture: a payment approved, then captured in two
// parts, then refunded. Each capture is an effect of its own (its action);
// the approval and the refund are none.
func TestCheckoutActsOncePerCapture(t *testing.T) {
	t.Parallel()
	r := newEffectRig(t, effectMappings)
	const secret = "checkout-signature-key"
	var ms []events.SQSMessage
	for _, ev := range []struct {
		id, typ, action string
		amount          int
	}{
		{"evt_approved_1", "payment_approved", "act_auth_1", 1000},
		{"evt_captured_1", "payment_captured", "act_capture_1", 600},
		{"evt_captured_2", "payment_captured", "act_capture_2", 400},
		{"evt_refunded_1", "payment_refunded", "act_refund_1", 400},
	} {
		body := checkoutEvent(ev.id, ev.typ, ev.action, ev.amount)
		h, err := webhook.SignPreset(webhook.SchemeCheckout, secret, webhook.PresetOptions{}, "", effectNow, body)
		must(t, err)
		ms = append(ms, r.deliver(t, "shop-checkout", webhook.SchemeCheckout, webhook.PresetOptions{}, h, body, []string{secret})...)
	}
	r.handleAll(t, ms...)
	if n := r.charger.calls.Load(); n != 2 {
		t.Fatalf("%d effects for two partial captures, want 2", n)
	}
}

func razorpayEvent(typ, paymentID string) []byte {
	return fmt.Appendf(nil, `{"entity":"event","account_id":"acc_BFQ7uQEaa7j2z7","event":%q,"contains":["payment"],`+
		`"payload":{"payment":{"entity":{"id":%q,"entity":"payment","amount":50000,"currency":"INR","status":"captured",`+
		`"order_id":"order_9A33XWu170gUtm","customer_id":"cust_rzp_1"}}},"created_at":1796032860}`, typ, paymentID)
}

// TestRazorpayActsOncePerCapturedPayment: payment.authorized, then
// payment.captured, then order.paid, for one payment; and the captured
// delivery re-sent with a new X-Razorpay-Event-Id, which no signature
// covers. One effect.
func TestRazorpayActsOncePerCapturedPayment(t *testing.T) {
	t.Parallel()
	r := newEffectRig(t, effectMappings)
	const secret = "razorpay-webhook-secret"
	var ms []events.SQSMessage
	for _, ev := range []struct{ header, typ string }{
		{"rzp-evt-1", "payment.authorized"},
		{"rzp-evt-2", "payment.captured"},
		{"rzp-evt-3", "order.paid"},
		{"rzp-evt-forged", "payment.captured"},
	} {
		body := razorpayEvent(ev.typ, "pay_29QQoUBi66xm2f")
		h, err := webhook.SignPreset(webhook.SchemeRazorpay, secret, webhook.PresetOptions{}, ev.header, effectNow, body)
		must(t, err)
		ms = append(ms, r.deliver(t, "shop-razorpay", webhook.SchemeRazorpay, webhook.PresetOptions{}, h, body, []string{secret})...)
	}
	r.handleAll(t, ms...)
	if n := r.charger.calls.Load(); n != 1 {
		t.Fatalf("%d charges of payment pay_29QQoUBi66xm2f, want 1", n)
	}
}

// TestMollieAuthorizedThenPaidActsOnce: a pay-later payment is pinged at
// authorized, then at paid. The authorisation is acknowledged as
// awaiting capture, not retried and not charged; paid is charged once.
func TestMollieAuthorizedThenPaidActsOnce(t *testing.T) {
	t.Parallel()
	r := newEffectRig(t, effectMappings)
	ping := func() events.SQSMessage {
		return r.deliver(t, "shop-mollie", webhook.SchemeMollie, webhook.PresetOptions{}, webhook.HeaderMap{}, []byte("id=tr_paylater1"), nil)[0]
	}
	r.mollie.SetPayment(molliePaid("tr_paylater1", "authorized"))
	r.handleAll(t, ping())
	if n := r.charger.calls.Load(); n != 0 {
		t.Fatalf("charged %d times at authorized", n)
	}
	r.mollie.SetPayment(molliePaid("tr_paylater1", "paid"))
	r.handleAll(t, ping(), ping())
	if n := r.charger.calls.Load(); n != 1 {
		t.Fatalf("charged %d times for one payment, want 1", n)
	}
}

func stripeInvoiceEvent(id, typ string) string {
	return fmt.Sprintf(`{"id":%q,"object":"event","type":%q,"created":1796032860,"data":{"object":{"id":"in_1QxYz","object":"invoice",`+
		`"customer":"cus_inv_1","amount_due":4200,"currency":"usd","number":"INV-0042","status":"open"}}}`, id, typ)
}

// TestAStripeInvoiceActsOnce: a source subscribed to invoice.* gets
// finalized, updated and paid for one invoice. With the shipped invoice
// mapping it acts once.
func TestAStripeInvoiceActsOnce(t *testing.T) {
	t.Parallel()
	r := newEffectRig(t, effectMappings)
	var ms []events.SQSMessage
	for _, ev := range []struct{ id, typ string }{
		{"evt_inv_finalized", "invoice.finalized"},
		{"evt_inv_updated", "invoice.updated"},
		{"evt_inv_paid", "invoice.paid"},
	} {
		ms = append(ms, r.message("stripe", ev.id, stripeInvoiceEvent(ev.id, ev.typ)))
	}
	r.handleAll(t, ms...)
	if n := r.charger.calls.Load(); n != 1 {
		t.Fatalf("%d charges for one invoice, want 1", n)
	}
}

// completeAs records key as the build before effect keys did once it
// had charged payment: claimed and completed under its own key.
func (r *effectRig) completeAs(t *testing.T, key string, charge provider.ChargeRequest) {
	t.Helper()
	ctx := context.Background()
	claim, err := r.reg.Claim(ctx, key, paymentworker.Payment{Charge: charge}.Hash())
	must(t, err)
	must(t, r.reg.Complete(ctx, key, claim.Token, []byte(`{"status":"succeeded"}`)))
}

// TestKeysOfTheEarlierBuildStillCount: deliveries the build before effect
// keys acted on, under keys of its own, are redelivered after the deploy.
// Each is a replay under the new keys: a Mollie payment charged at
// authorized is not charged again at paid, an Adyen authorisation is not
// charged again, and a Stripe invoice is not charged again under its
// invoice's ID.
func TestKeysOfTheEarlierBuildStillCount(t *testing.T) {
	t.Parallel()
	r := newEffectRig(t, effectMappings)
	// Given the earlier build's completed keys
	r.completeAs(t, "shop-mollie:tr_before1:authorized", provider.ChargeRequest{Customer: "cus_mollie_1", Amount: 1250, Currency: "EUR"})
	r.completeAs(t, "shop-adyen:AUTHORISATION:PSPBEFORE0000001:true", provider.ChargeRequest{Customer: "order-7", Amount: 1130, Currency: "EUR"})
	r.completeAs(t, "stripe:evt_inv_before", provider.ChargeRequest{Customer: "cus_inv_1", Amount: 4200, Currency: "usd"})
	// When the same payments arrive under the new build
	r.mollie.SetPayment(molliePaid("tr_before1", "paid"))
	r.handleAll(t, r.deliver(t, "shop-mollie", webhook.SchemeMollie, webhook.PresetOptions{}, webhook.HeaderMap{}, []byte("id=tr_before1"), nil)...)
	signed, err := webhook.SignAdyen(effectAdyenKey, []byte(`{"live":"false","notificationItems":[`+
		adyenNotification("AUTHORISATION", "true", "PSPBEFORE0000001", "", "order-7", 1130)+`]}`))
	must(t, err)
	r.handleAll(t, r.deliver(t, "shop-adyen", webhook.SchemeAdyen, webhook.PresetOptions{}, webhook.HeaderMap{}, signed, []string{effectAdyenKey})...)
	r.handleAll(t, r.message("stripe", "evt_inv_before", stripeInvoiceEvent("evt_inv_before", "invoice.finalized")))
	// Then nothing is charged again
	if n := r.charger.calls.Load(); n != 0 {
		t.Fatalf("%d payments charged again after the deploy", n)
	}
	// And a payment the earlier build never saw is charged once
	r.handleAll(t, r.message("stripe", "evt_inv_new", strings.Replace(stripeInvoiceEvent("evt_inv_new", "invoice.finalized"), "in_1QxYz", "in_2AbCd", 1)))
	if n := r.charger.calls.Load(); n != 1 {
		t.Fatalf("%d charges of a new invoice, want 1", n)
	}
}

// TestAnEarlierBuildsClaimInProgressIsWaitedFor: a redelivery that meets
// the earlier build's claim still held is retried, not charged beside it.
func TestAnEarlierBuildsClaimInProgressIsWaitedFor(t *testing.T) {
	t.Parallel()
	r := newEffectRig(t, effectMappings)
	_, err := r.reg.Claim(context.Background(), "stripe:evt_inv_held", paymentworker.Payment{Charge: provider.ChargeRequest{Customer: "cus_inv_1", Amount: 4200, Currency: "usd"}}.Hash())
	must(t, err)
	m := r.message("stripe", "evt_inv_held", stripeInvoiceEvent("evt_inv_held", "invoice.finalized"))
	resp, err := r.worker.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{m}})
	must(t, err)
	if len(resp.BatchItemFailures) != 1 || r.charger.calls.Load() != 0 {
		t.Fatalf("%d failures, %d charges: want the message back and no charge", len(resp.BatchItemFailures), r.charger.calls.Load())
	}
}

// TestUnstampedEffectsAreKeptLong: Adyen signs no time, so nothing but
// the effect's key stops a replay of a captured item once the intake
// and the registry's retention have passed. That key is kept for the
// effect retention; a key of a provider with a signed time is kept for
// the registry's retention.
func TestUnstampedEffectsAreKeptLong(t *testing.T) {
	t.Parallel()
	r := newEffectRig(t, effectMappings)
	signed, err := webhook.SignAdyen(effectAdyenKey, []byte(`{"live":"false","notificationItems":[`+
		adyenNotification("AUTHORISATION", "true", "PSPKEPT000000001", "", "order-9", 1130)+`]}`))
	must(t, err)
	r.handleAll(t, r.deliver(t, "shop-adyen", webhook.SchemeAdyen, webhook.PresetOptions{}, webhook.HeaderMap{}, signed, []string{effectAdyenKey})...)
	body := checkoutEvent("evt_kept_1", "payment_captured", "act_kept_1", 700)
	h, err := webhook.SignPreset(webhook.SchemeCheckout, "k", webhook.PresetOptions{}, "", effectNow, body)
	must(t, err)
	r.handleAll(t, r.deliver(t, "shop-checkout", webhook.SchemeCheckout, webhook.PresetOptions{}, h, body, []string{"k"})...)
	for key, want := range map[string]time.Duration{"shop-adyen:PSPKEPT000000001": paymentworker.DefaultEffectRetention, "shop-checkout:act_kept_1": idempotency.DefaultRetention} {
		rec, found, err := r.reg.Status(context.Background(), key)
		must(t, err)
		if kept := time.Until(rec.ExpiresAt); !found || kept < want-time.Hour || kept > want+time.Hour {
			t.Errorf("%s: found %v, kept %s, want %s", key, found, kept.Round(time.Hour), want)
		}
	}
}
