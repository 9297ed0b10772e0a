package webhook

import "time"

// Shopify signs the body alone, HMAC-SHA256 keyed by the app's client
// secret, base64 in X-Shopify-Hmac-Sha256. The event identity is
// X-Shopify-Event-Id, the same on every retry of one event; no
// timestamp is signed (X-Shopify-Triggered-At is not).
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
	id, err := headerID(h, HeaderShopifyEventID)
	if err != nil {
		return Delivery{}, err
	}
	if err := checkJSON(body); err != nil {
		return Delivery{}, err
	}
	ts, _ := time.Parse(time.RFC3339Nano, h.Get(HeaderShopifyTriggered))
	return single(SchemeShopify, id, h.Get(HeaderShopifyTopic), ts.UTC(), body)
}
