package webhook_test

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	paddle "github.com/PaddleHQ/paddle-go-sdk/v4"
	"github.com/google/go-github/v74/github"
	razorpay "github.com/razorpay/razorpay-go/utils"
	svix "github.com/svix/svix-webhooks/go"

	"github.com/hookline/hookline/pkg/webhook"
)

// The providers' own Go libraries check what the presets sign, and the
// presets check what the libraries (or the providers' published
// examples) sign: both read the same bytes.

func presetVerifier(t *testing.T, scheme webhook.Scheme, opts webhook.PresetOptions, now time.Time) *webhook.Verifier {
	t.Helper()
	v, err := webhook.NewVerifier(webhook.VerifierConfig{Scheme: scheme, Options: opts, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestGitHubAgreesWithGoGitHub(t *testing.T) {
	secret, body := "gh-secret", []byte(`{"action":"opened","number":1}`)
	// Given a delivery signed by the preset's signer, when go-github
	// validates it, then it passes
	h, err := webhook.SignPreset(webhook.SchemeGitHub, secret, webhook.PresetOptions{}, "72d3162e-cc78-11e3-81ab-4c9367dc0958", time.Now(), body)
	if err != nil {
		t.Fatal(err)
	}
	if err := github.ValidateSignature(h.Get(webhook.HeaderGitHubSignature), body, []byte(secret)); err != nil {
		t.Fatalf("go-github refuses the preset's signature: %v", err)
	}
	// and a tampered body fails it
	if github.ValidateSignature(h.Get(webhook.HeaderGitHubSignature), append(body, ' '), []byte(secret)) == nil {
		t.Fatal("go-github accepts a tampered body")
	}
}

// TestGitHubPublishedExample: the example of
// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
// (secret "It's a Secret to Everybody", payload "Hello, World!").
func TestGitHubPublishedExample(t *testing.T) {
	v := presetVerifier(t, webhook.SchemeGitHub, webhook.PresetOptions{}, time.Now())
	h := webhook.HeaderMap{
		webhook.HeaderGitHubSignature: "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
		webhook.HeaderGitHubDelivery:  "72d3162e-cc78-11e3-81ab-4c9367dc0958",
	}
	// The signature verifies; the payload is not JSON, so it is then refused as a body.
	_, err := v.VerifyDelivery(h, []byte("Hello, World!"), []string{"It's a Secret to Everybody"})
	if !errors.Is(err, webhook.ErrMalformedBody) {
		t.Fatalf("err = %v, want the signature accepted and the body refused", err)
	}
	_, err = v.VerifyDelivery(h, []byte("Hello, World?"), []string{"It's a Secret to Everybody"})
	if !errors.Is(err, webhook.ErrBadSignature) {
		t.Fatalf("tampered: err = %v", err)
	}
}

func TestRazorpayAgreesWithRazorpayGo(t *testing.T) {
	secret, body := "rzp-webhook-secret", []byte(`{"entity":"event","event":"payment.captured","created_at":1800000000,"payload":{}}`)
	h, err := webhook.SignPreset(webhook.SchemeRazorpay, secret, webhook.PresetOptions{}, "evt_rzp_1", time.Now(), body)
	if err != nil {
		t.Fatal(err)
	}
	if !razorpay.VerifyWebhookSignature(string(body), h.Get(webhook.HeaderRazorpaySignature), secret) {
		t.Fatal("razorpay-go refuses the preset's signature")
	}
	if razorpay.VerifyWebhookSignature(string(body)+" ", h.Get(webhook.HeaderRazorpaySignature), secret) {
		t.Fatal("razorpay-go accepts a tampered body")
	}
}

func TestPaddleAgreesWithPaddleSDK(t *testing.T) {
	secret := "pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_6h3qd3uFSi9YCD3OLYAShQI90XTI5vEI"
	body := []byte(`{"event_id":"evt_01h7","event_type":"transaction.completed","occurred_at":"2026-11-30T10:00:00Z","data":{}}`)
	now := time.Now()
	h, err := webhook.SignPreset(webhook.SchemePaddle, secret, webhook.PresetOptions{}, "", now, body)
	if err != nil {
		t.Fatal(err)
	}
	check := func(body []byte) bool {
		req, _ := http.NewRequest(http.MethodPost, "https://example.com/webhooks/paddle", bytes.NewReader(body))
		req.Header.Set("Paddle-Signature", h.Get(webhook.HeaderPaddleSignature))
		ok, err := paddle.NewWebhookVerifier(secret, paddle.VerifierWithTimestampTolerance(5*time.Minute)).Verify(req)
		return ok && err == nil
	}
	if !check(body) {
		t.Fatal("paddle-go-sdk refuses the preset's signature")
	}
	if check(append(body, ' ')) {
		t.Fatal("paddle-go-sdk accepts a tampered body")
	}
}

func TestStandardAgreesWithSvix(t *testing.T) {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"type":"payment.requested","data":{"amount":100}}`)
	now := time.Now().Truncate(time.Second)
	wh, err := svix.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	// Given a signature made by svix, when the standard-webhooks scheme
	// verifies it, then it passes
	sig, err := wh.Sign("msg_svix_1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	v, err := webhook.NewVerifier(webhook.VerifierConfig{Scheme: webhook.SchemeStandard, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	h := webhook.HeaderMap{webhook.HeaderWebhookID: "msg_svix_1", webhook.HeaderWebhookTimestamp: svixTimestamp(now), webhook.HeaderWebhookSignature: sig}
	if _, err := v.VerifyDelivery(h, body, []string{secret}); err != nil {
		t.Fatalf("svix's signature refused: %v", err)
	}
	// and svix verifies ours
	ours, err := webhook.SignHeaders(webhook.SchemeStandard, []string{secret}, "msg_svix_2", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, ours); err != nil {
		t.Fatalf("svix refuses our signature: %v", err)
	}
}

func svixTimestamp(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// TestAdyenPublishedExample: the worked example of
// https://docs.adyen.com/development-resources/webhooks/secure-webhooks/verify-hmac-signatures
// (HMAC key 44782DEF..., pspReference 7914073381342284), which Adyen's
// own libraries also test against. testdata/presets/adyen_published.json
// is that notification.
func TestAdyenPublishedExample(t *testing.T) {
	body, err := os.ReadFile("testdata/presets/adyen_published.json")
	if err != nil {
		t.Fatal(err)
	}
	v := presetVerifier(t, webhook.SchemeAdyen, webhook.PresetOptions{}, time.Now())
	key := "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
	d, err := v.VerifyDelivery(webhook.HeaderMap{}, body, []string{key})
	if err != nil {
		t.Fatalf("Adyen's published example refused: %v", err)
	}
	if d.Items[0].EventID != "AUTHORISATION:7914073381342284:true" || d.Ack.Body != "[accepted]" {
		t.Fatalf("item %q, ack %q", d.Items[0].EventID, d.Ack.Body)
	}
	// Re-signing the published item gives the published signature.
	resigned, err := webhook.SignAdyen(key, body)
	if err != nil || !bytes.Contains(resigned, []byte("coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0=")) {
		t.Fatalf("SignAdyen differs from the published signature (err %v)", err)
	}
	// One changed amount breaks it.
	_, err = v.VerifyDelivery(webhook.HeaderMap{}, bytes.Replace(body, []byte("1130"), []byte("1131"), 1), []string{key})
	if !errors.Is(err, webhook.ErrBadSignature) {
		t.Fatalf("tampered: err = %v", err)
	}
}

// TestSquarePublishedExample: the example of
// https://developer.squareup.com/docs/webhooks/step3validate (signature
// key "asdf1234", notification URL https://example.com/webhook, body
// {"hello":"world"}).
func TestSquarePublishedExample(t *testing.T) {
	opts := webhook.PresetOptions{SignedURL: "https://example.com/webhook"}
	v := presetVerifier(t, webhook.SchemeSquare, opts, time.Now())
	h := webhook.HeaderMap{webhook.HeaderSquareSignature: "2kRE5qRU2tR+tBGlDwMEw2avJ7QM4ikPYD/PJ3bd9Og="}
	// The signature verifies; the example has no event_id, so it is then refused for that.
	_, err := v.VerifyDelivery(h, []byte(`{"hello":"world"}`), []string{"asdf1234"})
	if !errors.Is(err, webhook.ErrMissingEventID) {
		t.Fatalf("err = %v, want the signature accepted", err)
	}
	// Behind a proxy that changed the URL, the same request fails.
	other := presetVerifier(t, webhook.SchemeSquare, webhook.PresetOptions{SignedURL: "https://example.com/webhook/"}, time.Now())
	if _, err := other.VerifyDelivery(h, []byte(`{"hello":"world"}`), []string{"asdf1234"}); !errors.Is(err, webhook.ErrBadSignature) {
		t.Fatalf("another signed URL: err = %v", err)
	}
}
