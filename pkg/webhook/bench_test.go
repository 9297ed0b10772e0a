package webhook

import (
	"strings"
	"testing"
)

// benchBody returns a JSON event body of exactly 1 KiB.
func benchBody(b testing.TB) []byte {
	b.Helper()
	head := `{"id":"evt_bench","object":"event","created":1800000000,"type":"payment_intent.succeeded","data":{"object":{"note":"`
	tail := `"}}}`
	body := head + strings.Repeat("x", 1024-len(head)-len(tail)) + tail
	if len(body) != 1024 {
		b.Fatalf("body is %d bytes", len(body))
	}
	return []byte(body)
}

func BenchmarkVerifyStandard(b *testing.B) {
	body := benchBody(b)
	h, err := SignHeaders(SchemeStandard, []string{standardNew}, "msg_bench", signedAt, body)
	if err != nil {
		b.Fatal(err)
	}
	headers := HeaderMap{
		HeaderWebhookID:        h.Get(HeaderWebhookID),
		HeaderWebhookTimestamp: h.Get(HeaderWebhookTimestamp),
		HeaderWebhookSignature: h.Get(HeaderWebhookSignature),
	}
	v, err := NewVerifier(VerifierConfig{Scheme: SchemeStandard, Now: clockAt(signedAt)})
	if err != nil {
		b.Fatal(err)
	}
	secrets := []string{standardNew, standardOld}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := v.Verify(headers, body, secrets); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyStripe(b *testing.B) {
	body := benchBody(b)
	headers := HeaderMap{HeaderStripeSignature: SignStripe(stripeNew, signedAt, body)}
	v, err := NewVerifier(VerifierConfig{Scheme: SchemeStripe, Now: clockAt(signedAt)})
	if err != nil {
		b.Fatal(err)
	}
	secrets := []string{stripeNew, stripeOld}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := v.Verify(headers, body, secrets); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseEnvelope(b *testing.B) {
	body := benchBody(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := ParseEnvelope(body); err != nil {
			b.Fatal(err)
		}
	}
}
