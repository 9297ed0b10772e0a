package webhook_test

import (
	"bytes"
	"net/http"
	"slices"
	"testing"
	"time"

	paddle "github.com/PaddleHQ/paddle-go-sdk/v4"
	"github.com/google/go-github/v74/github"
	razorpay "github.com/razorpay/razorpay-go/utils"
	svix "github.com/svix/svix-webhooks/go"

	"github.com/hookline/hookline/pkg/webhook"
	"github.com/hookline/hookline/pkg/webhook/webhooktest"
)

// benchSize is the body size of the preset benchmarks.
const benchSize = 1024

// padded returns body grown to benchSize bytes by one more member (or
// element) of text, as a larger event would be. A form (Mollie) is left
// as it is.
func padded(k webhooktest.Kit, body []byte) []byte {
	const jsonPad, xmlPad = `,"pad":""`, `<pad></pad>`
	switch {
	case len(body) >= benchSize:
		return body
	case bytes.HasSuffix(body, []byte("}")):
		fill := bytes.Repeat([]byte("x"), benchSize-len(body)-len(jsonPad))
		return slices.Concat(body[:len(body)-1], []byte(`,"pad":"`), fill, []byte(`"}`))
	case bytes.HasSuffix(body, []byte("</notification>")):
		fill := bytes.Repeat([]byte("x"), benchSize-len(body)-len(xmlPad))
		end := len(body) - len("</notification>")
		return slices.Concat(body[:end], []byte("<pad>"), fill, []byte("</pad></notification>"))
	}
	return body
}

// benchDelivery is a signed delivery of about 1 KiB for k.
func benchDelivery(tb testing.TB, k webhooktest.Kit, now time.Time) (webhook.HeaderMap, []byte) {
	tb.Helper()
	secret := ""
	if len(k.Secrets) > 0 {
		secret = k.Secrets[0]
	}
	body := padded(k, k.Event("evtBench1"))
	h, signed, err := k.Sign(secret, "evtBench1", now, body)
	if err != nil {
		tb.Fatal(err)
	}
	return h, signed
}

// hmacPresets are the presets held to the allocation budget.
var hmacPresets = map[webhook.Scheme]bool{
	webhook.SchemeGitHub: true, webhook.SchemeShopify: true, webhook.SchemeRazorpay: true, webhook.SchemeCheckout: true,
	webhook.SchemeSquare: true, webhook.SchemePaddle: true, webhook.SchemeGoCardless: true, webhook.SchemeAdyen: true,
}

// maxPresetAllocs is the allocation budget of an HMAC preset's verify +
// parse of a 1 KiB body (per item, for a batch of one).
const maxPresetAllocs = 4

// TestPresetAllocations: verify + parse + the queue message of a 1 KiB
// delivery stays within the budget for every HMAC preset, with two
// active secrets.
func TestPresetAllocations(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	for _, k := range webhooktest.Kits(t) {
		if !hmacPresets[k.Scheme] {
			continue
		}
		t.Run(string(k.Scheme), func(t *testing.T) {
			v := verifierFor(t, k, now)
			h, body := benchDelivery(t, k, now)
			allocs := testing.AllocsPerRun(200, func() {
				if _, err := v.VerifyDelivery(h, body, k.Secrets); err != nil {
					t.Fatal(err)
				}
			})
			t.Logf("%s: %.0f allocations on %d bytes", k.Scheme, allocs, len(body))
			if allocs > maxPresetAllocs {
				t.Fatalf("%s: %.0f allocations, budget %d", k.Scheme, allocs, maxPresetAllocs)
			}
		})
	}
}

// BenchmarkPreset is each scheme's verify + parse of about 1 KiB, with
// two active secrets, the newest signing.
func BenchmarkPreset(b *testing.B) {
	now := time.Now().UTC().Truncate(time.Second)
	for _, k := range webhooktest.Kits(b) {
		b.Run(string(k.Scheme), func(b *testing.B) {
			v, err := webhook.NewVerifier(webhook.VerifierConfig{Scheme: k.Scheme, Options: k.Options, Certs: k.Certs, Now: func() time.Time { return now }})
			if err != nil {
				b.Fatal(err)
			}
			h, body := benchDelivery(b, k, now)
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := v.VerifyDelivery(h, body, k.Secrets); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLibrary is each provider library's own verification of the
// same deliveries, the baseline of BenchmarkPreset in the same run.
func BenchmarkLibrary(b *testing.B) {
	now := time.Now().UTC().Truncate(time.Second)
	kits := map[webhook.Scheme]webhooktest.Kit{}
	for _, k := range webhooktest.Kits(b) {
		kits[k.Scheme] = k
	}
	b.Run("github/go-github", func(b *testing.B) {
		k := kits[webhook.SchemeGitHub]
		h, body := benchDelivery(b, k, now)
		sig, secret := h.Get(webhook.HeaderGitHubSignature), []byte(k.Secrets[0])
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := github.ValidateSignature(sig, body, secret); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("razorpay/razorpay-go", func(b *testing.B) {
		k := kits[webhook.SchemeRazorpay]
		h, body := benchDelivery(b, k, now)
		sig := h.Get(webhook.HeaderRazorpaySignature)
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if !razorpay.VerifyWebhookSignature(string(body), sig, k.Secrets[0]) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("paddle/paddle-go-sdk", func(b *testing.B) {
		k := kits[webhook.SchemePaddle]
		h, body := benchDelivery(b, k, now)
		verifier := paddle.NewWebhookVerifier(k.Secrets[0], paddle.VerifierWithTimestampTolerance(5*time.Minute))
		req, _ := http.NewRequest(http.MethodPost, "https://example.com/webhooks/paddle", nil)
		req.Header.Set("Paddle-Signature", h.Get(webhook.HeaderPaddleSignature))
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			req.Body = readCloser{bytes.NewReader(body)}
			if ok, err := verifier.Verify(req); !ok || err != nil {
				b.Fatal("refused", err)
			}
		}
	})
	b.Run("standard-webhooks/svix", func(b *testing.B) {
		k := kits[webhook.SchemeStandard]
		h, body := benchDelivery(b, k, now)
		wh, err := svix.NewWebhook(k.Secrets[0])
		if err != nil {
			b.Fatal(err)
		}
		header := http.Header{}
		for name, v := range h {
			header.Set(name, v)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := wh.Verify(body, header); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }
