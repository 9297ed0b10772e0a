package webhook_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/webhook"
	"github.com/hookline/hookline/pkg/webhook/webhooktest"
)

// paypalRig is a PayPal verifier pinned to a certificate double, on a
// clock that moves only when the test moves it.
type paypalRig struct {
	t      *testing.T
	certs  *webhooktest.PayPalCerts
	client *http.Client
	v      *webhook.Verifier
	now    time.Time
	body   []byte
	sent   int
}

// newPayPalRig starts a certificate double and a verifier pinned to it;
// edit, if not nil, changes the fetcher's configuration.
func newPayPalRig(t *testing.T, edit func(*webhook.CertFetcherConfig)) *paypalRig {
	t.Helper()
	certs, err := webhooktest.StartPayPalCerts()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { certs.Close() })
	r := &paypalRig{t: t, certs: certs, client: certs.Client(2 * time.Second), now: time.Now().UTC().Truncate(time.Second),
		body: []byte(`{"id":"WH-RIG-1","event_type":"PAYMENT.CAPTURE.COMPLETED","resource":{}}`)}
	cfg := webhook.CertFetcherConfig{Hosts: []string{certs.Host()}, Roots: certs.Roots, Client: r.client}
	if edit != nil {
		edit(&cfg)
	}
	r.v, err = webhook.NewVerifier(webhook.VerifierConfig{Scheme: webhook.SchemePayPal, Certs: webhook.NewCertFetcher(cfg),
		Now: func() time.Time { return r.now }, Options: webhook.PresetOptions{WebhookID: webhooktest.PayPalWebhookID, CertHosts: cfg.Hosts}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sign signs the rig's body with the double's key as PayPal would for
// webhookID, naming certURL, transmitted at sent.
func (r *paypalRig) sign(certURL, webhookID string, sent time.Time) webhook.HeaderMap {
	r.t.Helper()
	r.sent++
	h, err := webhook.SignPayPal(r.certs.Key, certURL, webhookID, fmt.Sprintf("tx-%d", r.sent), sent, r.body)
	if err != nil {
		r.t.Fatal(err)
	}
	m := webhook.HeaderMap{}
	for k := range h {
		m[strings.ToLower(k)] = h.Get(k)
	}
	return m
}

// deliver verifies a delivery signed for the rig's webhook, naming
// certURL, transmitted at sent.
func (r *paypalRig) deliver(certURL string, sent time.Time) error {
	r.t.Helper()
	_, err := r.v.VerifyDelivery(r.sign(certURL, webhooktest.PayPalWebhookID, sent), r.body, nil)
	return err
}

// junkURL is a URL of PayPal's certificate shape on the double's host
// that names no certificate there.
func (r *paypalRig) junkURL(n int) string {
	return fmt.Sprintf("https://%s/v1/notifications/certs/CERT-360caa42-fca2a594-%08x", r.certs.Host(), n)
}

// TestPayPalCertFetchStaysOnPinnedHosts: a pinned host that redirects
// the certificate fetch elsewhere (plain http, an instance's metadata
// service, a host not pinned) is never followed there: the delivery is
// a bad signature. A hop to https on a pinned host is followed. The
// caller's HTTP client is left as it was given.
func TestPayPalCertFetchStaysOnPinnedHosts(t *testing.T) {
	var metadata atomic.Int64
	meta := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		metadata.Add(1)
		_, _ = w.Write([]byte("hookline-role"))
	}))
	t.Cleanup(meta.Close)
	other, err := webhooktest.StartPayPalCerts()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })

	for _, tc := range []struct {
		name string
		to   func(r *paypalRig) string
	}{
		{"plain http on loopback", func(*paypalRig) string { return meta.URL + "/latest/meta-data/iam/security-credentials/" }},
		{"https on a host not pinned", func(*paypalRig) string { return other.CertURL() }},
		{"plain http on the pinned host", func(r *paypalRig) string { return "http://" + r.certs.Host() + webhooktest.PayPalCertPath }},
		{"the pinned host, another path", func(r *paypalRig) string { return "https://" + r.certs.Host() + "/latest/meta-data/" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Given a pinned host that answers the certificate URL with a redirect
			r := newPayPalRig(t, nil)
			transport := r.client.Transport
			to := tc.to(r)
			r.certs.RedirectNext(to)
			beforeMeta, beforeOther := metadata.Load(), other.Requests()
			// when a delivery names it
			err := r.deliver(r.certs.CertURL(), r.now)
			// then the redirect is not followed, and the delivery is refused as unauthenticated
			if n := metadata.Load() - beforeMeta; n != 0 || other.Requests() != beforeOther || r.certs.Requests() != 1 {
				t.Fatalf("the fetch followed the redirect to %s (%d requests to the metadata service, %d to the pinned host)", to, n, r.certs.Requests())
			}
			if !errors.Is(err, webhook.ErrBadSignature) || webhook.KindOf(err) != webhook.KindUnauthenticated {
				t.Fatalf("err = %v (kind %s), want a bad signature", err, webhook.KindOf(err))
			}
			// and the caller's client is unchanged.
			if r.client.CheckRedirect != nil || r.client.Transport != transport {
				t.Fatal("NewCertFetcher changed the caller's http.Client")
			}
		})
	}
	t.Run("https on a pinned host is followed", func(t *testing.T) {
		// The caller's own redirect policy is asked too, after ours.
		asked := 0
		r := newPayPalRig(t, func(c *webhook.CertFetcherConfig) {
			c.Client.CheckRedirect = func(*http.Request, []*http.Request) error { asked++; return nil }
		})
		r.certs.RedirectNext(r.certs.CertURL())
		if err := r.deliver(r.certs.CertURL(), r.now); err != nil {
			t.Fatalf("VerifyDelivery: %v", err)
		}
		if n := r.certs.Requests(); n != 2 || asked != 1 {
			t.Fatalf("%d requests, the caller's policy asked %d times; want the redirect and the certificate, asked once", n, asked)
		}
	})
}

// TestPayPalCertURLIsACertificatePath: only PayPal's certificate path,
// without a query or a fragment, is fetched; any other URL on a pinned
// host is a bad signature without a request.
func TestPayPalCertURLIsACertificatePath(t *testing.T) {
	r := newPayPalRig(t, nil)
	host := r.certs.Host()
	for _, u := range []string{
		r.certs.CertURL() + "?n=1",
		r.certs.CertURL() + "?",
		r.certs.CertURL() + "#f",
		"https://" + host + "/v1/oauth2/token",
		"https://" + host + "/latest/meta-data/",
		"https://" + host + "/v1/notifications/certs/",
		"https://" + host + "/v1/notifications/certs/CERT-a/b",
		"https://" + host + "/v1/notifications/certs/CERT-%2e%2e",
		"https://" + host + "/v1/notifications/certs/../../../v1/notifications/certs/CERT-hookline-local",
		"https://user@" + host + webhooktest.PayPalCertPath,
	} {
		err := r.deliver(u, r.now)
		if !errors.Is(err, webhook.ErrBadSignature) {
			t.Errorf("%s: err = %v, want a bad signature", u, err)
		}
	}
	if n := r.certs.Requests(); n != 0 {
		t.Fatalf("%d requests to the pinned host for URLs that are not certificates", n)
	}
	// PayPal's own shape, and the double's, are fetched.
	if err := r.deliver(r.certs.CertURL(), r.now); err != nil {
		t.Fatalf("the double's certificate: %v", err)
	}
	if err := r.deliver(r.junkURL(1), r.now); !errors.Is(err, webhook.ErrBadSignature) || r.certs.Requests() != 2 {
		t.Fatalf("PayPal's shape: err = %v after %d requests, want a bad signature after 2", err, r.certs.Requests())
	}
}

// TestPayPalStaleTransmissionFetchesNothing: the transmission time is
// checked before the certificate is fetched, so a replay or a made-up
// delivery outside the window costs no request.
func TestPayPalStaleTransmissionFetchesNothing(t *testing.T) {
	r := newPayPalRig(t, nil)
	for _, at := range []time.Time{r.now.Add(-time.Hour), r.now.Add(time.Hour)} {
		if err := r.deliver(r.junkURL(7), at); !errors.Is(err, webhook.ErrStaleTimestamp) {
			t.Errorf("sent at %s: err = %v, want a stale timestamp", at, err)
		}
	}
	if n := r.certs.Requests(); n != 0 {
		t.Fatalf("%d certificate requests for deliveries outside the window", n)
	}
}

// TestPayPalCertNotFoundIsABadSignature: a URL of the certificate shape
// that the pinned host does not know (404) is the sender's fault (401),
// not an outage (503), and it is remembered: asked once.
func TestPayPalCertNotFoundIsABadSignature(t *testing.T) {
	r := newPayPalRig(t, nil)
	for range 3 {
		err := r.deliver(r.junkURL(404), r.now)
		if !errors.Is(err, webhook.ErrBadSignature) || webhook.KindOf(err) != webhook.KindUnauthenticated {
			t.Fatalf("err = %v (kind %s), want a bad signature", err, webhook.KindOf(err))
		}
	}
	if n := r.certs.Requests(); n != 1 {
		t.Fatalf("%d requests for one unknown certificate, want 1", n)
	}
}

// TestPayPalConcurrentDeliveriesFetchOnce: deliveries that arrive
// together while the certificate is being fetched share that one fetch.
func TestPayPalConcurrentDeliveriesFetchOnce(t *testing.T) {
	r := newPayPalRig(t, nil)
	// The host answers slowly, so that every delivery arrives during the fetch.
	r.certs.SetDelay(300 * time.Millisecond)
	const n = 8
	headers := make([]webhook.HeaderMap, n)
	for i := range headers {
		headers[i] = r.sign(r.certs.CertURL(), webhooktest.PayPalWebhookID, r.now)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, errs[i] = r.v.VerifyDelivery(headers[i], r.body, nil) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
	}
	if got := r.certs.Fetches(); got != 1 {
		t.Fatalf("%d fetches for %d concurrent deliveries, want 1", got, n)
	}
}

// TestPayPalJunkNeverEvictsTheCertificate is the reviewer's run: once
// the genuine certificate is cached, 70 unauthenticated deliveries, half
// naming it with a query, half naming paths the host does not serve,
// make no more requests than the rate limit's burst, and the genuine
// certificate is still cached after them.
func TestPayPalJunkNeverEvictsTheCertificate(t *testing.T) {
	r := newPayPalRig(t, nil)
	if err := r.deliver(r.certs.CertURL(), r.now); err != nil {
		t.Fatalf("genuine delivery: %v", err)
	}
	before := r.certs.Requests()
	kinds := map[webhook.Kind]int{}
	for i := range 35 {
		// A junk signature: the double's key signs, but over other headers.
		for _, u := range []string{fmt.Sprintf("%s?n=%d", r.certs.CertURL(), i), r.junkURL(i)} {
			_, err := r.v.VerifyDelivery(r.sign(u, "another-webhook", r.now), r.body, nil)
			if err == nil {
				t.Fatalf("junk delivery %s verified", u)
			}
			kinds[webhook.KindOf(err)]++
		}
	}
	// The genuine fetch took one of the burst; the rest went to the
	// first junk paths (401), the later ones are over the limit (503),
	// and no URL with a query is fetched (401).
	fetched, burst := r.certs.Requests()-before, webhook.DefaultCertFetchBurst
	want := map[webhook.Kind]int{webhook.KindUnauthenticated: 35 + burst - 1, webhook.KindUnavailable: 35 - burst + 1}
	if fetched != burst-1 || kinds[webhook.KindUnauthenticated] != want[webhook.KindUnauthenticated] || kinds[webhook.KindUnavailable] != want[webhook.KindUnavailable] {
		t.Errorf("70 junk deliveries: %d requests, answers by kind %v; want %d requests, %v", fetched, kinds, burst-1, want)
	}
	// The genuine certificate is still cached.
	before = r.certs.Requests()
	if err := r.deliver(r.certs.CertURL(), r.now); err != nil {
		t.Fatalf("genuine delivery after the junk: %v", err)
	}
	if n := r.certs.Requests() - before; n != 0 {
		t.Fatalf("the genuine certificate was fetched again (%d requests): junk evicted it", n)
	}
}

// TestPayPalCertMissesAreRateLimited: certificates not cached are
// fetched at most FetchBurst at once and one more each FetchInterval;
// past that a delivery is unavailable (503, PayPal retries) without a
// request.
func TestPayPalCertMissesAreRateLimited(t *testing.T) {
	r := newPayPalRig(t, func(c *webhook.CertFetcherConfig) { c.FetchBurst, c.FetchInterval = 3, time.Minute })
	want := []webhook.Kind{webhook.KindUnauthenticated, webhook.KindUnauthenticated, webhook.KindUnauthenticated,
		webhook.KindUnavailable, webhook.KindUnavailable}
	for i, k := range want {
		if err := r.deliver(r.junkURL(100+i), r.now); webhook.KindOf(err) != k {
			t.Fatalf("miss %d: err = %v (kind %s), want %s", i, err, webhook.KindOf(err), k)
		}
	}
	if n := r.certs.Requests(); n != 3 {
		t.Fatalf("%d requests, want the burst of 3", n)
	}
	// A minute later, one more.
	r.now = r.now.Add(time.Minute)
	if err := r.deliver(r.certs.CertURL(), r.now); err != nil {
		t.Fatalf("a minute later: %v", err)
	}
	if err := r.deliver(r.junkURL(200), r.now); !errors.Is(err, webhook.ErrCertUnavailable) {
		t.Fatalf("second miss in that minute: err = %v, want unavailable", err)
	}
	if n := r.certs.Requests(); n != 4 {
		t.Fatalf("%d requests, want 4", n)
	}
}
