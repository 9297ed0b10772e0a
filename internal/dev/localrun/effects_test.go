package localrun_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/testkit"
	"github.com/hookline/hookline/pkg/webhook"
	"github.com/hookline/hookline/pkg/webhook/webhooktest"
)

// Secrets of the sources of TestEachPresetActsOncePerPayment.
const (
	effectAdyenKey  = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
	effectSquareKey = "square-local-signature-key"
	effectRzpKey    = "razorpay-local-webhook-secret"
	effectStripeKey = "whsec_local_stripe_effects"
	effectSquareURL = "https://hooks.example.com/webhooks/shop-square"
)

// startEffects runs the local system with a source of each preset the
// scenarios need, and testdata/payments/provider-mappings.json as its
// PAYMENT_MAPPINGS.
func startEffects(t *testing.T) *localrun.System {
	t.Helper()
	certs := testkit.FreeAddr(t)
	vars := map[string]string{
		"HOOKLINE_SOURCES": `[{"name":"payments","scheme":"standard-webhooks","secret_env":"HOOKLINE_PAYMENTS_SECRETS","queue":"payments"},` +
			`{"name":"usage","scheme":"standard-webhooks","secret_env":"HOOKLINE_USAGE_SECRETS","queue":"usage"},` +
			`{"name":"shop-adyen","scheme":"adyen","secret_env":"HOOKLINE_SHOP_ADYEN_SECRETS","queue":"payments"},` +
			`{"name":"shop-square","scheme":"square","secret_env":"HOOKLINE_SHOP_SQUARE_SECRETS","signed_url":"` + effectSquareURL + `","queue":"payments"},` +
			`{"name":"shop-mollie","scheme":"mollie","queue":"payments"},` +
			`{"name":"shop-razorpay","scheme":"razorpay","secret_env":"HOOKLINE_SHOP_RAZORPAY_SECRETS","queue":"payments"},` +
			`{"name":"shop-paypal","scheme":"paypal","webhook_id":"WH-LOCAL-1","cert_hosts":["` + certs + `"],"queue":"payments"},` +
			`{"name":"shop-stripe","scheme":"stripe","secret_env":"HOOKLINE_SHOP_STRIPE_SECRETS","queue":"payments"}]`,
		"HOOKLINE_SHOP_ADYEN_SECRETS":    effectAdyenKey,
		"HOOKLINE_SHOP_SQUARE_SECRETS":   effectSquareKey,
		"HOOKLINE_SHOP_RAZORPAY_SECRETS": effectRzpKey,
		"HOOKLINE_SHOP_STRIPE_SECRETS":   effectStripeKey,
	}
	sys, _ := startDrill(t, env(vars), withPayments(t, certs))
	return sys
}

// progress is what the payment worker's event source has done:
// messages acknowledged (deleted) and messages handed back for a retry.
func progress(sys *localrun.System) (deleted, failed int64) {
	for _, m := range sys.Mappings {
		deleted += m.Stats().Deleted.Load()
		failed += m.Stats().Failed.Load()
	}
	return deleted, failed
}

// visible is how many messages wait on the payments queue.
func visible(sys *localrun.System) int {
	out, err := sys.AWS.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(sys.AWS.QueueURL("PaymentsQueue")), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		return -1
	}
	n, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	return n
}

// sendSigned posts body to a source under fixed headers, and returns the
// answer.
func sendSigned(t *testing.T, sys *localrun.System, source string, h http.Header, body []byte) (int, string) {
	t.Helper()
	return send(t, sys, source, func(string, time.Time, []byte) (http.Header, error) { return h, nil }, body)
}

func adyenItem(code, success, psp, original, reference string, value int) string {
	return fmt.Sprintf(`{"NotificationRequestItem":{"eventCode":%q,"success":%q,"pspReference":%q,"originalReference":%q,`+
		`"merchantAccountCode":"ShopMerchant","merchantReference":%q,"amount":{"value":%d,"currency":"EUR"},`+
		`"eventDate":"2026-11-30T10:00:00+01:00","additionalData":{}}}`, code, success, psp, original, reference, value)
}

// TestEachPresetActsOncePerPayment drives `hookline run` from outside,
// over HTTP, with a mapping for each source, and checks what the
// provider's simulator was charged: one effect per payment, only on the
// events that are payments, decided from signed fields only.
func TestEachPresetActsOncePerPayment(t *testing.T) {
	t.Parallel()
	sys := startEffects(t)
	charges := func() int { return sys.Sim.Charges.TotalCharges() }
	// expect waits until the scenario's messages (at least sent of them)
	// were acknowledged and the simulator holds want more charges than
	// before. A charge is made before its message is acknowledged, so an
	// extra one is there by then. Two events of one payment handled at
	// once may send one back while the other holds the key; noRetry says
	// the scenario must have none.
	var total int
	expect := func(t *testing.T, before, want int, sent int64, base [2]int64, noRetry bool) {
		t.Helper()
		testkit.Eventually(t, 30*time.Second, fmt.Sprintf("%d messages acknowledged, %d effects", sent, want), func() bool {
			deleted, _ := progress(sys)
			return deleted-base[0] >= sent && charges()-before == want && visible(sys) == 0
		})
		if _, failed := progress(sys); noRetry && failed != base[1] {
			t.Fatalf("%d messages came back for a retry", failed-base[1])
		}
		if got := charges() - before; got != want {
			t.Fatalf("%d effects, want %d", got, want)
		}
		total += want
	}
	mark := func() [2]int64 { d, f := progress(sys); return [2]int64{d, f} }

	t.Run("an Adyen batch of a payment, a refused one and a refund acts once", func(t *testing.T) {
		before, base := charges(), mark()
		body, err := webhook.SignAdyen(effectAdyenKey, []byte(`{"live":"false","notificationItems":[`+
			adyenItem("AUTHORISATION", "true", "PSPLOCAL00000001", "", "order-1", 1130)+","+
			adyenItem("AUTHORISATION", "false", "PSPLOCAL00000002", "", "order-2", 2500)+","+
			adyenItem("REFUND", "true", "PSPLOCAL00000003", "PSPLOCAL00000001", "order-1", 1130)+`]}`))
		if err != nil {
			t.Fatal(err)
		}
		if code, got := sendSigned(t, sys, "shop-adyen", http.Header{"Content-Type": {"application/json"}}, body); code != http.StatusOK || got != webhook.AdyenAccepted {
			t.Fatalf("%d %s", code, got)
		}
		expect(t, before, 1, 3, base, false)
	})

	t.Run("two Square payment.updated COMPLETED of one payment act once", func(t *testing.T) {
		// Square sends the second update after the first was answered; one
		// sent while the first still holds the key would come back only
		// after the holder's window, and that is not what is tested here.
		for i, id := range []string{"sq-local-1", "sq-local-2"} {
			before, base := charges(), mark()
			body := fmt.Appendf(nil, `{"merchant_id":"MLX","type":"payment.updated","event_id":%q,"created_at":%q,`+
				`"data":{"type":"payment","id":"sqpay_local_1","object":{"payment":{"id":"sqpay_local_1","status":"COMPLETED","customer_id":"CUST_LOCAL",`+
				`"total_money":{"amount":1999,"currency":"USD"}}}}}`, id, time.Now().UTC().Format(time.RFC3339))
			h, err := webhook.SignPreset(webhook.SchemeSquare, effectSquareKey, webhook.PresetOptions{SignedURL: effectSquareURL}, "", time.Now(), body)
			if err != nil {
				t.Fatal(err)
			}
			if code, got := sendSigned(t, sys, "shop-square", h, body); code != http.StatusOK {
				t.Fatalf("%d %s", code, got)
			}
			expect(t, before, 1-i, 1, base, false)
		}
	})

	t.Run("Mollie authorized, then paid, acts once, with no retry between", func(t *testing.T) {
		before, base := charges(), mark()
		pay := providersim.MolliePayment{ID: "tr_locallater1", Status: "authorized", Amount: providersim.MollieAmount{Value: "12.50", Currency: "EUR"},
			Metadata: map[string]any{"customer": "cus_mollie_local"}}
		form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
		sys.Mollie.SetPayment(pay)
		if code, got := sendSigned(t, sys, "shop-mollie", form, []byte("id=tr_locallater1")); code != http.StatusOK {
			t.Fatalf("%d %s", code, got)
		}
		expect(t, before, 0, 1, base, true) // acknowledged at authorized, not back for a retry
		base = mark()
		// The intake keys a Mollie ping by its ID and the second it
		// arrived: the next ping comes in a later second, as Mollie's
		// ping at paid does.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
		pay.Status = "paid"
		sys.Mollie.SetPayment(pay)
		if code, got := sendSigned(t, sys, "shop-mollie", form, []byte("id=tr_locallater1")); code != http.StatusOK {
			t.Fatalf("%d %s", code, got)
		}
		expect(t, before, 1, 1, base, false)
	})

	t.Run("a replay under a new identity header is a duplicate", func(t *testing.T) {
		before, base := charges(), mark()
		body := fmt.Appendf(nil, `{"entity":"event","account_id":"acc_local","event":"payment.captured","contains":["payment"],`+
			`"payload":{"payment":{"entity":{"id":"pay_29QQoUBi66xm2f","amount":50000,"currency":"INR","status":"captured","customer_id":"cust_rzp_local"}}},"created_at":%d}`,
			time.Now().Unix())
		for i, id := range []string{"rzp-local-genuine", "rzp-local-replayed"} {
			h, err := webhook.SignPreset(webhook.SchemeRazorpay, effectRzpKey, webhook.PresetOptions{}, id, time.Now(), body)
			if err != nil {
				t.Fatal(err)
			}
			code, got := sendSigned(t, sys, "shop-razorpay", h, body)
			if want := []string{"accepted", "duplicate"}[i]; code != http.StatusOK || !strings.Contains(got, want) {
				t.Fatalf("under %s: %d %s, want %s", id, code, got, want)
			}
		}
		expect(t, before, 1, 1, base, false)
	})

	t.Run("a PayPal body with the genuine one's CRC32 has no effect", func(t *testing.T) {
		before, base := charges(), mark()
		sys.PayPalAPI.SetCapture(providersim.PayPalCapture{ID: "5O190127TNLOCAL1", Status: "COMPLETED", CustomID: "cus_pp_local",
			Amount: providersim.PayPalAmount{CurrencyCode: "USD", Value: "9.90"}})
		genuine := webhooktest.PayPalCaptureEvent("WH-LOCAL-GENUINE-1", "5O190127TNLOCAL1", "9.90", "USD", "cus_pp_local")
		h, err := webhook.SignPayPal(sys.PayPal.Key, sys.PayPal.CertURL(), "WH-LOCAL-1", "tx-local-1", time.Now(), genuine)
		if err != nil {
			t.Fatal(err)
		}
		if code, got := sendSigned(t, sys, "shop-paypal", h, genuine); code != http.StatusOK {
			t.Fatalf("genuine: %d %s", code, got)
		}
		expect(t, before, 1, 1, base, false)
		before, base = charges(), mark()
		for i, capture := range []string{"5O190127TNLOCAL1", "5O190127TNFORGED"} {
			forged, err := webhooktest.ForgePayPalCapture(genuine, fmt.Sprintf("WH-FORGED-000000000%d", i), capture, "9999.00", "USD", "cus_pp_local")
			if err != nil {
				t.Fatal(err)
			}
			if code, got := sendSigned(t, sys, "shop-paypal", h, forged); code != http.StatusOK {
				t.Fatalf("forged %s: %d %s (the CRC32 holds, so the door cannot tell)", capture, code, got)
			}
		}
		expect(t, before, 0, 2, base, false)
	})

	t.Run("a Stripe invoice finalized, then paid, acts once", func(t *testing.T) {
		before, base := charges(), mark()
		for _, ev := range []struct{ id, typ string }{{"evt_local_fin", "invoice.finalized"}, {"evt_local_paid", "invoice.paid"}} {
			body := fmt.Appendf(nil, `{"id":%q,"object":"event","type":%q,"created":%d,"data":{"object":{"id":"in_local_1","object":"invoice",`+
				`"customer":"cus_local_inv","amount_due":4200,"currency":"usd","number":"INV-LOCAL-1"}}}`, ev.id, ev.typ, time.Now().Unix())
			h := http.Header{"Stripe-Signature": {webhook.SignStripe(effectStripeKey, time.Now(), body)}, "Content-Type": {"application/json"}}
			if code, got := sendSigned(t, sys, "shop-stripe", h, body); code != http.StatusOK {
				t.Fatalf("%s: %d %s", ev.typ, code, got)
			}
		}
		expect(t, before, 1, 2, base, false)
	})

	// And nothing came later: every scenario's effects, and no more.
	if got := charges(); got != total {
		t.Fatalf("%d effects in all, want %d", got, total)
	}
}
