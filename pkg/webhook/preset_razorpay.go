package webhook

// Razorpay signs the body alone, HMAC-SHA256 keyed by the webhook secret,
// hex in X-Razorpay-Signature. X-Razorpay-Event-Id is not signed, so the
// event identity is the body's digest ([BodyDigestID]); the header's ID
// is kept as the envelope's header_id, for operators. No header time is
// signed, but the body's created_at (Unix seconds) is: it is the item's
// time, marked signed, and no replay window holds it.
// https://razorpay.com/docs/webhooks/validate-test/
var razorpayPreset = preset{
	decode: rawKey,
	needs:  []string{FieldSecret},
}

// Razorpay's headers.
const (
	HeaderRazorpaySignature = "x-razorpay-signature"
	HeaderRazorpayEventID   = "x-razorpay-event-id"
)

var razorpayMAC = headerMAC{name: HeaderRazorpaySignature, enc: encHex}

func verifyRazorpay(h Headers, body []byte, keys []*macKey) (Delivery, error) {
	if err := razorpayMAC.check(h, keys, body); err != nil {
		return Delivery{}, err
	}
	_, typ, ts, err := bodyFields(body, "", "event", "created_at")
	if err != nil {
		return Delivery{}, err
	}
	it, err := headerIdentified(SchemeRazorpay, h, HeaderRazorpayEventID, typ, ts, body)
	if err != nil {
		return Delivery{}, err
	}
	it.TimeSigned = !ts.IsZero()
	return Delivery{Items: []Item{it}}, nil
}
