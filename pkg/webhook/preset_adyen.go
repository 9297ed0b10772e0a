package webhook

import (
	"crypto/hmac"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
)

// Adyen sends standard notifications as a batch, {"live":...,
// "notificationItems":[{"NotificationRequestItem":{...}}]}. Each item
// carries its own HMAC in additionalData.hmacSignature: base64
// HMAC-SHA256, keyed by the hex-decoded HMAC key, over
// "pspReference:originalReference:merchantAccountCode:merchantReference:
// value:currency:eventCode:success" (an absent field is empty). There is
// no event ID: an item's identity is eventCode, pspReference and
// success, so that Adyen's retries are duplicates but a later item with
// another outcome is not. No timestamp is signed (eventDate is not one
// of the eight fields). Adyen wants the body
// "[accepted]" within 10 s, and while it has none it retries the batch
// and queues what follows it; so an item whose HMAC fails is refused and
// counted, the items that verify are accepted, and the batch is answered
// "[accepted]" once they are durable. A batch in which no item verifies
// is refused.
// https://docs.adyen.com/development-resources/webhooks/secure-webhooks/verify-hmac-signatures
var adyenPreset = preset{
	decode: adyenKey,
	needs:  []string{FieldSecret},
	ack:    Ack{Status: http.StatusOK, ContentType: "text/plain", Body: AdyenAccepted},
}

// AdyenAccepted is the acknowledgement Adyen expects.
const AdyenAccepted = "[accepted]"

// adyenKey decodes a hex HMAC key.
func adyenKey(secret string) (*macKey, error) {
	raw, err := hex.DecodeString(secret)
	if err != nil || len(raw) == 0 {
		// The decoder's error is dropped: it would point into the secret.
		return nil, fmt.Errorf("want the HMAC key in hex: %w", ErrBadSecret)
	}
	return newMACKey(raw), nil
}

// adyenFields are the members of a NotificationRequestItem read here,
// in this order.
var adyenFields = []string{"pspReference", "originalReference", "merchantAccountCode", "merchantReference", "amount", "eventCode", "success", "additionalData", "eventDate"}

const (
	adyenPSP = iota
	adyenOriginal
	adyenMerchant
	adyenReference
	adyenAmount
	adyenEventCode
	adyenSuccess
	adyenAdditional
	adyenEventDate
	adyenFieldCount
)

func verifyAdyen(body []byte, keys []*macKey) (Delivery, error) {
	var raw [1][]byte
	if err := readMembers(body, []string{"notificationItems"}, raw[:]); err != nil {
		return Delivery{}, err
	}
	if raw[0] == nil {
		return Delivery{}, fmt.Errorf("member \"notificationItems\": absent: %w", ErrMalformedBody)
	}
	var d Delivery
	err := eachElement(raw[0], func(i int, elem []byte) error {
		it, err := adyenItem(elem, keys)
		if err != nil {
			d.Refused = append(d.Refused, ItemError{Index: i, Err: fmt.Errorf("notificationItems[%d]: %w", i, err)})
			return nil
		}
		d.Items = append(d.Items, it)
		return nil
	})
	return d, err
}

// adyenItem verifies and reads one element of notificationItems.
func adyenItem(elem []byte, keys []*macKey) (Item, error) {
	var wrap [1][]byte
	if err := readMembers(elem, []string{"NotificationRequestItem"}, wrap[:]); err != nil {
		return Item{}, err
	}
	if wrap[0] == nil {
		return Item{}, fmt.Errorf("member \"NotificationRequestItem\": absent: %w", ErrMalformedBody)
	}
	var f [adyenFieldCount][]byte
	if err := readMembers(wrap[0], adyenFields, f[:]); err != nil {
		return Item{}, err
	}
	var sigRaw [1][]byte
	if f[adyenAdditional] != nil {
		if err := readMembers(f[adyenAdditional], []string{"hmacSignature"}, sigRaw[:]); err != nil {
			return Item{}, fmt.Errorf("additionalData: %w", err)
		}
	}
	sig, err := textOf(sigRaw[0])
	if err != nil || sig == "" {
		return Item{}, fmt.Errorf("additionalData.hmacSignature: %w", ErrMissingSignature)
	}
	var amount [2][]byte
	if f[adyenAmount] != nil {
		if err := readMembers(f[adyenAmount], []string{"value", "currency"}, amount[:]); err != nil {
			return Item{}, fmt.Errorf("amount: %w", err)
		}
	}
	var text [8]string
	for i, raw := range [8][]byte{f[adyenPSP], f[adyenOriginal], f[adyenMerchant], f[adyenReference], amount[0], amount[1], f[adyenEventCode], f[adyenSuccess]} {
		if text[i], err = textOf(raw); err != nil {
			return Item{}, err
		}
	}
	sum, ok := decodeSum(sig, encBase64)
	if !ok || !adyenMatches(keys, sum[:], &text) {
		return Item{}, ErrBadSignature
	}
	psp, code, success := text[0], text[6], text[7]
	if psp == "" || code == "" {
		return Item{}, fmt.Errorf("pspReference and eventCode: %w", ErrMissingEventID)
	}
	it, err := newItem(SchemeAdyen, []string{code, psp, success}, ':', []string{code}, 0, wrap[0], false)
	if err != nil {
		return Item{}, err
	}
	it.Timestamp = firstTime(f[adyenEventDate])
	return it, nil
}

// adyenMatches reports whether sig is the MAC of the colon-joined
// fields under any key.
func adyenMatches(keys []*macKey, sig []byte, text *[8]string) bool {
	for _, k := range keys {
		st := k.get()
		for i, t := range text {
			if i > 0 {
				st.h.Write(colon)
			}
			st.h.Write(stringBytes(t))
		}
		ok := hmac.Equal(st.h.Sum(st.sum[:0]), sig)
		k.put(st)
		if ok {
			return true
		}
	}
	return false
}

// adyenSigningString is the text Adyen signs for an item's fields, for
// tests and senders.
func adyenSigningString(psp, original, merchant, reference, value, currency, code, success string) string {
	return strings.Join([]string{psp, original, merchant, reference, value, currency, code, success}, ":")
}
