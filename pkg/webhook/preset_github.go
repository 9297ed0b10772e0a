package webhook

import "time"

// GitHub signs the body alone, HMAC-SHA256 keyed by the webhook secret,
// as "sha256=<hex>" in X-Hub-Signature-256. The X-GitHub-Delivery GUID
// is not signed, so the event identity is the body's digest
// ([BodyDigestID]); the GUID is kept as the envelope's header_id, for
// operators. The envelope's type is X-GitHub-Event, unsigned too: it
// must decide nothing. No timestamp is signed. Only JSON payloads
// (content type application/json) are taken.
// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
var githubPreset = preset{
	decode: rawKey,
	needs:  []string{FieldSecret},
}

// GitHub's headers.
const (
	HeaderGitHubSignature = "x-hub-signature-256"
	HeaderGitHubDelivery  = "x-github-delivery"
	HeaderGitHubEvent     = "x-github-event"
)

var githubMAC = headerMAC{name: HeaderGitHubSignature, prefix: "sha256=", enc: encHex}

func verifyGitHub(h Headers, body []byte, keys []*macKey) (Delivery, error) {
	if err := githubMAC.check(h, keys, body); err != nil {
		return Delivery{}, err
	}
	if err := checkJSON(body); err != nil {
		return Delivery{}, err
	}
	it, err := headerIdentified(SchemeGitHub, h, HeaderGitHubDelivery, h.Get(HeaderGitHubEvent), time.Time{}, body)
	if err != nil {
		return Delivery{}, err
	}
	return Delivery{Items: []Item{it}}, nil
}
