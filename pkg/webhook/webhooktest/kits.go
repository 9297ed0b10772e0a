package webhooktest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/webhook"
)

// Kit sends deliveries of one scheme as its provider would.
type Kit struct {
	Scheme  webhook.Scheme
	Options webhook.PresetOptions
	// Certs is the PayPal certificate fetcher pinned to the local double.
	Certs *webhook.CertFetcher
	// Secrets are the active secrets, newest first; nil when unsigned.
	Secrets []string
	// Wrong is a well-formed secret that is not active.
	Wrong string
	// Stamped says a timestamp is signed, so the replay window applies.
	Stamped bool
	// Batches says the provider batches events.
	Batches bool
	// Unsigned says nothing is signed (Mollie).
	Unsigned bool
	// RawPayload says the queue message is the body itself (the two
	// generic schemes), not an [webhook.ItemEnvelope].
	RawPayload bool

	event  func(id string) []byte
	sign   func(secret, id string, ts time.Time, body []byte) (webhook.HeaderMap, []byte, error)
	batch  func(k Kit, secret string, ids []string, bad int) ([]byte, error)
	tamper func(body []byte) []byte
	strip  func(h webhook.HeaderMap, body []byte) (webhook.HeaderMap, []byte)
	wantID func(id string) string
	// batchSigned says batch returns a body signed already.
	batchSigned bool
}

// Event is the body of one event whose provider identity is id.
func (k Kit) Event(id string) []byte { return k.event(id) }

// Sign signs body as the provider would with secret at ts, returning the
// headers and the body to send (which differs for the presets that sign
// inside the body).
func (k Kit) Sign(secret, id string, ts time.Time, body []byte) (webhook.HeaderMap, []byte, error) {
	return k.sign(secret, id, ts, body)
}

// Delivery is Sign of Event(id).
func (k Kit) Delivery(secret, id string, ts time.Time) (webhook.HeaderMap, []byte, error) {
	return k.sign(secret, id, ts, k.event(id))
}

// Batch is a signed batch of the events ids in which the one at bad is
// refused on its own; it fails for a provider that does not batch.
func (k Kit) Batch(secret string, ids []string, bad int, ts time.Time) (webhook.HeaderMap, []byte, error) {
	if k.batch == nil {
		return nil, nil, fmt.Errorf("%s does not batch", k.Scheme)
	}
	body, err := k.batch(k, secret, ids, bad)
	if err != nil {
		return nil, nil, err
	}
	if k.batchSigned {
		return webhook.HeaderMap{"content-type": "application/json"}, body, nil
	}
	return k.sign(secret, "", ts, body)
}

// Tamper returns a signed body with one signed value changed.
func (k Kit) Tamper(body []byte) []byte {
	if k.tamper != nil {
		return k.tamper(body)
	}
	return append(bytes.Clone(body), ' ')
}

// Strip drops what the signature travels in: its header, or for the
// presets that sign inside the body, the signature there.
func (k Kit) Strip(h webhook.HeaderMap, body []byte) (webhook.HeaderMap, []byte) {
	return k.strip(h, body)
}

// WantID is the event ID the verifier should find for the event id.
func (k Kit) WantID(id string) string {
	if k.wantID != nil {
		return k.wantID(id)
	}
	return id
}

// Kits returns one kit for every scheme, the two generic ones first. The
// PayPal double is stopped when t ends.
func Kits(t testing.TB) []Kit {
	t.Helper()
	certs, err := StartPayPalCerts()
	if err != nil {
		t.Fatalf("paypal certificate double: %v", err)
	}
	t.Cleanup(func() { _ = certs.Close() })
	return []Kit{
		standardKit(), stripeKit(),
		headerIDKit(hmacKit(webhook.SchemeGitHub, webhook.HeaderGitHubSignature, `{"zen":"Keep it logically awesome.","hook_id":%q}`, webhook.PresetOptions{})),
		headerIDKit(hmacKit(webhook.SchemeShopify, webhook.HeaderShopifyHMAC, `{"id":820982911946154508,"email":"jon@example.com","note":%q}`, webhook.PresetOptions{})),
		headerIDKit(hmacKit(webhook.SchemeRazorpay, webhook.HeaderRazorpaySignature, `{"entity":"event","event":"payment.captured","created_at":1800000000,"payload":{"note":%q}}`, webhook.PresetOptions{})),
		hmacKit(webhook.SchemeCheckout, webhook.HeaderCheckoutSignature, `{"id":%q,"type":"payment_captured","created_on":"2026-11-30T10:00:00Z","data":{"amount":1000}}`, webhook.PresetOptions{}),
		hmacKit(webhook.SchemeSquare, webhook.HeaderSquareSignature, `{"merchant_id":"MLX","type":"payment.updated","event_id":%q,"created_at":"2026-11-30T10:00:00Z","data":{}}`,
			webhook.PresetOptions{SignedURL: "https://hooks.example.com/webhooks/square"}),
		paddleKit(), gocardlessKit(), adyenKit(), braintreeKit(), mollieKit(), paypalKit(certs),
	}
}

// Local secrets of the kits: public test values, never used elsewhere.
var (
	standardSecrets = []string{"whsec_" + base64.StdEncoding.EncodeToString([]byte("webhooktest-standard-new-0000001")), "whsec_" + base64.StdEncoding.EncodeToString([]byte("webhooktest-standard-old-0000002"))}
	standardWrong   = "whsec_" + base64.StdEncoding.EncodeToString([]byte("webhooktest-standard-wrong-00003"))
	plainSecrets    = []string{"webhooktest-secret-new", "webhooktest-secret-old"}
	plainWrong      = "webhooktest-secret-wrong"
	adyenSecrets    = []string{"44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056", "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"}
	adyenWrong      = "FEDCBA9876543210FEDCBA9876543210FEDCBA9876543210FEDCBA9876543210"
	braintreeSecs   = []string{"pubnew:webhooktest-private-new", "pubold:webhooktest-private-old"}
	braintreeWrong  = "pubnew:webhooktest-private-wrong"
)

func dropHeader(name string) func(h webhook.HeaderMap, body []byte) (webhook.HeaderMap, []byte) {
	return func(h webhook.HeaderMap, body []byte) (webhook.HeaderMap, []byte) {
		out := webhook.HeaderMap{}
		for k, v := range h {
			if !strings.EqualFold(k, name) {
				out[k] = v
			}
		}
		return out, body
	}
}

func headerMap(h map[string][]string) webhook.HeaderMap {
	out := webhook.HeaderMap{}
	for k, v := range h {
		out[strings.ToLower(k)] = v[0]
	}
	return out
}

func standardKit() Kit {
	return Kit{
		Scheme: webhook.SchemeStandard, Secrets: standardSecrets, Wrong: standardWrong, Stamped: true, RawPayload: true,
		event: func(id string) []byte { return []byte(`{"type":"payment.requested","data":{"note":"` + id + `"}}`) },
		sign: func(secret, id string, ts time.Time, body []byte) (webhook.HeaderMap, []byte, error) {
			h, err := webhook.SignHeaders(webhook.SchemeStandard, []string{secret}, id, ts, body)
			return headerMap(h), body, err
		},
		strip: dropHeader(webhook.HeaderWebhookSignature),
	}
}

func stripeKit() Kit {
	return Kit{
		Scheme: webhook.SchemeStripe, Secrets: plainSecrets, Wrong: plainWrong, Stamped: true, RawPayload: true,
		event: func(id string) []byte {
			return []byte(`{"id":"` + id + `","object":"event","created":1800000000,"type":"payment_intent.succeeded","data":{"object":{"id":"pi_1"}}}`)
		},
		sign: func(secret, id string, ts time.Time, body []byte) (webhook.HeaderMap, []byte, error) {
			h, err := webhook.SignHeaders(webhook.SchemeStripe, []string{secret}, id, ts, body)
			return headerMap(h), body, err
		},
		strip: dropHeader(webhook.HeaderStripeSignature),
	}
}

// hmacKit is a preset that signs the body (and maybe a URL) in one
// header; format holds the identity (or a note, where the identity is a
// header) as %q.
func hmacKit(scheme webhook.Scheme, sigHeader, format string, opts webhook.PresetOptions) Kit {
	return Kit{
		Scheme: scheme, Options: opts, Secrets: plainSecrets, Wrong: plainWrong,
		event: func(id string) []byte { return fmt.Appendf(nil, format, id) },
		sign: func(secret, id string, ts time.Time, body []byte) (webhook.HeaderMap, []byte, error) {
			h, err := webhook.SignPreset(scheme, secret, opts, id, ts, body)
			return headerMap(h), body, err
		},
		strip: dropHeader(sigHeader),
	}
}

// headerIDKit is a kit whose provider names the event only in a header
// that no signature covers: the identity the verifier finds is the
// digest of the signed body, which holds the id as a note.
func headerIDKit(k Kit) Kit {
	k.wantID = func(id string) string { return webhook.BodyDigestID(k.event(id)) }
	return k
}

func paddleKit() Kit {
	k := hmacKit(webhook.SchemePaddle, webhook.HeaderPaddleSignature,
		`{"event_id":%q,"event_type":"transaction.completed","occurred_at":"2026-11-30T10:00:00Z","data":{"id":"txn_1"}}`, webhook.PresetOptions{})
	k.Stamped = true
	return k
}

func gocardlessKit() Kit {
	k := hmacKit(webhook.SchemeGoCardless, webhook.HeaderGoCardlessSignature,
		`{"events":[{"id":%q,"created_at":"2026-11-30T10:00:00.000Z","resource_type":"payments","action":"confirmed","links":{"payment":"PM123"}}]}`, webhook.PresetOptions{})
	k.Batches = true
	k.batch = func(_ Kit, _ string, ids []string, bad int) ([]byte, error) {
		var events []string
		for i, id := range ids {
			if i == bad {
				events = append(events, `{"created_at":"2026-11-30T10:00:00.000Z","resource_type":"payments","action":"confirmed"}`)
				continue
			}
			events = append(events, fmt.Sprintf(`{"id":%q,"created_at":"2026-11-30T10:00:00.000Z","resource_type":"payments","action":"confirmed","links":{"payment":"PM%d"}}`, id, i))
		}
		return []byte(`{"events":[` + strings.Join(events, ",") + `]}`), nil
	}
	return k
}

// adyenItem is one NotificationRequestItem; psp is its pspReference.
func adyenItem(psp string) string {
	return `{"NotificationRequestItem":{"eventCode":"AUTHORISATION","success":"true","pspReference":"` + psp +
		`","merchantAccountCode":"TestMerchant","merchantReference":"TestPayment-1407325143704","amount":{"value":1130,"currency":"EUR"},` +
		`"eventDate":"2026-11-30T10:00:00+01:00","additionalData":{}}}`
}

func adyenKit() Kit {
	return Kit{
		Scheme: webhook.SchemeAdyen, Secrets: adyenSecrets, Wrong: adyenWrong, Batches: true,
		event: func(id string) []byte { return []byte(`{"live":"false","notificationItems":[` + adyenItem(id) + `]}`) },
		sign: func(secret, _ string, _ time.Time, body []byte) (webhook.HeaderMap, []byte, error) {
			signed, err := webhook.SignAdyen(secret, body)
			return webhook.HeaderMap{"content-type": "application/json"}, signed, err
		},
		batch: func(k Kit, secret string, ids []string, bad int) ([]byte, error) {
			var items []string
			for i, id := range ids {
				key := secret
				if i == bad {
					key = k.Wrong
				}
				signed, err := webhook.SignAdyen(key, []byte(`{"notificationItems":[`+adyenItem(id)+`]}`))
				if err != nil {
					return nil, err
				}
				var doc struct {
					Items []json.RawMessage `json:"notificationItems"`
				}
				if err := json.Unmarshal(signed, &doc); err != nil {
					return nil, err
				}
				items = append(items, string(doc.Items[0]))
			}
			return []byte(`{"live":"false","notificationItems":[` + strings.Join(items, ",") + `]}`), nil
		},
		batchSigned: true,
		tamper: func(body []byte) []byte {
			return bytes.Replace(body, []byte(`"value":1130`), []byte(`"value":9130`), 1)
		},
		strip: func(h webhook.HeaderMap, body []byte) (webhook.HeaderMap, []byte) {
			return h, adyenStripSignatures(body)
		},
		wantID: func(id string) string { return "AUTHORISATION:" + id + ":true" },
	}
}

// adyenStripSignatures drops every item's hmacSignature.
func adyenStripSignatures(body []byte) []byte {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return body
	}
	items, _ := doc["notificationItems"].([]any)
	for _, it := range items {
		n, _ := it.(map[string]any)["NotificationRequestItem"].(map[string]any)
		if add, ok := n["additionalData"].(map[string]any); ok {
			delete(add, "hmacSignature")
		}
	}
	out, _ := json.Marshal(doc)
	return out
}

// BraintreeTimestamp is the timestamp of the kits' Braintree
// notifications.
const BraintreeTimestamp = "2026-11-30T10:00:00Z"

func braintreeXML(id string) []byte {
	return []byte(`<?xml version="1.0" encoding="UTF-8"?><notification><kind>subscription_charged_successfully</kind>` +
		`<timestamp type="datetime">` + BraintreeTimestamp + `</timestamp><subject><subscription><id>` + id +
		`</id><status>Active</status></subscription></subject></notification>`)
}

func braintreeKit() Kit {
	return Kit{
		Scheme: webhook.SchemeBraintree, Secrets: braintreeSecs, Wrong: braintreeWrong,
		event: braintreeXML,
		sign: func(secret, _ string, _ time.Time, body []byte) (webhook.HeaderMap, []byte, error) {
			form, err := webhook.SignBraintree(secret, body)
			return webhook.HeaderMap{"content-type": "application/x-www-form-urlencoded"}, []byte(form), err
		},
		tamper: func(body []byte) []byte {
			form, _ := url.ParseQuery(string(body))
			form.Set("bt_payload", base64.StdEncoding.EncodeToString(braintreeXML("sub_forged")))
			return []byte(form.Encode())
		},
		strip: func(h webhook.HeaderMap, body []byte) (webhook.HeaderMap, []byte) {
			form, _ := url.ParseQuery(string(body))
			form.Del("bt_signature")
			return h, []byte(form.Encode())
		},
		wantID: func(id string) string { return "subscription_charged_successfully:" + id + ":" + BraintreeTimestamp },
	}
}

func mollieKit() Kit {
	return Kit{
		Scheme: webhook.SchemeMollie, Unsigned: true,
		event: func(id string) []byte { return []byte("id=tr_" + id) },
		sign: func(_, _ string, _ time.Time, body []byte) (webhook.HeaderMap, []byte, error) {
			return webhook.HeaderMap{"content-type": "application/x-www-form-urlencoded"}, body, nil
		},
		strip:  func(h webhook.HeaderMap, body []byte) (webhook.HeaderMap, []byte) { return h, body },
		wantID: func(id string) string { return "tr_" + id },
	}
}

// PayPalWebhookID is the webhook ID of the kits' PayPal source.
const PayPalWebhookID = "1JE4291016473214C"

func paypalKit(certs *PayPalCerts) Kit {
	opts := webhook.PresetOptions{WebhookID: PayPalWebhookID, CertHosts: []string{certs.Host()}}
	fetcher := webhook.NewCertFetcher(webhook.CertFetcherConfig{Hosts: opts.CertHosts, Roots: certs.Roots, Client: certs.Client(2 * time.Second)})
	n := 0
	return Kit{
		Scheme: webhook.SchemePayPal, Options: opts, Certs: fetcher, Secrets: []string{"cert"}, Wrong: "other-webhook", Stamped: true,
		event: func(id string) []byte {
			return []byte(`{"id":"WH-` + id + `","event_type":"PAYMENT.CAPTURE.COMPLETED","create_time":"2026-11-30T10:00:00Z","resource":{"id":"5O190127TN364715T"}}`)
		},
		// For PayPal the "secret" picks the webhook ID signed: "cert"
		// signs for the configured one, anything else for another.
		sign: func(secret, _ string, ts time.Time, body []byte) (webhook.HeaderMap, []byte, error) {
			webhookID := PayPalWebhookID
			if secret != "cert" {
				webhookID = "9XL90610J3647323C"
			}
			n++
			h, err := webhook.SignPayPal(certs.Key, certs.CertURL(), webhookID, fmt.Sprintf("b2384410-f8d2-11e6-%04d-a6e0b5d7c20f", n), ts, body)
			return headerMap(h), body, err
		},
		strip:  dropHeader(webhook.HeaderPayPalTransmissionSig),
		wantID: func(id string) string { return "WH-" + id },
	}
}
