package webhook

// Square signs the notification URL followed by the body, HMAC-SHA256
// keyed by the subscription's signature key, base64 in
// x-square-hmacsha256-signature. The URL is the one configured at
// Square, so it is a required field (signed_url): a custom domain or a
// proxy that rewrites the URL would otherwise break every check. The
// event identity is the body's event_id. The body's created_at is
// signed: it is the item's time, marked signed, and no replay window
// holds it (square-initial-delivery-timestamp is not signed).
// https://developer.squareup.com/docs/webhooks/step3validate
var squarePreset = preset{
	decode: rawKey,
	needs:  []string{FieldSecret, FieldSignedURL},
}

// HeaderSquareSignature is Square's signature header.
const HeaderSquareSignature = "x-square-hmacsha256-signature"

var squareMAC = headerMAC{name: HeaderSquareSignature, enc: encBase64}

func verifySquare(h Headers, body []byte, keys []*macKey, signedURL string) (Delivery, error) {
	if err := squareMAC.check(h, keys, stringBytes(signedURL), body); err != nil {
		return Delivery{}, err
	}
	id, typ, ts, err := bodyFields(body, "event_id", "type", "created_at")
	if err != nil {
		return Delivery{}, err
	}
	return singleSigned(SchemeSquare, id, typ, ts, body)
}
