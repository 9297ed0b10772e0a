package usagein_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/webhook"
)

// tokensMapping is a CloudEvents source counting tokens at scale 1000.
const tokensMapping = `{"meters": {"format": "cloudevents", "usage_types": ["com.example.tokens"],
  "value": "/data/tokens", "scale": 1000, "unit": "milli_tokens", "max_age": "840h"}}`

func parseMappings(t *testing.T, raw string) *usagein.Mappings {
	t.Helper()
	ms, err := usagein.ParseMappings([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func TestMappingDefaults(t *testing.T) {
	ms := parseMappings(t, tokensMapping)
	m := ms.For("meters")
	if m.Workload != "/subject" || m.Meter != "/type" || m.Time != "/time" || m.ValueFormat != usagein.ValueDecimal || m.IsReconciled() {
		t.Fatalf("CloudEvents defaults not applied: %+v", m)
	}
	if r := m.Rule(); r.MaxAge != 840*time.Hour || r.MaxSkew != 5*time.Minute {
		t.Fatalf("rule %+v, want 840h back and the default 5m ahead", r)
	}
	h := ms.For("usage")
	if h.Format != usagein.FormatHookline || h.Unit != usagein.DefaultUnit || !h.IsReconciled() || h.Rule() != usagein.DefaultTimeRule {
		t.Fatalf("a source without a mapping reads usage.recorded as before: %+v", h)
	}
}

func TestParseMappingsNamesTheSourceAndField(t *testing.T) {
	tests := []struct{ name, raw, want string }{
		{"unknown member", `{"m": {"format": "cloudevents", "usage_type": ["a"], "unit": "u"}}`, `unknown field "usage_type"`},
		{"no usage types", `{"m": {"format": "cloudevents", "unit": "u"}}`, `source "m": usage_types`},
		{"no unit", `{"m": {"format": "cloudevents", "usage_types": ["a"]}}`, `source "m": unit`},
		{"not a pointer", `{"m": {"format": "cloudevents", "usage_types": ["a"], "unit": "u", "value": "data.tokens"}}`, `value: "data.tokens" is not a JSON pointer`},
		{"count with a value", `{"m": {"format": "cloudevents", "usage_types": ["a"], "unit": "u", "value_format": "count", "value": "/data/n"}}`, `count counts one per event`},
		{"bad scale", `{"m": {"format": "cloudevents", "usage_types": ["a"], "unit": "u", "scale": -3}}`, `scale -3`},
		{"bad max_age", `{"m": {"format": "cloudevents", "usage_types": ["a"], "unit": "u", "max_age": "35d"}}`, `max_age "35d"`},
		{"reach past 400 days", `{"m": {"format": "cloudevents", "usage_types": ["a"], "unit": "u", "max_age": "9700h"}}`, `max_age 9700h0m0s outside`},
		{"hookline moved", `{"m": {"value": "/data/n"}}`, `format hookline reads usage.recorded's own members`},
		{"unknown format", `{"m": {"format": "csv"}}`, `format "csv"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := usagein.ParseMappings([]byte(tc.raw))
			if !errors.Is(err, usagein.ErrBadMapping) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrBadMapping saying %s", err, tc.want)
			}
		})
	}
}

func TestCheckSourcesRefusesAtStart(t *testing.T) {
	sources := []webhook.SourceSpec{
		{Name: "usage", Scheme: webhook.SchemeStandard, Queue: "usage"},
		{Name: "meters", Scheme: webhook.SchemeStandard, Queue: "usage"},
		{Name: "payments", Scheme: webhook.SchemeStandard, Queue: "payments"},
		{Name: "stripe-usage", Scheme: webhook.SchemeStripe, Queue: "usage"},
	}
	ms := parseMappings(t, `{"meters": {"format": "cloudevents", "usage_types": ["t"], "unit": "units"},
	  "payments": {"unit": "units"}, "stripe-usage": {"format": "cloudevents", "usage_types": ["t"], "unit": "usd_micros"}}`)
	err := ms.CheckSources(sources, "units")
	for _, want := range []string{
		`source "payments": no usage source of that name`,
		`source "stripe-usage": scheme: a CloudEvents source is signed with standard-webhooks`,
		`source "stripe-usage": unit: "usd_micros" differs from the workloads' unit "units"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to say %s", err, want)
		}
	}
	// A deployment whose caps count tokens refuses the default units of
	// usage.recorded too, until its mapping says tokens.
	err = (*usagein.Mappings)(nil).CheckSources(sources[:1], "tokens")
	if err == nil || !strings.Contains(err.Error(), `source "usage": unit: "units" differs`) {
		t.Fatalf("err = %v", err)
	}
	if err := parseMappings(t, `{"usage": {"unit": "tokens"}}`).CheckSources(sources[:1], "tokens"); err != nil {
		t.Fatalf("a usage source in the workloads' unit refused: %v", err)
	}
}
