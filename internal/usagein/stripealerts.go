package usagein

import (
	"encoding/json"

	"github.com/hookline/hookline/pkg/provider"
)

// StripeAlertType is the Stripe event type a [FormatStripeAlerts] source
// reads as an alert.
const StripeAlertType = "billing.alert.triggered"

// stripeUnstable are the members of a Stripe event that differ between
// deliveries of the one event: pending_webhooks counts the endpoints
// still to deliver it to.
var stripeUnstable = []string{"pending_webhooks"}

// readStripeEvent reads one Stripe event, whose signature the door
// verified: an object with an id and a type, keyed by its id. A
// billing.alert.triggered event is an [OutcomeAlert] carrying the event;
// any other type is not usage. The event's own fields are read by the
// spend worker, which knows the sums sources.
func readStripeEvent(doc provider.JSON, body []byte) (Item, error) {
	if doc.Kind() != provider.JSONObject {
		return Item{}, &provider.FieldError{Reason: "want a Stripe event (a JSON object), got " + doc.Describe()}
	}
	if d := doc.Duplicate(); d != "" {
		return Item{}, &provider.FieldError{Field: d, Reason: "member given twice"}
	}
	id, err := idAt(doc, "/id")
	if err != nil {
		return Item{}, err
	}
	typ, err := stringAt(doc, "/type", true)
	if err != nil {
		return Item{}, err
	}
	rec := Record{Outcome: OutcomeNotUsage, Type: typ, RecordID: id}
	if typ != StripeAlertType {
		return Item{EventID: id, Record: rec}, nil
	}
	event, err := stableEvent(body)
	if err != nil {
		return Item{}, err
	}
	rec.Alert = string(event)
	rec.Outcome = OutcomeAlert
	return Item{EventID: id, Record: rec}, nil
}

// stableEvent is the event without the members that differ between its
// deliveries, so that a retry's envelope is the first one's and the
// intake takes it for a duplicate. The members are written in name order,
// each value compact.
func stableEvent(body []byte) (json.RawMessage, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		return nil, &provider.FieldError{Reason: "not a JSON object: " + err.Error()}
	}
	for _, name := range stripeUnstable {
		delete(members, name)
	}
	out, err := encodeJSON(members)
	if err != nil {
		return nil, &provider.FieldError{Reason: err.Error()}
	}
	return out, nil
}
