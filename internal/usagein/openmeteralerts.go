package usagein

import (
	"github.com/hookline/hookline/pkg/provider"
)

// FormatOpenMeterAlerts is one OpenMeter notification per request, signed
// with Standard Webhooks (OpenMeter delivers through Svix, under Svix's
// header names): entitlements.balance.threshold is an alert
// ([OutcomeAlert]), keyed by the notification's ID, which the spend
// worker compares with the ledger over the entitlement's current usage
// period; every other type (entitlements.reset, invoice.*) is not usage.
const FormatOpenMeterAlerts = "openmeter-alerts"

// OpenMeterAlertType is the notification type a [FormatOpenMeterAlerts]
// source reads as an alert.
const OpenMeterAlertType = "entitlements.balance.threshold"

// readOpenMeterNotification reads one verified OpenMeter notification: an
// object with an id (a ULID) and a type, keyed by its id, read as a
// Stripe event's head is ([readStripeEvent]: no member twice, an id, a
// type). Svix sends every attempt with the same bytes, so the alert
// carries the body as it came, compacted.
func readOpenMeterNotification(doc provider.JSON, body []byte) (Item, error) {
	if doc.Kind() != provider.JSONObject {
		return Item{}, &provider.FieldError{Reason: "want an OpenMeter notification (a JSON object), got " + doc.Describe()}
	}
	it, err := readStripeEvent(doc, body)
	if err != nil {
		return Item{}, err
	}
	// Only OpenMeter's threshold type is an alert here, whatever Stripe's is.
	it.Record.Outcome, it.Record.Alert = OutcomeNotUsage, ""
	if it.Record.Type != OpenMeterAlertType {
		return it, nil
	}
	alert, err := stableEvent(body)
	if err != nil {
		return Item{}, err
	}
	it.Record.Outcome, it.Record.Alert = OutcomeAlert, string(alert)
	return it, nil
}
