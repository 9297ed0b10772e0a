package webhook

import (
	"fmt"
)

// GoCardless signs the body alone, HMAC-SHA256 keyed by the webhook
// endpoint's secret, hex in Webhook-Signature. A body is a batch,
// {"events":[...]}, and each event carries its own id: the identity of
// its item. Its created_at, signed with the batch and held to no replay
// window, is the item's time, marked signed. GoCardless wants 498 for a bad
// signature and retries a webhook that is not answered 2xx; since the
// signature covers the whole batch, an item that is unusable on its own
// (no id) is refused and counted, and the rest are accepted, so that one
// bad event cannot make GoCardless resend the batch until it gives up.
// An event names its object (links.payment) but carries no amount, so
// each item is queued with "fetch":true: the payment worker fetches the
// payment from GoCardless's API before acting on it.
// https://developer.gocardless.com/getting-started/staying-up-to-date-with-webhooks
var gocardlessPreset = preset{
	decode: rawKey,
	needs:  []string{FieldSecret},
}

// HeaderGoCardlessSignature is GoCardless's signature header.
const HeaderGoCardlessSignature = "webhook-signature"

// StatusTokenInvalid is the status GoCardless asks for on a bad
// signature.
const StatusTokenInvalid = 498

var gocardlessMAC = headerMAC{name: HeaderGoCardlessSignature, enc: encHex}

func verifyGoCardless(h Headers, body []byte, keys []*macKey) (Delivery, error) {
	if err := gocardlessMAC.check(h, keys, body); err != nil {
		return Delivery{}, err
	}
	var raw [1][]byte
	if err := readMembers(body, []string{"events"}, raw[:]); err != nil {
		return Delivery{}, err
	}
	if raw[0] == nil {
		return Delivery{}, fmt.Errorf("member \"events\": absent: %w", ErrMalformedBody)
	}
	var d Delivery
	err := eachElement(raw[0], func(i int, elem []byte) error {
		it, err := gocardlessItem(elem)
		if err != nil {
			d.Refused = append(d.Refused, ItemError{Index: i, Err: fmt.Errorf("events[%d]: %w", i, err)})
			return nil
		}
		d.Items = append(d.Items, it)
		return nil
	})
	return d, err
}

// gocardlessItem reads one event of a batch.
func gocardlessItem(elem []byte) (Item, error) {
	var raw [4][]byte
	if err := readMembers(elem, []string{"id", "resource_type", "action", "created_at"}, raw[:]); err != nil {
		return Item{}, err
	}
	id, err := textOf(raw[0])
	if err != nil {
		return Item{}, fmt.Errorf("member \"id\": %w", err)
	}
	if err := checkEventID(id); err != nil {
		return Item{}, fmt.Errorf("member \"id\": %w", err)
	}
	resource, _ := textOf(raw[1])
	action, _ := textOf(raw[2])
	typ := []string{resource, action}
	if action == "" {
		typ = typ[:1]
	}
	it, err := newItem(SchemeGoCardless, []string{id}, 0, typ, '.', elem, true)
	if err != nil {
		return Item{}, err
	}
	it.Timestamp = firstTime(raw[3])
	it.TimeSigned = !it.Timestamp.IsZero()
	return it, nil
}
