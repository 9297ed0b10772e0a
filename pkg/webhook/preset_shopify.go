package webhook

import "time"

// Shopify signs the body alone, HMAC-SHA256 keyed by the app's client
// secret, base64 in X-Shopify-Hmac-Sha256. X-Shopify-Event-Id is not
// signed, so the event identity is the body's digest ([BodyDigestID]);
// the header's ID is kept as the envelope's header_id, for operators.
// The envelope's type is X-Shopify-Topic, unsigned too: it must decide
// nothing. No timestamp is signed (X-Shopify-Triggered-At is not).
// https://shopify.dev/docs/apps/build/webhooks/subscribe/https and
// https://shopify.dev/docs/apps/build/webhooks/ignore-duplicates
var shopifyPreset = preset{
	decode: rawKey,
	needs:  []string{FieldSecret},
}

// Shopify's headers.
const (
	HeaderShopifyHMAC      = "x-shopify-hmac-sha256"
	HeaderShopifyEventID   = "x-shopify-event-id"
	HeaderShopifyTopic     = "x-shopify-topic"
	HeaderShopifyTriggered = "x-shopify-triggered-at"
)

var shopifyMAC = headerMAC{name: HeaderShopifyHMAC, enc: encBase64}

func verifyShopify(h Headers, body []byte, keys []*macKey) (Delivery, error) {
	if err := shopifyMAC.check(h, keys, body); err != nil {
		return Delivery{}, err
	}
	if err := checkJSON(body); err != nil {
		return Delivery{}, err
	}
	ts, _ := time.Parse(time.RFC3339Nano, h.Get(HeaderShopifyTriggered))
	it, err := headerIdentified(SchemeShopify, h, HeaderShopifyEventID, h.Get(HeaderShopifyTopic), ts.UTC(), body)
	if err != nil {
		return Delivery{}, err
	}
	return Delivery{Items: []Item{it}}, nil
}
