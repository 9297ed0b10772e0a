package webhook

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"
)

// PayPal shares no secret. It signs
// "transmission_id|transmission_time|webhook_id|crc32(body)" (the CRC32
// in decimal) with RSA and SHA-256, base64 in PAYPAL-TRANSMISSION-SIG,
// and names the signing certificate's URL in PAYPAL-CERT-URL. The
// webhook ID is the one configured at PayPal, so it is a required field
// (webhook_id); the certificate is fetched only over HTTPS from a pinned
// host (cert_hosts), at PayPal's certificate path, never through a
// redirect off those hosts, with a bounded wait, once for concurrent
// deliveries, within a rate limit, and its chain checked; it is cached
// once a signature verifies with it ([CertFetcher]). The replay window
// applies to PAYPAL-TRANSMISSION-TIME and is checked before any fetch.
// The event identity is the body's id ("WH-..."), which PayPal keeps
// across retries, each with a new transmission ID. PayPal retries a
// webhook not answered 2xx up to 25 times over 3 days. PayPal's
// verify-webhook-signature API is not used: it would cost a call per
// delivery at the door, and the worker's fetch of the capture, which
// also yields the real amount, is what makes a forged body harmless.
//
// The signature covers the body only through its CRC32, which is
// linear: anyone holding one genuine delivery can write another body
// (another id, another amount) with the same CRC32 by solving for a few
// bytes, and it verifies under the genuine headers. So every item is
// untrusted, as Mollie's are: it is queued with "fetch":true, and the
// payment worker fetches the capture or sale from PayPal's API and acts
// on what PayPal holds, keyed by the capture's ID, never on the body's
// claim. The body's id stays the intake identity.
// https://developer.paypal.com/api/rest/webhooks/rest/
var paypalPreset = preset{
	needs: []string{FieldWebhookID, FieldCertHosts},
}

// PayPal's headers.
const (
	HeaderPayPalTransmissionID   = "paypal-transmission-id"
	HeaderPayPalTransmissionTime = "paypal-transmission-time"
	HeaderPayPalTransmissionSig  = "paypal-transmission-sig"
	HeaderPayPalCertURL          = "paypal-cert-url"
	HeaderPayPalAuthAlgo         = "paypal-auth-algo"
)

// paypalAlgo is the one signature algorithm accepted.
const paypalAlgo = "SHA256withRSA"

func (v *Verifier) verifyPayPal(h Headers, body []byte, now time.Time) (Delivery, error) {
	var got [5]string
	for i, name := range []string{HeaderPayPalTransmissionID, HeaderPayPalTransmissionTime, HeaderPayPalTransmissionSig, HeaderPayPalCertURL, HeaderPayPalAuthAlgo} {
		if got[i] = strings.TrimSpace(h.Get(name)); got[i] == "" {
			return Delivery{}, fmt.Errorf("%s header: %w", name, ErrMissingSignature)
		}
	}
	transmission, tsText, sigText, certURL, algo := got[0], got[1], got[2], got[3], got[4]
	if algo != paypalAlgo {
		return Delivery{}, fmt.Errorf("%s header: want %s: %w", HeaderPayPalAuthAlgo, paypalAlgo, ErrMalformedHeader)
	}
	ts, err := time.Parse(time.RFC3339Nano, tsText)
	if err != nil {
		return Delivery{}, fmt.Errorf("%s header: want an RFC 3339 time: %w", HeaderPayPalTransmissionTime, ErrMalformedHeader)
	}
	sig, err := base64.StdEncoding.DecodeString(sigText)
	if err != nil {
		return Delivery{}, ErrBadSignature
	}
	// The window first: a delivery outside it costs no certificate fetch.
	if err := checkWindow(ts, now, v.tolerance); err != nil {
		return Delivery{}, err
	}
	key, err := v.certs.Key(certURL, now)
	if err != nil {
		return Delivery{}, err
	}
	digest := sha256.Sum256([]byte(paypalMessage(transmission, tsText, v.opts.WebhookID, body)))
	if rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig) != nil {
		return Delivery{}, ErrBadSignature
	}
	v.certs.promote(certURL, key)
	id, typ, _, err := bodyFields(body, "id", "event_type", "")
	if err != nil {
		return Delivery{}, err
	}
	it, err := newItem(SchemePayPal, []string{id}, 0, []string{typ}, 0, body, true)
	if err != nil {
		return Delivery{}, err
	}
	it.Timestamp, it.Untrusted = ts.UTC(), true
	return Delivery{Items: []Item{it}}, nil
}

// paypalMessage is the text PayPal signs.
func paypalMessage(transmissionID, transmissionTime, webhookID string, body []byte) string {
	return transmissionID + "|" + transmissionTime + "|" + webhookID + "|" + strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)
}
