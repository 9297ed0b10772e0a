package webhook_test

import (
	"encoding/json"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/webhook"
	"github.com/hookline/hookline/pkg/webhook/webhooktest"
)

// TestPayPalForgeryWithTheSameCRC32IsFetched: PayPal signs only the CRC32
// of a body, so under the headers of a genuine 9.90 USD capture a body
// with another identity and another amount, made to the same CRC32,
// verifies. The preset cannot tell them apart; it queues every PayPal
// item for the worker to fetch the capture from PayPal's API, under the
// body's id as its intake identity.
func TestPayPalForgeryWithTheSameCRC32IsFetched(t *testing.T) {
	certs, err := webhooktest.StartPayPalCerts()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { certs.Close() })
	now := time.Now().UTC().Truncate(time.Second)
	hosts := []string{certs.Host()}
	v, err := webhook.NewVerifier(webhook.VerifierConfig{Scheme: webhook.SchemePayPal, Now: func() time.Time { return now },
		Certs:   webhook.NewCertFetcher(webhook.CertFetcherConfig{Hosts: hosts, Roots: certs.Roots, Client: certs.Client(2 * time.Second)}),
		Options: webhook.PresetOptions{WebhookID: webhooktest.PayPalWebhookID, CertHosts: hosts}})
	if err != nil {
		t.Fatal(err)
	}
	// Given a genuine capture of 9.90 USD and its signed headers
	genuine := webhooktest.PayPalCaptureEvent("WH-58D329510W468432D-8HN650336L201105X", "5O190127TN364715T", "9.90", "USD", "cus_paypal_1")
	signed, err := webhook.SignPayPal(certs.Key, certs.CertURL(), webhooktest.PayPalWebhookID, "b2384410-f8d2-11e6-9dc1-a6e0b5d7c20f", now, genuine)
	if err != nil {
		t.Fatal(err)
	}
	h := webhook.HeaderMap{}
	for k := range signed {
		h[strings.ToLower(k)] = signed.Get(k)
	}
	// and a forged body of 9999.00 with the same CRC32
	forged, err := webhooktest.ForgePayPalCapture(genuine, "WH-FORGED-0000000001", "5O190127TN364715T", "9999.00", "USD", "cus_paypal_1")
	if err != nil {
		t.Fatal(err)
	}
	if crc32.ChecksumIEEE(forged) != crc32.ChecksumIEEE(genuine) || !json.Valid(forged) {
		t.Fatalf("forgery is not JSON with the genuine CRC32:\n%s", forged)
	}
	for _, tc := range []struct {
		name, body, wantID string
	}{
		{name: "genuine", body: string(genuine), wantID: "WH-58D329510W468432D-8HN650336L201105X"},
		{name: "forged", body: string(forged), wantID: "WH-FORGED-0000000001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// When it is verified under the genuine headers, then it is accepted
			d, err := v.VerifyDelivery(h, []byte(tc.body), nil)
			if err != nil {
				t.Fatalf("VerifyDelivery: %v", err)
			}
			// and queued for the worker to fetch, under the body's id
			var env webhook.ItemEnvelope
			if err := json.Unmarshal(d.Items[0].Payload, &env); err != nil {
				t.Fatal(err)
			}
			it := d.Items[0]
			if it.EventID != tc.wantID || env.ID != tc.wantID || !env.Fetch || !it.Untrusted {
				t.Fatalf("event %q, envelope id %q, fetch %v, untrusted %v; want %q, fetched and untrusted",
					it.EventID, env.ID, env.Fetch, it.Untrusted, tc.wantID)
			}
		})
	}
}
