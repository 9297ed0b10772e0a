//go:build !oncall

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/testkit"
	"github.com/hookline/hookline/pkg/webhook"
	"github.com/hookline/hookline/pkg/webhook/webhooktest"
)

// presetSecrets are the secrets of the test's sources, one per scheme
// that takes one (public test values).
var presetSecrets = map[webhook.Scheme]string{
	webhook.SchemeAdyen:     "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056",
	webhook.SchemeBraintree: "pubkey:send-test-private-key",
}

// presetSource is the name of the test's source of scheme.
func presetSource(scheme webhook.Scheme) string { return "shop-" + string(scheme) }

// presetRun starts `hookline run` as `make run` does, in a fresh
// directory, with one source of every preset in HOOKLINE_SOURCES and its
// secret in HOOKLINE_<SOURCE>_SECRETS, and returns the run's output.
func presetRun(t *testing.T) *syncBuffer {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// The ports are chosen here: Square signs the HTTP API's URL, and
	// PayPal's cert_hosts pin the certificate double.
	apiAddr, paypalAddr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	sources := []map[string]any{
		{"name": "payments", "scheme": "standard-webhooks", "secret_env": "HOOKLINE_PAYMENTS_SECRETS", "queue": "payments"},
		{"name": "usage", "scheme": "standard-webhooks", "secret_env": "HOOKLINE_USAGE_SECRETS", "queue": "usage"},
	}
	for _, s := range webhook.Schemes() {
		src := map[string]any{"name": presetSource(s), "scheme": string(s), "queue": "payments"}
		switch s {
		case webhook.SchemeStandard:
			continue // the payments source
		case webhook.SchemeSquare:
			// Square signs the URL it posts to, as the sender does by default.
			src["signed_url"] = "http://" + apiAddr + "/webhooks/" + presetSource(s)
		case webhook.SchemePayPal:
			src["webhook_id"], src["cert_hosts"] = "WH-SEND-1", []string{paypalAddr}
		}
		if s.NeedsSecret() {
			secret := presetSecrets[s]
			if secret == "" {
				secret = "send-test-secret-" + string(s)
			}
			src["secret_env"] = localrun.SecretVar(presetSource(s))
			t.Setenv(localrun.SecretVar(presetSource(s)), secret)
		}
		sources = append(sources, src)
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(repo, "testdata"), filepath.Join(dir, "testdata")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, v := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB", "HOOKLINE_API_URL", "HOOKLINE_PROVIDER_URL",
		"HOOKLINE_MOLLIE_URL", "HOOKLINE_PAYPAL_CERT_URL", "HOOKLINE_PAYPAL_KEY_FILE", "HOOKLINE_PAYPAL_API_URL", "HOOKLINE_GOCARDLESS_URL", ops.EnvFileVar} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	t.Setenv("HOOKLINE_TEMPLATE", filepath.Join(repo, "infra", "template.yaml"))
	text, _ := json.Marshal(sources)
	t.Setenv("HOOKLINE_SOURCES", string(text))
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"run", "--addr", apiAddr, "--reconcile-every", "0",
			"--paypal-certs-addr", paypalAddr, "--payment-mappings", "testdata/payments/provider-mappings.json"}, out)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("hookline run did not stop")
		}
	})
	for k, v := range waitEndpoints(t, done) {
		t.Setenv(k, v)
	}
	return out
}

// sendWebhook runs `hookline dev send-webhook` with args and returns its
// exit code and output.
func sendWebhook(args ...string) (int, string) {
	var out bytes.Buffer
	code := dispatch(context.Background(), append([]string{"dev", "send-webhook", "--attempts", "1"}, args...), &out)
	return code, out.String()
}

// TestSendWebhookSignsEveryPreset: against `hookline run` with a source
// of every preset, `hookline dev send-webhook --scheme <preset>` signs as
// the provider does: the delivery is accepted, and a tampered one is
// refused (GoCardless with its 498). A Mollie payment is written to the
// Mollie double and pinged, a PayPal capture and a GoCardless payment
// are written to their doubles before the webhook is sent, and the
// worker fetches and charges each.
func TestSendWebhookSignsEveryPreset(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole local system")
	}
	out := presetRun(t)
	dir := t.TempDir()
	// The capture and the payment first: the PayPal kit's event names the
	// same capture, and is then the same effect.
	t.Run("paypal capture", func(t *testing.T) {
		code, got := sendWebhook("--source", presetSource(webhook.SchemePayPal), "--scheme", "paypal", "--webhook-id", "WH-SEND-1",
			"--file", "testdata/payments/paypal_capture.json")
		if code != exitOK || !strings.Contains(got, "event WH-58D329510W468432D-8HN650336L201105X delivered") {
			t.Fatalf("exit %d:\n%s", code, got)
		}
		waitFor(t, 30*time.Second, out.String, []string{"...msg=charge from=provider ... event=WH-58D329510W468432D-8HN650336L201105X:COMPLETED ... amount=990 currency=USD ..."}, "the make run terminal")
	})
	t.Run("gocardless payment", func(t *testing.T) {
		code, got := sendWebhook("--source", presetSource(webhook.SchemeGoCardless), "--scheme", "gocardless",
			"--file", "testdata/payments/gocardless_confirmed.json", "--object", "testdata/payments/gocardless_payment.json")
		if code != exitOK || !strings.Contains(got, "attempt 1: 200 ") {
			t.Fatalf("exit %d:\n%s", code, got)
		}
		waitFor(t, 30*time.Second, out.String, []string{"...msg=charge from=provider ... event=EV0000AB12CD34:confirmed ... amount=1500 currency=GBP ..."}, "the make run terminal")
	})
	for _, kit := range webhooktest.Kits(t) {
		s := kit.Scheme
		if s == webhook.SchemeStandard || s == webhook.SchemeMollie {
			continue // the README's walk-through; Mollie below
		}
		t.Run(string(s), func(t *testing.T) {
			file := filepath.Join(dir, string(s))
			id := "send-" + string(s)
			if err := os.WriteFile(file, kit.Event(id), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"--source", presetSource(s), "--scheme", string(s), "--file", file, "--id", id}
			if s == webhook.SchemePayPal {
				args = append(args, "--webhook-id", "WH-SEND-1")
			}
			// When it is sent tampered, then it is refused
			refused := "attempt 1: 401 "
			if s == webhook.SchemeGoCardless {
				refused = "attempt 1: 498 "
			}
			if code, got := sendWebhook(append(args, "--tamper")...); code == exitOK || !strings.Contains(got, refused) {
				t.Fatalf("tampered: exit %d:\n%s\nwant %q", code, got, refused)
			}
			// and when it is sent as signed, then it is accepted
			if code, got := sendWebhook(args...); code != exitOK || !strings.Contains(got, "attempt 1: 200 ") {
				t.Fatalf("signed: exit %d:\n%s", code, got)
			}
		})
	}
	t.Run("mollie", func(t *testing.T) {
		code, got := sendWebhook("--source", presetSource(webhook.SchemeMollie), "--scheme", "mollie", "--file", "testdata/payments/mollie_paid.json")
		if code != exitOK || !strings.Contains(got, "event tr_WDqYK6vllg delivered") {
			t.Fatalf("exit %d:\n%s", code, got)
		}
		waitFor(t, 30*time.Second, out.String, []string{"...msg=charge from=provider ... event=tr_WDqYK6vllg:paid ..."}, "the make run terminal")
		if code, got := sendWebhook("--source", presetSource(webhook.SchemeMollie), "--scheme", "mollie", "--file", "testdata/payments/mollie_paid.json", "--tamper"); code != exitUsage {
			t.Fatalf("--tamper with mollie: exit %d:\n%s", code, got)
		}
	})
}
