package webhook

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// SignPreset returns the headers a provider of a header-signed preset
// would send with body at ts, keyed by secret: github, shopify,
// razorpay, checkout, square (over opts.SignedURL and the body), paddle
// and gocardless. id is the event ID header of the presets that send one
// (github, shopify, razorpay; unsigned, so their identity is the body's
// digest) and is ignored by the others, whose identity is in the body.
// Adyen and Braintree sign inside the body (see [SignAdyen] and
// [SignBraintree]), PayPal with a certificate ([SignPayPal]), and Mollie
// not at all. It is for senders and tests.
func SignPreset(scheme Scheme, secret string, opts PresetOptions, id string, ts time.Time, body []byte) (http.Header, error) {
	key := []byte(secret)
	h := http.Header{}
	switch scheme {
	case SchemeGitHub:
		h.Set(HeaderGitHubSignature, "sha256="+signHex(key, body))
		h.Set(HeaderGitHubDelivery, id)
		h.Set(HeaderGitHubEvent, "ping")
	case SchemeShopify:
		h.Set(HeaderShopifyHMAC, signBase64(key, body))
		h.Set(HeaderShopifyEventID, id)
		h.Set(HeaderShopifyTriggered, ts.UTC().Format(time.RFC3339))
	case SchemeRazorpay:
		h.Set(HeaderRazorpaySignature, signHex(key, body))
		h.Set(HeaderRazorpayEventID, id)
	case SchemeCheckout:
		h.Set(HeaderCheckoutSignature, signHex(key, body))
	case SchemeSquare:
		h.Set(HeaderSquareSignature, signBase64(key, []byte(opts.SignedURL), body))
	case SchemePaddle:
		t := strconv.FormatInt(ts.Unix(), 10)
		h.Set(HeaderPaddleSignature, "ts="+t+";h1="+signHex(key, []byte(t), colon, body))
	case SchemeGoCardless:
		h.Set(HeaderGoCardlessSignature, signHex(key, body))
	default:
		return nil, fmt.Errorf("scheme %q is not signed in headers: %w", scheme, ErrBadConfig)
	}
	return h, nil
}

// SignAdyen returns body with every notification item's
// additionalData.hmacSignature set, keyed by the hex HMAC key. Members
// keep their values but not their order or spacing, which Adyen's HMAC
// does not cover.
func SignAdyen(hexKey string, body []byte) ([]byte, error) {
	raw, err := hex.DecodeString(hexKey)
	if err != nil {
		return nil, fmt.Errorf("sign: want the HMAC key in hex: %w", ErrBadSecret)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("sign: %s: %w", jsonProblem(err), ErrMalformedBody)
	}
	items, _ := doc["notificationItems"].([]any)
	for _, it := range items {
		wrap, _ := it.(map[string]any)
		n, _ := wrap["NotificationRequestItem"].(map[string]any)
		if n == nil {
			continue
		}
		amount, _ := n["amount"].(map[string]any)
		text := func(m map[string]any, k string) string {
			if m == nil || m[k] == nil {
				return ""
			}
			return fmt.Sprint(m[k])
		}
		msg := adyenSigningString(text(n, "pspReference"), text(n, "originalReference"), text(n, "merchantAccountCode"),
			text(n, "merchantReference"), text(amount, "value"), text(amount, "currency"), text(n, "eventCode"), text(n, "success"))
		add, _ := n["additionalData"].(map[string]any)
		if add == nil {
			add = map[string]any{}
			n["additionalData"] = add
		}
		add["hmacSignature"] = signBase64(raw, []byte(msg))
	}
	return json.Marshal(doc)
}

// SignPayPal returns the headers PayPal would send with body: a
// transmission signed by key, whose certificate is served at certURL,
// for the webhook webhookID.
func SignPayPal(key *rsa.PrivateKey, certURL, webhookID, transmissionID string, ts time.Time, body []byte) (http.Header, error) {
	tsText := ts.UTC().Format(time.RFC3339)
	digest := sha256.Sum256([]byte(paypalMessage(transmissionID, tsText, webhookID, body)))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	h := http.Header{}
	h.Set(HeaderPayPalTransmissionID, transmissionID)
	h.Set(HeaderPayPalTransmissionTime, tsText)
	h.Set(HeaderPayPalTransmissionSig, base64.StdEncoding.EncodeToString(sig))
	h.Set(HeaderPayPalCertURL, certURL)
	h.Set(HeaderPayPalAuthAlgo, paypalAlgo)
	return h, nil
}
