package webhook_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/webhook"
	"github.com/hookline/hookline/pkg/webhook/webhooktest"
)

// braintreeNotification is a subscription notification with n
// transactions, the shape that grows with a subscription's history.
func braintreeNotification(n int) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<notification>` + "\n" + `  <kind>subscription_charged_successfully</kind>` + "\n" +
		`  <timestamp type="datetime">2026-11-30T10:00:00Z</timestamp>` + "\n" + `  <subject>` + "\n" + `    <subscription>` + "\n" +
		`      <id>sub_big</id>` + "\n" + `      <transactions type="array">` + "\n")
	for range n {
		b.WriteString(`        <transaction>` + "\n" + `          <id>txn_8f2k1</id>` + "\n" + `          <amount>10.00</amount>` + "\n" +
			`          <status>settled</status>` + "\n" + `          <created-at type="datetime">2026-11-30T10:00:00Z</created-at>` + "\n" +
			`          <customer><first-name>Ada</first-name><last-name>Lovelace &amp; Co</last-name></customer>` + "\n" + `        </transaction>` + "\n")
	}
	b.WriteString(`      </transactions>` + "\n" + `    </subscription>` + "\n" + `  </subject>` + "\n" + `</notification>` + "\n")
	return []byte(b.String())
}

// TestABraintreeMessageIsNoLargerThanItsBody: Braintree's XML travels
// base64 inside the form it posts, so the XML is at most 3/4 of the
// body. Held as a JSON string in the queue message, only '"', '\' and
// the line breaks take two bytes: the message of a real notification is
// smaller than its body, whatever markup it holds.
func TestABraintreeMessageIsNoLargerThanItsBody(t *testing.T) {
	const secret = "pub:private-key"
	for _, n := range []int{1, 100, 400} {
		// Given a signed notification with n transactions
		form, err := webhook.SignBraintree(secret, braintreeNotification(n))
		if err != nil {
			t.Fatal(err)
		}
		v, err := webhook.NewVerifier(webhook.VerifierConfig{Scheme: webhook.SchemeBraintree, MaxBody: webhook.MaxBodyLimit,
			Now: func() time.Time { return time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC) }})
		if err != nil {
			t.Fatal(err)
		}
		// when it is verified
		d, err := v.VerifyDelivery(webhook.HeaderMap{}, []byte(form), []string{secret})
		if err != nil {
			t.Fatal(err)
		}
		// then its queue message is smaller than the body
		if got := len(d.Items[0].Payload); got >= len(form) {
			t.Fatalf("%d transactions: a %d-byte body makes a %d-byte message (%.2f×)", n, len(form), got, float64(got)/float64(len(form)))
		}
	}
}

// TestAnEventTypeLongerThan255BytesIsRefused: an item's type is copied
// into its queue message beside the item, so it is bounded as an event ID
// is: a provider's event types are short names, and a longer one is a
// malformed delivery.
func TestAnEventTypeLongerThan255BytesIsRefused(t *testing.T) {
	now := time.Now()
	for _, n := range []int{255, 256} {
		typ := strings.Repeat("t", n)
		// Given a signed delivery whose type is n bytes, in the body
		// (Checkout.com) and in a header (GitHub),
		body := []byte(`{"id":"evt_long_type","type":"` + typ + `","created_on":"2026-11-30T10:00:00Z"}`)
		ck, err := webhook.SignPreset(webhook.SchemeCheckout, "cko-secret", webhook.PresetOptions{}, "", now, body)
		if err != nil {
			t.Fatal(err)
		}
		gh, err := webhook.SignPreset(webhook.SchemeGitHub, "gh-secret", webhook.PresetOptions{}, "72d3162e-cc78-11e3-81ab-4c9367dc0958", now, body)
		if err != nil {
			t.Fatal(err)
		}
		gh.Set(webhook.HeaderGitHubEvent, typ)
		for _, d := range []struct {
			scheme webhook.Scheme
			h      webhook.Headers
			secret string
		}{{webhook.SchemeCheckout, ck, "cko-secret"}, {webhook.SchemeGitHub, gh, "gh-secret"}} {
			// when it is verified,
			_, err := presetVerifier(t, d.scheme, webhook.PresetOptions{}, now).VerifyDelivery(d.h, body, []string{d.secret})
			// then it is refused as malformed exactly when the type is
			// over 255 bytes
			if refused := errors.Is(err, webhook.ErrMalformedBody); refused != (n > 255) || (err != nil && !refused) {
				t.Fatalf("%s, a %d-byte type: %v", d.scheme, n, err)
			}
		}
	}
}

// TestEveryMessageIsWithinItsSchemesBound: the queue message of each
// item is at most Scheme.MaxPayload of the body it came in, for every
// kit's delivery and for deliveries built to make the message as large
// as a body allows: the longest type, escaped at six bytes a byte, and
// the longest identity and header ID, escaped at two; Braintree's XML of
// quotes and line breaks.
func TestEveryMessageIsWithinItsSchemesBound(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	type delivery struct {
		name   string
		scheme webhook.Scheme
		h      webhook.Headers
		body   []byte
		v      *webhook.Verifier
		keys   []string
	}
	var ds []delivery
	for _, k := range webhooktest.Kits(t) {
		secret := ""
		if len(k.Secrets) > 0 {
			secret = k.Secrets[0]
		}
		h, body, err := k.Delivery(secret, "evtBound1", now)
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, delivery{"kit", k.Scheme, h, body, verifierFor(t, k, now), k.Secrets})
	}
	// GitHub: a tiny body, the longest type and header ID, each byte
	// escaped at its longest
	gh, err := webhook.SignPreset(webhook.SchemeGitHub, "gh-secret", webhook.PresetOptions{}, strings.Repeat(`"`, 255), now, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	gh.Set(webhook.HeaderGitHubEvent, strings.Repeat("\x01", 255))
	ds = append(ds, delivery{"longest envelope", webhook.SchemeGitHub, gh, []byte(`{}`),
		presetVerifier(t, webhook.SchemeGitHub, webhook.PresetOptions{}, now), []string{"gh-secret"}})
	// Braintree: XML whose text is quotes and line breaks
	xml := []byte(`<notification><kind>check</kind><timestamp>2026-11-30T10:00:00Z</timestamp><note>` +
		strings.Repeat("\"\n\\\r", 5000) + `</note></notification>`)
	form, err := webhook.SignBraintree("pub:private-key", xml)
	if err != nil {
		t.Fatal(err)
	}
	ds = append(ds, delivery{"escaped XML", webhook.SchemeBraintree, webhook.HeaderMap{}, []byte(form),
		presetVerifier(t, webhook.SchemeBraintree, webhook.PresetOptions{}, now), []string{"pub:private-key"}})
	for _, d := range ds {
		t.Run(string(d.scheme)+" "+d.name, func(t *testing.T) {
			got, err := d.v.VerifyDelivery(d.h, d.body, d.keys)
			if err != nil {
				t.Fatal(err)
			}
			bound := d.scheme.MaxPayload(int64(len(d.body)))
			for _, it := range got.Items {
				if int64(len(it.Payload)) > bound {
					t.Fatalf("a %d-byte body made a %d-byte message, over the bound %d", len(d.body), len(it.Payload), bound)
				}
			}
		})
	}
}

// TestMaxBodyForIsTheLargestBodyWithinALimit: for every scheme and a
// message limit, MaxBodyFor is the largest body whose messages stay
// within it.
func TestMaxBodyForIsTheLargestBodyWithinALimit(t *testing.T) {
	const limit = 258048
	for _, s := range webhook.Schemes() {
		n := s.MaxBodyFor(limit)
		if s.MaxPayload(n) > limit || (n < webhook.MaxBodyLimit && s.MaxPayload(n+1) <= limit) {
			t.Fatalf("%s: MaxBodyFor(%d) = %d, whose messages take up to %d (and %d one byte more)", s, limit, n, s.MaxPayload(n), s.MaxPayload(n+1))
		}
	}
	if n := webhook.SchemeGitHub.MaxBodyFor(100); n != 0 {
		t.Fatalf("a limit below any envelope gives %d, want 0", n)
	}
}
