package webhook_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/webhook"
)

// headerIdentified are the presets whose provider names the event only in
// a header that no signature covers, with a body of each and that header.
var headerIdentified = []struct {
	scheme   webhook.Scheme
	idHeader string
	body     string
	typ      string
}{
	{webhook.SchemeGitHub, webhook.HeaderGitHubDelivery, `{"action":"completed","check_run":{"id":4}}`, "ping"},
	{webhook.SchemeShopify, webhook.HeaderShopifyEventID, `{"id":820982911946154508,"total_price":"10.00"}`, ""},
	{webhook.SchemeRazorpay, webhook.HeaderRazorpayEventID, `{"entity":"event","event":"payment.captured","created_at":1800000000,"payload":{}}`, "payment.captured"},
}

// signedByHeader is a verifier of scheme and a delivery of body signed
// with secret, sent under the ID header id.
func signedByHeader(t *testing.T, scheme webhook.Scheme, secret, id, body string) (*webhook.Verifier, webhook.HeaderMap, []byte) {
	t.Helper()
	signed, err := webhook.SignPreset(scheme, secret, webhook.PresetOptions{}, id, time.Now(), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	h := webhook.HeaderMap{}
	for k := range signed {
		h[strings.ToLower(k)] = signed.Get(k)
	}
	return presetVerifier(t, scheme, webhook.PresetOptions{}, time.Now()), h, []byte(body)
}

// TestAHeaderIDIsNotTheIdentity: GitHub, Shopify and Razorpay sign the
// body alone, so the ID header can be changed on a captured delivery.
// The identity is the digest of the signed body; the header's ID rides
// along as header_id and as the legacy identity, and decides nothing:
// another ID, an API Gateway-joined pair of IDs, or none at all, is the
// same event.
func TestAHeaderIDIsNotTheIdentity(t *testing.T) {
	const secret = "header-id-secret"
	for _, p := range headerIdentified {
		t.Run(string(p.scheme), func(t *testing.T) {
			v, signed, body := signedByHeader(t, p.scheme, secret, "evt-first", p.body)
			sum := sha256.Sum256(body)
			want := "sha256:" + hex.EncodeToString(sum[:])
			// Given one signed body sent under several ID headers
			for _, tc := range []struct{ header, wantHeaderID, wantLegacy string }{
				{"evt-first", "evt-first", "evt-first"},
				{"evt-second", "evt-second", "evt-second"},
				{"evt-first, evt-third", "", ""},
				{"evt-first,evt-third", "evt-first,evt-third", "evt-first,evt-third"},
				{"", "", ""},
			} {
				h := maps.Clone(signed)
				h[p.idHeader] = tc.header
				// When each is verified
				d, err := v.VerifyDelivery(h, body, []string{secret})
				if err != nil {
					t.Fatalf("ID header %q: %v", tc.header, err)
				}
				// Then the identity is the body's digest every time
				it := d.Items[0]
				if it.EventID != want || !it.DigestID {
					t.Fatalf("ID header %q: event id %q (digest %v), want %q", tc.header, it.EventID, it.DigestID, want)
				}
				var env webhook.ItemEnvelope
				if err := json.Unmarshal(it.Payload, &env); err != nil {
					t.Fatal(err)
				}
				// and the header's ID is kept apart, for operators only
				if env.ID != want || env.HeaderID != tc.wantHeaderID || it.LegacyEventID != tc.wantLegacy || string(env.Item) != p.body {
					t.Fatalf("ID header %q: envelope %+v, legacy %q; want id %q, header_id %q, legacy %q",
						tc.header, env, it.LegacyEventID, want, tc.wantHeaderID, tc.wantLegacy)
				}
				if got := webhook.BodyDigestID(body); got != want {
					t.Fatalf("BodyDigestID = %q, want %q", got, want)
				}
			}
		})
	}
}

// TestTheLegacyPayloadIsWhatTheBuildBeforeTheDigestQueued: a record of
// the build that keyed these presets by the header's ID holds the
// envelope it built then; LegacyPayload rebuilds it byte for byte, so
// that a retry can be matched to that record and to nothing else.
func TestTheLegacyPayloadIsWhatTheBuildBeforeTheDigestQueued(t *testing.T) {
	const secret = "legacy-secret"
	for _, p := range headerIdentified {
		t.Run(string(p.scheme), func(t *testing.T) {
			v, h, body := signedByHeader(t, p.scheme, secret, "evt-legacy-1", p.body)
			d, err := v.VerifyDelivery(h, body, []string{secret})
			if err != nil {
				t.Fatal(err)
			}
			typ := ""
			if p.typ != "" {
				typ = `,"type":"` + p.typ + `"`
			}
			want := `{"provider":"` + string(p.scheme) + `","id":"evt-legacy-1"` + typ + `,"item":` + p.body + `}`
			if got := string(d.Items[0].LegacyPayload()); got != want {
				t.Fatalf("legacy payload\n%s\nwant\n%s", got, want)
			}
		})
	}
}
