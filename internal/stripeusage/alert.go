package stripeusage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/usagein"
)

// Alert is a billing.alert.triggered event: a customer's usage on a meter
// crossed an alert's threshold.
type Alert struct {
	// EventID is the event's evt_ ID, the alert's identity.
	EventID string
	// AlertID is the alert's ID.
	AlertID string
	// Meter is the alert's usage_threshold.meter ID when the event holds
	// the alert's object; "" when it holds only the alert's ID.
	Meter    string
	Customer string
	// Value is the value that triggered the alert, as Stripe wrote it: an
	// exact decimal text, read by [Alert.Units].
	Value string
	// Created is the event's creation time.
	Created  time.Time
	Livemode bool
	// Account is the connected account the event came from, if any.
	Account string
}

// maxValueLen bounds the value's text; [usagein.ScaleDecimal] takes no
// longer one either.
const maxValueLen = 64

// triggered is the event's data.object (stripe.BillingAlertTriggered),
// with the alert (an ID or an object) and the value (an integer in
// stripe-go, a decimal string in Stripe's preview API) kept raw to be read
// exactly.
type triggered struct {
	Customer string          `json:"customer"`
	Livemode bool            `json:"livemode"`
	Alert    json.RawMessage `json:"alert"`
	Value    json.RawMessage `json:"value"`
}

// ParseAlert reads a Stripe event of type billing.alert.triggered. The
// body's signature must have been verified first. An event of another
// type is [ErrNotAlert]; a refused field is a [*FieldError]
// wrapping [ErrBadAlert].
func ParseAlert(body []byte) (Alert, error) {
	var ev event
	if err := json.Unmarshal(body, &ev); err != nil {
		return Alert{}, alertError("(event)", "not a Stripe event: "+err.Error())
	}
	if ev.Type != eventTypeAlertTriggered {
		return Alert{}, fmt.Errorf("%w: type %q", ErrNotAlert, ev.Type)
	}
	if ev.ID == "" {
		return Alert{}, alertError("id", "missing")
	}
	if ev.Data == nil || len(ev.Data.Raw) == 0 {
		return Alert{}, alertError("data.object", "missing")
	}
	var obj triggered
	if err := json.Unmarshal(ev.Data.Raw, &obj); err != nil {
		return Alert{}, alertError("data.object", err.Error())
	}
	a := Alert{EventID: ev.ID, Customer: obj.Customer, Created: time.Unix(ev.Created, 0).UTC(),
		Livemode: ev.Livemode, Account: ev.Account}
	var err error
	if a.AlertID, a.Meter, err = readAlert(obj.Alert); err != nil {
		return Alert{}, err
	}
	if a.Value, err = readValue(obj.Value); err != nil {
		return Alert{}, err
	}
	switch {
	case a.Customer == "":
		return Alert{}, alertError("data.object.customer", "missing")
	case obj.Livemode != ev.Livemode:
		return Alert{}, alertError("data.object.livemode", "differs from the event's livemode")
	}
	return a, nil
}

// readAlert reads data.object.alert: the alert's ID, or its object with
// the meter of its usage threshold.
func readAlert(raw json.RawMessage) (id, meter string, err error) {
	var alert billingAlert
	if bytes.HasPrefix(raw, []byte(`"`)) {
		err = json.Unmarshal(raw, &alert.ID)
	} else {
		err = json.Unmarshal(raw, &alert)
	}
	if err != nil || alert.ID == "" {
		return "", "", alertError("data.object.alert", "want an alert ID or an alert object with an id")
	}
	if t := alert.UsageThreshold; t != nil && t.Meter != nil {
		meter = t.Meter.ID
	}
	return alert.ID, meter, nil
}

// readValue reads data.object.value exactly: a JSON number (12, 12.5) or
// a string holding one ("12.5"), not negative.
func readValue(raw json.RawMessage) (string, error) {
	text := string(bytes.TrimSpace(raw))
	if strings.HasPrefix(text, `"`) {
		if err := json.Unmarshal(raw, &text); err != nil {
			text = ""
		}
	}
	if !isDecimal(text) {
		return "", alertError("data.object.value",
			"want a non-negative decimal number, such as 12, 12.5 or \"12.5\"")
	}
	return text, nil
}

// isDecimal reports whether text is a JSON number without a sign and
// without space around it.
func isDecimal(text string) bool {
	return text != "" && len(text) <= maxValueLen && text[0] >= '0' && text[0] <= '9' &&
		strings.TrimSpace(text) == text && json.Valid([]byte(text))
}

// Units is the value times scale, exactly: a value that is not a whole
// number of units at that scale (12.5 at scale 1) is refused, never
// rounded, as is one beyond [usagein.MaxUnits].
func (a Alert) Units(scale int64) (int64, error) {
	n, err := usagein.ScaleDecimal(a.Value, scale)
	if err != nil {
		return 0, alertError("data.object.value", fmt.Sprintf("%s at scale %d: %v", a.Value, scale, err))
	}
	return n, nil
}
