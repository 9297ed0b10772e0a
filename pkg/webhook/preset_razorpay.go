package webhook

// Razorpay signs the body alone, HMAC-SHA256 keyed by the webhook secret,
// hex in X-Razorpay-Signature. The event identity is the
// X-Razorpay-Event-Id header, apart from the signature and the same on
// every retry; no timestamp is signed.
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
	id, err := headerID(h, HeaderRazorpayEventID)
	if err != nil {
		return Delivery{}, err
	}
	_, typ, ts, err := bodyFields(body, "", "event", "created_at")
	if err != nil {
		return Delivery{}, err
	}
	return single(SchemeRazorpay, id, typ, ts, body)
}
