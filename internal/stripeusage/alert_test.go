package stripeusage_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/stripeusage"
)

// alertEvent is testdata's billing.alert.triggered event with each of
// edits (a data.object field and its raw JSON; "" deletes it) applied.
func alertEvent(t *testing.T, edits ...[2]string) []byte {
	t.Helper()
	raw, err := os.ReadFile("testdata/billing_alert_triggered.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&ev); err != nil {
		t.Fatal(err)
	}
	obj := ev["data"].(map[string]any)["object"].(map[string]any)
	for _, e := range edits {
		if e[1] == "" {
			delete(obj, e[0])
			continue
		}
		obj[e[0]] = json.RawMessage(e[1])
	}
	out, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestParseAlertFixture(t *testing.T) {
	got, err := stripeusage.ParseAlert(alertEvent(t))
	if err != nil {
		t.Fatal(err)
	}
	want := stripeusage.Alert{
		EventID: "evt_1QaAlertTriggered0001", AlertID: "alrt_1Threshold0001", Meter: "mtr_123",
		Customer: "cus_abc", Value: "10000", Created: time.Unix(1772409600, 0).UTC(),
		Livemode: true, Account: "acct_1Connected0001",
	}
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestParseAlertValue(t *testing.T) {
	tests := []struct {
		name  string
		raw   string
		value string
		scale int64
		units int64
	}{
		{name: "an integer, as stripe-go has it", raw: `10000`, value: "10000", scale: 1, units: 10000},
		{name: "a decimal string, as the preview spec has it", raw: `"12.5"`, value: "12.5", scale: 10, units: 125},
		{name: "a number with a fraction, read exactly", raw: `12.5`, value: "12.5", scale: 1000, units: 12500},
		{name: "a number a float64 would read as 8.000000000000002", raw: `8.000000000000001`,
			value: "8.000000000000001", scale: 1_000_000_000_000_000, units: 8000000000000001},
		{name: "a string a float64 would read as 8.000000000000002", raw: `"8.000000000000001"`,
			value: "8.000000000000001", scale: 1_000_000_000_000_000, units: 8000000000000001},
		{name: "an exponent", raw: `1.5e3`, value: "1.5e3", scale: 1, units: 1500},
		{name: "zero", raw: `0`, value: "0", scale: 1, units: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := stripeusage.ParseAlert(alertEvent(t, [2]string{"value", tt.raw}))
			if err != nil {
				t.Fatal(err)
			}
			if a.Value != tt.value {
				t.Fatalf("value %q, want %q", a.Value, tt.value)
			}
			units, err := a.Units(tt.scale)
			if err != nil || units != tt.units {
				t.Fatalf("Units(%d) = %d, %v; want %d", tt.scale, units, err, tt.units)
			}
		})
	}
}

func TestAlertUnitsRefuses(t *testing.T) {
	tests := []struct {
		name  string
		value string
		scale int64
	}{
		{name: "a fraction of a unit", value: "12.5", scale: 1},
		{name: "a fraction a float64 would lose", value: "12.5000000000000001", scale: 10},
		{name: "beyond 2^53 units", value: "9007199254740993", scale: 1},
		{name: "a huge exponent", value: "1e999", scale: 1},
		{name: "a scale of zero", value: "1", scale: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := stripeusage.Alert{Value: tt.value}.Units(tt.scale)
			var fe *stripeusage.FieldError
			if !errors.As(err, &fe) || fe.Field != "data.object.value" || !errors.Is(err, stripeusage.ErrBadAlert) {
				t.Fatalf("err %v, want a FieldError on data.object.value", err)
			}
		})
	}
}

func TestParseAlertRefuses(t *testing.T) {
	tests := []struct {
		name  string
		body  func(t *testing.T) []byte
		field string
	}{
		{name: "a value of true", body: edit("value", `true`), field: "data.object.value"},
		{name: "a null value", body: edit("value", `null`), field: "data.object.value"},
		{name: "no value", body: edit("value", ""), field: "data.object.value"},
		{name: "a word", body: edit("value", `"twelve"`), field: "data.object.value"},
		{name: "an empty string", body: edit("value", `""`), field: "data.object.value"},
		{name: "a negative number", body: edit("value", `-5`), field: "data.object.value"},
		{name: "a negative string", body: edit("value", `"-5"`), field: "data.object.value"},
		{name: "two points", body: edit("value", `"1.2.3"`), field: "data.object.value"},
		{name: "a leading space", body: edit("value", `" 12"`), field: "data.object.value"},
		{name: "a leading zero", body: edit("value", `"012"`), field: "data.object.value"},
		{name: "hex", body: edit("value", `"0x10"`), field: "data.object.value"},
		{name: "an object", body: edit("value", `{"value":12}`), field: "data.object.value"},
		{name: "no customer", body: edit("customer", ""), field: "data.object.customer"},
		{name: "no alert", body: edit("alert", ""), field: "data.object.alert"},
		{name: "an alert ID that is empty", body: edit("alert", `""`), field: "data.object.alert"},
		{name: "an alert object without id", body: edit("alert", `{"object":"billing.alert"}`), field: "data.object.alert"},
		{name: "a livemode that differs from the event's", body: edit("livemode", `false`), field: "data.object.livemode"},
		{name: "not JSON", body: func(*testing.T) []byte { return []byte(`{"type":"billing.alert.triggered",`) }, field: "(event)"},
		{name: "no data", body: func(*testing.T) []byte {
			return []byte(`{"id":"evt_1","object":"event","type":"billing.alert.triggered"}`)
		}, field: "data.object"},
		{name: "no event id", body: func(*testing.T) []byte {
			return []byte(`{"object":"event","type":"billing.alert.triggered","data":{"object":{}}}`)
		}, field: "id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := stripeusage.ParseAlert(tt.body(t))
			var fe *stripeusage.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, stripeusage.ErrBadAlert) {
				t.Fatalf("err %v, want a FieldError on %s", err, tt.field)
			}
			if errors.Is(err, stripeusage.ErrNotAlert) {
				t.Fatalf("err %v is also ErrNotAlert", err)
			}
		})
	}
}

func edit(field, raw string) func(*testing.T) []byte {
	return func(t *testing.T) []byte { return alertEvent(t, [2]string{field, raw}) }
}

func TestParseAlertOfAnID(t *testing.T) {
	// Given an event holding only the alert's ID, there is no meter.
	a, err := stripeusage.ParseAlert(alertEvent(t, [2]string{"alert", `"alrt_1Threshold0001"`}))
	if err != nil {
		t.Fatal(err)
	}
	if a.AlertID != "alrt_1Threshold0001" || a.Meter != "" {
		t.Fatalf("alert %q, meter %q", a.AlertID, a.Meter)
	}
	// Given an alert whose meter is expanded, its ID is the meter.
	a, err = stripeusage.ParseAlert(alertEvent(t, [2]string{"alert",
		`{"id":"alrt_2","object":"billing.alert","usage_threshold":{"gte":5,"meter":{"id":"mtr_456","object":"billing.meter"}}}`}))
	if err != nil {
		t.Fatal(err)
	}
	if a.AlertID != "alrt_2" || a.Meter != "mtr_456" {
		t.Fatalf("alert %q, meter %q", a.AlertID, a.Meter)
	}
}

func TestParseAlertOtherEvent(t *testing.T) {
	for _, body := range []string{
		`{"id":"evt_1","object":"event","type":"invoice.paid","data":{"object":{"id":"in_1"}}}`,
		`{"id":"evt_1","object":"event","type":"billing.alert.triggered.v2","data":{"object":{}}}`,
		`{}`,
	} {
		if _, err := stripeusage.ParseAlert([]byte(body)); !errors.Is(err, stripeusage.ErrNotAlert) {
			t.Fatalf("%s: err %v, want ErrNotAlert", body, err)
		}
	}
}
