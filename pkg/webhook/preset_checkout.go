package webhook

// Checkout.com signs the body alone, HMAC-SHA256 keyed by the signature
// key of the workflow's webhook action, hex in Cko-Signature. The event
// identity is the body's id ("evt_..."). No header time is signed, but
// the body's created_on is: it is the item's time, marked signed, and no
// replay window holds it (the receiver drops a delivery older than the
// intake remembers).
// https://www.checkout.com/docs/developer-resources/webhooks/manage-webhooks/set-up-your-webhook-receiver
var checkoutPreset = preset{
	decode: rawKey,
	needs:  []string{FieldSecret},
}

// HeaderCheckoutSignature is Checkout.com's signature header.
const HeaderCheckoutSignature = "cko-signature"

var checkoutMAC = headerMAC{name: HeaderCheckoutSignature, enc: encHex}

func verifyCheckout(h Headers, body []byte, keys []*macKey) (Delivery, error) {
	if err := checkoutMAC.check(h, keys, body); err != nil {
		return Delivery{}, err
	}
	id, typ, ts, err := bodyFields(body, "id", "type", "created_on")
	if err != nil {
		return Delivery{}, err
	}
	return singleSigned(SchemeCheckout, id, typ, ts, body)
}
