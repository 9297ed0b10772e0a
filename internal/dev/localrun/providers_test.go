package localrun_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/testkit"
	"github.com/hookline/hookline/pkg/webhook"
	"github.com/hookline/hookline/pkg/webhook/webhooktest"
)

// providerSources are HOOKLINE_SOURCES as a user of `hookline run` sets
// them for a Mollie shop and a PayPal app beside the template's two.
// The PayPal source pins the certificate double's host.
func providerSources(paypalHost string) string {
	return `[{"name":"payments","scheme":"standard-webhooks","secret_env":"HOOKLINE_PAYMENTS_SECRETS","queue":"payments"},` +
		`{"name":"usage","scheme":"standard-webhooks","secret_env":"HOOKLINE_USAGE_SECRETS","queue":"usage"},` +
		`{"name":"shop-mollie","scheme":"mollie","queue":"payments"},` +
		`{"name":"shop-paypal","scheme":"paypal","webhook_id":"WH-LOCAL-1","cert_hosts":["` + paypalHost + `"],"queue":"payments"}]`
}

func startProviders(t *testing.T) *localrun.System {
	t.Helper()
	// The mappings make charges of a fetched Mollie payment (the
	// envelope's item is the object Mollie's API holds) and of a PayPal
	// capture.
	//
	// The certificate double's address must be in the sources before the
	// run starts, so it is picked free and then bound: a parallel test can
	// take it in between, and then the run is started on another.
	for attempt := 1; ; attempt++ {
		paypalCertsAddr := testkit.FreeAddr(t)
		var s drillSetup
		for _, o := range []drillOption{env(map[string]string{"HOOKLINE_SOURCES": providerSources(paypalCertsAddr)}),
			withPayments(t, paypalCertsAddr)} {
			o(&s)
		}
		sys, err := tryLaunch(t, s)
		if err == nil {
			return sys
		}
		if attempt == 5 || !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatal(err)
		}
	}
}

// send posts body once to a source, as its provider would, with the
// headers sign returns, and returns the answer.
func send(t *testing.T, sys *localrun.System, source string, sign providersim.Signer, body []byte) (int, string) {
	t.Helper()
	snd, err := providersim.NewSender(providersim.SenderConfig{URL: sys.URL + "/webhooks/" + source, Sign: sign, MaxAttempts: 1,
		Now: sys.Clock().Now})
	if err != nil {
		t.Fatal(err)
	}
	d := snd.Send(context.Background(), "", body)
	return d.StatusCode, d.Attempts[0].Body + d.Attempts[0].Err
}

// chargedOrDeadLettered waits for n charges, and fails with the reason
// of the first message the payment worker dead-lettered instead.
func chargedOrDeadLettered(t *testing.T, sys *localrun.System, n int) {
	t.Helper()
	var reason string
	testkit.Eventually(t, 30*time.Second, "charged or dead-lettered", func() bool {
		out, err := sys.AWS.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(sys.AWS.QueueURL("PaymentsDLQ")), MessageAttributeNames: []string{"All"}, VisibilityTimeout: 60,
		})
		if err == nil && len(out.Messages) > 0 {
			reason = fmt.Sprint(aws.ToString(out.Messages[0].MessageAttributes["failure_reason"].StringValue))
			return true
		}
		return sys.Sim.Charges.TotalCharges() >= n
	})
	if reason != "" {
		t.Fatalf("dead-lettered: %s", reason)
	}
	if got := sys.Sim.Charges.TotalCharges(); got != n {
		t.Fatalf("%d charges, want %d", got, n)
	}
}

// TestMolliePingIsFetchedLocally: under `hookline run`, a Mollie ping is
// fetched from the local Mollie double and charged once, by the status
// the double holds, and a repeated ping charges nothing more.
func TestMolliePingIsFetchedLocally(t *testing.T) {
	t.Parallel()
	sys := startProviders(t)
	// Given a paid payment at Mollie
	sys.Mollie.SetPayment(providersim.MolliePayment{ID: "tr_local1", Status: "paid",
		Amount:   providersim.MollieAmount{Value: "12.50", Currency: "EUR"},
		Metadata: map[string]any{"customer": "cus_mollie_local", "amount_minor": 1250}})
	// When Mollie pings its ID, twice
	form := func(string, time.Time, []byte) (http.Header, error) {
		return http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, nil
	}
	for i := range 2 {
		if code, got := send(t, sys, "shop-mollie", form, []byte("id=tr_local1")); code != http.StatusOK {
			t.Fatalf("ping %d: %d %s", i, code, got)
		}
	}
	// Then the worker fetched it and charged once
	chargedOrDeadLettered(t, sys, 1)
	time.Sleep(500 * time.Millisecond)
	if got := sys.Sim.Charges.TotalCharges(); got != 1 || sys.Mollie.Fetches() == 0 {
		t.Fatalf("%d charges after %d fetches, want 1 after some", got, sys.Mollie.Fetches())
	}
}

// TestPayPalVerifiesLocally: under `hookline run`, a PayPal source whose
// cert_hosts pin the certificate double verifies a webhook signed with
// the double's key, and refuses a tampered one; the worker fetches the
// capture from the PayPal API double and charges it.
func TestPayPalVerifiesLocally(t *testing.T) {
	t.Parallel()
	sys := startProviders(t)
	sys.PayPalAPI.SetCapture(providersim.PayPalCapture{ID: "5O190127TN364715T", Status: "COMPLETED", CustomID: "cus_pp_1",
		Amount: providersim.PayPalAmount{CurrencyCode: "USD", Value: "9.90"}})
	body := webhooktest.PayPalCaptureEvent("WH-LOCAL-EVT-1", "5O190127TN364715T", "9.90", "USD", "cus_pp_1")
	// sign signs body, whatever is sent.
	sign := func(_ string, ts time.Time, _ []byte) (http.Header, error) {
		return webhook.SignPayPal(sys.PayPal.Key, sys.PayPal.CertURL(), "WH-LOCAL-1", "tx-1", ts, body)
	}
	if code, got := send(t, sys, "shop-paypal", sign, append(bytes.Clone(body), ' ')); code != http.StatusUnauthorized {
		t.Fatalf("tampered: %d %s, want 401", code, got)
	}
	if code, got := send(t, sys, "shop-paypal", sign, body); code != http.StatusOK {
		t.Fatalf("signed: %d %s, want 200", code, got)
	}
	chargedOrDeadLettered(t, sys, 1)
	if sys.PayPalAPI.Reads() == 0 {
		t.Fatal("charged without fetching the capture")
	}
}
