package webhook_test

import (
	"errors"
	"github.com/hookline/hookline/pkg/webhook/webhooktest"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/webhook"
)

// TestPayPalCertificates: a certificate is fetched only over https from
// a pinned host, within a bound, once for many deliveries, and only if
// its chain verifies; a host that is down is our failure (retry), not a
// bad signature.
func TestPayPalCertificates(t *testing.T) {
	certs, err := webhooktest.StartPayPalCerts()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { certs.Close() })
	other, err := webhooktest.StartPayPalCerts() // another root, not trusted
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	now := time.Now().UTC().Truncate(time.Second)
	body := []byte(`{"id":"WH-CERT1","event_type":"PAYMENT.CAPTURE.COMPLETED","resource":{}}`)
	newVerifier := func(timeout time.Duration, hosts ...string) *webhook.Verifier {
		f := webhook.NewCertFetcher(webhook.CertFetcherConfig{Hosts: hosts, Roots: certs.Roots, Client: certs.Client(timeout), Timeout: timeout})
		v, err := webhook.NewVerifier(webhook.VerifierConfig{Scheme: webhook.SchemePayPal, Certs: f, Now: func() time.Time { return now },
			Options: webhook.PresetOptions{WebhookID: "1JE4291016473214C", CertHosts: hosts}})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	sign := func(p *webhooktest.PayPalCerts, certURL string) webhook.HeaderMap {
		h, err := webhook.SignPayPal(p.Key, certURL, "1JE4291016473214C", "tx-"+strings.ReplaceAll(certURL, "/", ""), now, body)
		if err != nil {
			t.Fatal(err)
		}
		m := webhook.HeaderMap{}
		for k := range h {
			m[strings.ToLower(k)] = h.Get(k)
		}
		return m
	}
	t.Run("fetched once, then cached", func(t *testing.T) {
		v := newVerifier(2*time.Second, certs.Host())
		before := certs.Fetches()
		for range 3 {
			if _, err := v.VerifyDelivery(sign(certs, certs.CertURL()), body, nil); err != nil {
				t.Fatalf("VerifyDelivery: %v", err)
			}
		}
		if n := certs.Fetches() - before; n != 1 {
			t.Fatalf("%d fetches for three deliveries, want 1", n)
		}
	})
	t.Run("a host that is not pinned is never asked", func(t *testing.T) {
		v := newVerifier(2*time.Second, certs.Host())
		before := other.Fetches()
		_, err := v.VerifyDelivery(sign(other, other.CertURL()), body, nil)
		if !errors.Is(err, webhook.ErrBadSignature) || other.Fetches() != before {
			t.Fatalf("err = %v, fetches %d; want a bad signature and no fetch", err, other.Fetches()-before)
		}
		plain := strings.Replace(certs.CertURL(), "https://", "http://", 1)
		if _, err := v.VerifyDelivery(sign(certs, plain), body, nil); !errors.Is(err, webhook.ErrBadSignature) {
			t.Fatalf("http URL: err = %v", err)
		}
	})
	t.Run("a chain that does not verify is refused", func(t *testing.T) {
		// The other double's certificate, pinned, but issued by an untrusted root.
		f := webhook.NewCertFetcher(webhook.CertFetcherConfig{Hosts: []string{other.Host()}, Roots: certs.Roots, Client: other.Client(time.Second)})
		v, err := webhook.NewVerifier(webhook.VerifierConfig{Scheme: webhook.SchemePayPal, Certs: f, Now: func() time.Time { return now },
			Options: webhook.PresetOptions{WebhookID: "1JE4291016473214C", CertHosts: []string{other.Host()}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.VerifyDelivery(sign(other, other.CertURL()), body, nil); !errors.Is(err, webhook.ErrBadSignature) {
			t.Fatalf("err = %v, want a bad signature", err)
		}
	})
	t.Run("a host that is down or slow is a retry, bounded", func(t *testing.T) {
		certs.SetDown(true)
		v := newVerifier(300*time.Millisecond, certs.Host())
		_, err := v.VerifyDelivery(sign(certs, certs.CertURL()), body, nil)
		certs.SetDown(false)
		if !errors.Is(err, webhook.ErrCertUnavailable) || webhook.KindOf(err) != webhook.KindUnavailable {
			t.Fatalf("down: err = %v (kind %s)", err, webhook.KindOf(err))
		}
		certs.SetDelay(5 * time.Second)
		defer certs.SetDelay(0)
		start := time.Now()
		_, err = newVerifier(300*time.Millisecond, certs.Host()).VerifyDelivery(sign(certs, certs.CertURL()), body, nil)
		if !errors.Is(err, webhook.ErrCertUnavailable) {
			t.Fatalf("slow: err = %v", err)
		}
		if waited := time.Since(start); waited > 3*time.Second {
			t.Fatalf("waited %s for a certificate, the bound is 300ms", waited)
		}
	})
}
