package webhook

import (
	"fmt"
	"net/url"
	"regexp"
	"time"
)

// Mollie's classic webhooks are not signed at all: the body is a form
// holding one id ("id=tr_..."), and the only safe pattern is to fetch
// the object from Mollie's API before acting on it. The preset takes
// the id as untrusted: its item is marked for fetching, and the payment
// worker fetches, never the receiver. The worker fetches payments only,
// so only a payment id (tr_ and up to 64 letters or digits, the shape
// the worker accepts) is taken; a ping for an order, a subscription, a
// customer or any other object would be queued and never acted on, and
// is refused with 400 ([FieldError] on id). Mollie posts the same id on
// every status change, so the intake key is the id and the second the
// ping arrived, and the worker's key is the id and the status it fetched:
// keying on the bare id would drop a later change as a duplicate. A
// repeated ping costs one more fetch, never a second effect. Mollie
// retries a webhook not answered 200 for a few hours.
// https://docs.mollie.com/overview/webhooks
var molliePreset = preset{}

// mollieIDPattern is the shape of a Mollie payment id, as the payment
// worker's fetcher accepts it.
var mollieIDPattern = regexp.MustCompile(`^tr_[A-Za-z0-9]{1,64}$`)

func verifyMollie(body []byte, now time.Time) (Delivery, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return Delivery{}, fmt.Errorf("want a form: %w", ErrMalformedBody)
	}
	id := form.Get("id")
	if id == "" {
		return Delivery{}, fmt.Errorf("form field id: %w", ErrMissingEventID)
	}
	if !mollieIDPattern.MatchString(id) || len(form) != 1 || len(form["id"]) != 1 {
		return Delivery{}, &FieldError{Field: "id", Reason: "want one Mollie payment id such as tr_d0b0E3EA3v, and nothing else: other objects are never fetched"}
	}
	it, err := newItem(SchemeMollie, []string{id}, 0, nil, 0, []byte(`{"id":"`+id+`"}`), true)
	if err != nil {
		return Delivery{}, err
	}
	it.EventID = id + "@" + now.UTC().Format("20060102T150405Z")
	it.Timestamp, it.Untrusted = now, true
	return Delivery{Items: []Item{it}}, nil
}
