package usagein_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/webhook"
)

// openMeterNotification is an OpenMeter notification of type typ as Svix
// delivers it.
func openMeterNotification(id, typ string) string {
	return `{"id": "` + id + `", "type": "` + typ + `", "timestamp": "2026-03-02T00:00:00Z",
  "data": {"subject": {"key": "wl-a"}, "value": {"hasAccess": true, "usage": 150.5}}}`
}

func TestOpenMeterAlertsReadsAThresholdKeyedByItsID(t *testing.T) {
	m := parseMappings(t, `{"om": {"format": "openmeter-alerts"}}`).For("om")
	for _, tc := range []struct {
		name, typ, outcome string
	}{
		{"threshold", usagein.OpenMeterAlertType, usagein.OutcomeAlert},
		{"reset", "entitlements.reset", usagein.OutcomeNotUsage},
		{"stripe's alert type", usagein.StripeAlertType, usagein.OutcomeNotUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Given a notification, read twice (a Svix retry)
			for range 2 {
				b, err := m.Read([]byte(openMeterNotification("01J2KNP1YTXQRXHTDJ4KPR7PZ0", tc.typ)), usagein.Request{Source: "om", Seen: seen})
				if err != nil {
					t.Fatal(err)
				}
				// Then it is one item keyed by its ID, an alert only for a threshold
				it := b.Items[0]
				if len(b.Items) != 1 || it.EventID != "01J2KNP1YTXQRXHTDJ4KPR7PZ0" || it.Record.Outcome != tc.outcome || it.Record.Units != 0 {
					t.Fatalf("item %+v", it)
				}
				if (it.Record.Alert != "") != (tc.outcome == usagein.OutcomeAlert) || (it.Record.Alert != "" && !json.Valid([]byte(it.Record.Alert))) {
					t.Fatalf("alert %q", it.Record.Alert)
				}
			}
		})
	}
}

func TestOpenMeterAlertsRefusesWhatItCannotKey(t *testing.T) {
	m := parseMappings(t, `{"om": {"format": "openmeter-alerts"}}`).For("om")
	for _, tc := range []struct{ name, body, field string }{
		{"no id", `{"type": "entitlements.balance.threshold"}`, "id"},
		{"id twice", `{"id": "a", "id": "b", "type": "x"}`, "id"},
		{"an array", `[]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Read([]byte(tc.body), usagein.Request{Source: "om", Seen: seen})
			fe, ok := provider.AsFieldError(err)
			if !ok || fe.Field != tc.field {
				t.Fatalf("err %v, want a field error naming %q", err, tc.field)
			}
		})
	}
}

func TestOpenMeterAlertsMappingTakesNoOtherMemberAndStandardWebhooks(t *testing.T) {
	_, err := usagein.ParseMappings([]byte(`{"om": {"format": "openmeter-alerts", "unit": "tokens"}}`))
	if !errors.Is(err, usagein.ErrBadMapping) || !strings.Contains(err.Error(), "drop unit") {
		t.Fatalf("unit on an alerts source: %v", err)
	}
	ms := parseMappings(t, `{"om": {"format": "openmeter-alerts"}}`)
	srcs := []webhook.SourceSpec{{Name: "om", Scheme: webhook.SchemeStripe, Queue: usagein.UsageQueue}}
	if err := ms.CheckSources(srcs, "units"); err == nil || !strings.Contains(err.Error(), "Svix") {
		t.Fatalf("stripe scheme: %v", err)
	}
	srcs[0].Scheme = webhook.SchemeStandard
	if err := ms.CheckSources(srcs, "units"); err != nil {
		t.Fatalf("standard webhooks, no unit: %v", err)
	}
}
