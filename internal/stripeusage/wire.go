package stripeusage

import (
	"encoding/json"
	"strings"
)

// apiVersion is the Stripe-Version the reader sends: stripe-go's
// APIVersion, which the package's tests hold it to.
const apiVersion = "2026-02-25.clover"

// The types below are the fields of Stripe's JSON the package reads,
// under the names and types stripe-go gives them. The package decodes
// into them rather than into stripe-go's types because those link into
// every function that reads usage or alerts: json.Unmarshal reaches each
// type by reflection, and stripe.Error and stripe.BillingAlert lead to
// the customer, payment intent, payment method and source types and their
// own decoders (about 0.8 MB of a bootstrap). Fields stripe-go would
// decode but the package never reads are left out.

// summaryPage is a page of meter event summaries
// (stripe.BillingMeterEventSummaryList).
type summaryPage struct {
	Data    []*summary `json:"data"`
	HasMore bool       `json:"has_more"`
}

// summary is one meter event summary (stripe.BillingMeterEventSummary).
type summary struct {
	ID              string  `json:"id"`
	AggregatedValue float64 `json:"aggregated_value"`
	StartTime       int64   `json:"start_time"`
	EndTime         int64   `json:"end_time"`
	Livemode        bool    `json:"livemode"`
}

// apiErrorBody is Stripe's error body: {"error": {...}} (stripe.Error).
type apiErrorBody struct {
	Error *struct {
		Type    string `json:"type"`
		Code    string `json:"code"`
		Param   string `json:"param"`
		Message string `json:"message"`
	} `json:"error"`
}

// event is a Stripe event (stripe.Event).
type event struct {
	ID       string     `json:"id"`
	Type     string     `json:"type"`
	Created  int64      `json:"created"`
	Livemode bool       `json:"livemode"`
	Account  string     `json:"account"`
	Data     *eventData `json:"data"`
}

// eventData is an event's data (stripe.EventData): its object, raw.
type eventData struct {
	Raw json.RawMessage `json:"object"`
}

// UnmarshalJSON reads the data as stripe.EventData does: its object must
// decode as a JSON object (or null), so a missing or non-object one is a
// malformed event.
func (d *eventData) UnmarshalJSON(b []byte) error {
	type plain eventData
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*d = eventData(v)
	var object map[string]any
	return json.Unmarshal(d.Raw, &object)
}

// eventTypeAlertTriggered is the type of the event [ParseAlert] reads
// (stripe.EventTypeBillingAlertTriggered).
const eventTypeAlertTriggered = "billing.alert.triggered"

// billingAlert is an alert's object (stripe.BillingAlert).
type billingAlert struct {
	ID             string `json:"id"`
	UsageThreshold *struct {
		Meter *meterRef `json:"meter"`
	} `json:"usage_threshold"`
}

// meterRef is an expandable meter (stripe.BillingMeter): its ID, or its
// object with an id.
type meterRef struct {
	ID string `json:"id"`
}

// UnmarshalJSON reads a meter's ID, or its object, as stripe-go's
// BillingMeter does: a string's text between its quotes is the ID.
func (m *meterRef) UnmarshalJSON(b []byte) error {
	if s := string(b); len(s) >= 2 && strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`) {
		m.ID = s[1 : len(s)-1]
		return nil
	}
	type plain meterRef
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*m = meterRef(v)
	return nil
}
