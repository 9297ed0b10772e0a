package usagein_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/webhook"
)

// stripeEvent is a Stripe event of type typ as Stripe delivers it, with
// pending endpoints pending.
func stripeEvent(id, typ string, pending int) string {
	return fmt.Sprintf(`{
  "id": %q, "object": "event", "api_version": "2026-02-25.clover", "created": 1772409600,
  "data": {"object": {"object": "billing.alert_triggered", "alert": "alrt_1", "customer": "cus_abc",
    "livemode": true, "value": 10000, "title": "<10k & more>"}},
  "livemode": true, "pending_webhooks": %d, "request": {"id": null, "idempotency_key": null}, "type": %q}`, id, pending, typ)
}

func stripeAlerts(t *testing.T) usagein.Mapping {
	t.Helper()
	m := parseMappings(t, `{"stripe": {"format": "stripe-alerts"}}`).For("stripe")
	if m.Format != usagein.FormatStripeAlerts || m.IsReconciled() || m.Rule() != usagein.DefaultTimeRule {
		t.Fatalf("stripe-alerts mapping %+v", m)
	}
	return m
}

func readStripe(t *testing.T, m usagein.Mapping, body string) (usagein.Body, error) {
	t.Helper()
	return m.Read([]byte(body), usagein.Request{Source: "stripe", DeliveryID: "evt_from_the_verifier", ContentType: "application/json", Seen: seen})
}

func TestStripeAlertsReadsAnAlertKeyedByItsEvent(t *testing.T) {
	m := stripeAlerts(t)
	// Given a billing.alert.triggered event
	b, err := readStripe(t, m, stripeEvent("evt_alert_1", usagein.StripeAlertType, 2))
	if err != nil {
		t.Fatal(err)
	}
	// Then it is one alert, keyed by the event's ID
	if len(b.Items) != 1 || b.Batch {
		t.Fatalf("body %+v, want one item", b)
	}
	it := b.Items[0]
	rec := it.Record
	if it.Err != nil || it.EventID != "evt_alert_1" || rec.RecordID != "evt_alert_1" || rec.Outcome != usagein.OutcomeAlert ||
		rec.Type != usagein.StripeAlertType || rec.WorkloadRef != "" || rec.Units != 0 {
		t.Fatalf("item %+v", it)
	}
	// carrying the event, as written but for the count of endpoints still
	// to deliver it to
	var ev map[string]any
	if err := json.Unmarshal([]byte(rec.Alert), &ev); err != nil {
		t.Fatalf("alert %q: %v", rec.Alert, err)
	}
	if _, ok := ev["pending_webhooks"]; ok || ev["id"] != "evt_alert_1" || ev["livemode"] != true ||
		ev["data"].(map[string]any)["object"].(map[string]any)["title"] != "<10k & more>" {
		t.Fatalf("alert %s", rec.Alert)
	}
	if !strings.Contains(rec.Alert, `"<10k & more>"`) {
		t.Fatalf("alert %s: the event's text is escaped", rec.Alert)
	}

	// and a retry, which Stripe sends with fewer endpoints pending, makes
	// the same envelope: a duplicate at the intake.
	again, err := readStripe(t, m, stripeEvent("evt_alert_1", usagein.StripeAlertType, 1))
	if err != nil {
		t.Fatal(err)
	}
	if first, second := m.Envelope("stripe", rec), m.Envelope("stripe", again.Items[0].Record); string(first) != string(second) {
		t.Fatalf("a retry's envelope differs:\n%s\n%s", first, second)
	}
}

func TestStripeAlertsOtherTypesAreNotUsage(t *testing.T) {
	m := stripeAlerts(t)
	b, err := readStripe(t, m, stripeEvent("evt_charge_1", "charge.succeeded", 1))
	if err != nil {
		t.Fatal(err)
	}
	want := usagein.Record{Outcome: usagein.OutcomeNotUsage, Type: "charge.succeeded", RecordID: "evt_charge_1"}
	if len(b.Items) != 1 || b.Items[0].EventID != "evt_charge_1" || b.Items[0].Record != want {
		t.Fatalf("body %+v, want %+v", b, want)
	}
}

func TestStripeAlertsRefusesWhatIsNoStripeEvent(t *testing.T) {
	m := stripeAlerts(t)
	tests := []struct{ name, body, field string }{
		{"an array", `[` + stripeEvent("evt_1", usagein.StripeAlertType, 1) + `]`, ""},
		{"no id", `{"type":"billing.alert.triggered"}`, "id"},
		{"no type", `{"id":"evt_1"}`, "type"},
		{"type not a string", `{"id":"evt_1","type":1}`, "type"},
		{"Type instead of type", `{"id":"evt_1","Type":"billing.alert.triggered"}`, "Type"},
		{"id twice", `{"id":"evt_1","id":"evt_2","type":"billing.alert.triggered"}`, "id"},
		{"not JSON", `{"id":`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readStripe(t, m, tc.body)
			fe, ok := provider.AsFieldError(err)
			if !ok || fe.Field != tc.field {
				t.Fatalf("err = %v, want a field error naming %q", err, tc.field)
			}
		})
	}
}

func TestStripeAlertEnvelopeRoundTrip(t *testing.T) {
	m := stripeAlerts(t)
	b, err := readStripe(t, m, stripeEvent("evt_alert_2", usagein.StripeAlertType, 1))
	if err != nil {
		t.Fatal(err)
	}
	rec := b.Items[0].Record
	body := m.Envelope("stripe", rec)
	// Given an alert's envelope, when the worker reads it, then it reads
	// the door's record and the event it carries
	msg, err := usagein.DecodeMessage(body, seen)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Record != rec || msg.Source != "stripe" || msg.Reconciled || msg.Legacy || !json.Valid([]byte(msg.Alert)) {
		t.Fatalf("message %+v\nwant record %+v", msg, rec)
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(body, &env); err != nil || string(env["alert"]) != rec.Alert {
		t.Fatalf("envelope %s: want the event as an object under alert", body)
	}

	// An envelope of another outcome carries no alert member
	usage := parseMappings(t, tokensMapping).For("meters").Envelope("meters", usagein.Record{Outcome: usagein.OutcomeNotUsage, Type: "t", RecordID: "ce_1"})
	if strings.Contains(string(usage), `"alert"`) {
		t.Fatalf("envelope %s has an alert member", usage)
	}
}

func TestDecodeMessageRefusesAnAlertWithoutItsEvent(t *testing.T) {
	m := stripeAlerts(t)
	alert := usagein.Record{Outcome: usagein.OutcomeAlert, Type: usagein.StripeAlertType, RecordID: "evt_3", Alert: `{"id":"evt_3"}`}
	body := string(m.Envelope("stripe", alert))
	tests := []struct{ name, body, field string }{
		{"alert without its event", strings.Replace(body, `,"alert":{"id":"evt_3"}`, "", 1), "alert"},
		{"alert whose event is no object", strings.Replace(body, `"alert":{"id":"evt_3"}`, `"alert":"evt_3"`, 1), "alert"},
		{"alert without its key", strings.Replace(body, `"record_id":"evt_3"`, `"record_id":""`, 1), "record_id"},
		{"not usage carrying an event", strings.Replace(body, `"outcome":"alert"`, `"outcome":"not_usage"`, 1), "alert"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.body == body {
				t.Fatalf("the edit of %s changed nothing", body)
			}
			_, err := usagein.DecodeMessage([]byte(tc.body), seen)
			fe, ok := provider.AsFieldError(err)
			if !ok || fe.Field != tc.field {
				t.Fatalf("err = %v, want a field error naming %q", err, tc.field)
			}
		})
	}
}

func TestStripeAlertsMappingTakesNoOtherMember(t *testing.T) {
	for _, member := range []string{`"workload": "/data/object/customer"`, `"meter": "/type"`, `"meter_name": "api"`,
		`"value": "/data/object/value"`, `"value_format": "integer"`, `"scale": 1000`, `"unit": "units"`, `"time": "/created"`,
		`"usage_types": ["billing.alert.triggered"]`, `"mode": "structured"`, `"max_age": "840h"`, `"max_skew": "5m"`, `"reconciled": true`} {
		field := strings.Trim(strings.SplitN(member, ":", 2)[0], `"`)
		t.Run(field, func(t *testing.T) {
			_, err := usagein.ParseMappings([]byte(`{"stripe": {"format": "stripe-alerts", ` + member + `}}`))
			if !errors.Is(err, usagein.ErrBadMapping) || !strings.Contains(err.Error(), `source "stripe": `+field+`: format stripe-alerts`) {
				t.Fatalf("err = %v, want ErrBadMapping naming %s", err, field)
			}
		})
	}
}

func TestCheckSourcesTakesAStripeAlertsSourceSignedByStripe(t *testing.T) {
	ms := parseMappings(t, `{"alerts": {"format": "stripe-alerts"}}`)
	// A Stripe-signed alerts source counts no records: the workloads'
	// unit is none of its business.
	if err := ms.CheckSources([]webhook.SourceSpec{{Name: "alerts", Scheme: webhook.SchemeStripe, Queue: "usage"}}, "tokens"); err != nil {
		t.Fatalf("err = %v", err)
	}
	err := ms.CheckSources([]webhook.SourceSpec{{Name: "alerts", Scheme: webhook.SchemeStandard, Queue: "usage"}}, "tokens")
	if want := `source "alerts": scheme: a Stripe alerts source is signed with stripe`; !errors.Is(err, usagein.ErrBadMapping) || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to say %s", err, want)
	}
}
