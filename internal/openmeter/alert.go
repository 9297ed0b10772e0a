package openmeter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hookline/hookline/internal/usagein"
)

// AlertType is the notification an OpenMeter alerts source reads as an
// alert.
const AlertType = "entitlements.balance.threshold"

// Alert errors.
var (
	// ErrNotAlert means a notification of another type.
	ErrNotAlert = errors.New("openmeter: not an entitlements.balance.threshold notification")
	// ErrBadAlert means a threshold notification that cannot be compared
	// with the ledger; it comes in an [*AlertError].
	ErrBadAlert = errors.New("openmeter: bad threshold notification")
)

// AlertError names the field of a refused notification.
type AlertError struct {
	Field, Reason string
}

func (e *AlertError) Error() string { return "openmeter: " + e.Field + ": " + e.Reason }

// Unwrap returns [ErrBadAlert].
func (e *AlertError) Unwrap() error { return ErrBadAlert }

// Alert is an entitlements.balance.threshold notification: a subject's
// usage of a feature's meter in the entitlement's current usage period
// reached Usage. The period resets, so the alert is compared with the
// ledger over [PeriodFrom, PeriodTo) only.
type Alert struct {
	// EventID is the notification event's ID (a ULID): its identity.
	EventID   string
	Timestamp time.Time
	// Entitlement is the entitlement's ID; Feature its feature's key.
	Entitlement, Feature string
	// Meter is the feature's meter slug.
	Meter string
	// Subject is the subject's key; Customer the customer's key, if any.
	Subject, Customer string
	// Usage is value.usage, the feature's usage in the current period, as
	// OpenMeter wrote it (exact decimal text, read by [Alert.Units]).
	Usage string
	// Threshold and ThresholdType are the rule's threshold that fired.
	Threshold, ThresholdType string
	// PeriodFrom and PeriodTo are the entitlement's currentUsagePeriod.
	PeriodFrom, PeriodTo time.Time
}

// notification is the payload's shape (NotificationEventBalanceThresholdPayload).
type notification struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      struct {
		Entitlement struct {
			ID                 string `json:"id"`
			CurrentUsagePeriod *struct {
				From time.Time `json:"from"`
				To   time.Time `json:"to"`
			} `json:"currentUsagePeriod"`
		} `json:"entitlement"`
		Feature struct {
			Key       string `json:"key"`
			MeterSlug string `json:"meterSlug"`
		} `json:"feature"`
		Subject struct {
			Key string `json:"key"`
		} `json:"subject"`
		Customer *struct {
			Key string `json:"key"`
		} `json:"customer"`
		Value struct {
			Usage *json.Number `json:"usage"`
		} `json:"value"`
		Threshold struct {
			Value json.Number `json:"value"`
			Type  string      `json:"type"`
		} `json:"threshold"`
	} `json:"data"`
}

// ParseAlert reads an OpenMeter notification of type
// entitlements.balance.threshold whose signature was verified. Another
// type is [ErrNotAlert]; a missing or bad field an [*AlertError].
func ParseAlert(body []byte) (Alert, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var n notification
	if err := dec.Decode(&n); err != nil {
		return Alert{}, &AlertError{Field: "(payload)", Reason: "not a notification: " + err.Error()}
	}
	if n.Type != AlertType {
		return Alert{}, fmt.Errorf("%w: type %q", ErrNotAlert, n.Type)
	}
	d := n.Data
	for _, f := range []struct{ name, value string }{{"id", n.ID}, {"data.entitlement.id", d.Entitlement.ID},
		{"data.feature.meterSlug", d.Feature.MeterSlug}, {"data.subject.key", d.Subject.Key}} {
		if f.value == "" {
			return Alert{}, &AlertError{Field: f.name, Reason: "required"}
		}
	}
	switch p := d.Entitlement.CurrentUsagePeriod; {
	case d.Value.Usage == nil:
		return Alert{}, &AlertError{Field: "data.value.usage", Reason: "required: a metered entitlement's usage in its period"}
	case p == nil || p.From.IsZero() || p.To.IsZero():
		return Alert{}, &AlertError{Field: "data.entitlement.currentUsagePeriod", Reason: "required, with from and to"}
	case !p.To.After(p.From):
		return Alert{}, &AlertError{Field: "data.entitlement.currentUsagePeriod", Reason: "to is not after from"}
	}
	a := Alert{EventID: n.ID, Timestamp: n.Timestamp, Entitlement: d.Entitlement.ID, Feature: d.Feature.Key,
		Meter: d.Feature.MeterSlug, Subject: d.Subject.Key, Usage: d.Value.Usage.String(),
		Threshold: d.Threshold.Value.String(), ThresholdType: d.Threshold.Type,
		PeriodFrom: d.Entitlement.CurrentUsagePeriod.From.UTC(), PeriodTo: d.Entitlement.CurrentUsagePeriod.To.UTC()}
	if d.Customer != nil {
		a.Customer = d.Customer.Key
	}
	return a, nil
}

// Units is the alert's usage in ledger units at a meter's scale, read
// exactly ([usagein.ScaleDecimal]).
func (a Alert) Units(scale int64) (int64, error) {
	n, err := usagein.ScaleDecimal(a.Usage, max(scale, 1))
	if err != nil {
		return 0, &AlertError{Field: "data.value.usage", Reason: err.Error()}
	}
	return n, nil
}
