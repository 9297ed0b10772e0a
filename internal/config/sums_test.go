package config_test

import (
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/config"
)

// TestSumSourcesAreCheckedAgainstTheUsageMappings: where SUM_SOURCES and
// USAGE_MAPPINGS meet, start refuses, naming the fields, a sums source
// that would count what the door counts at another scale, a meter or
// usage source the door never counts, and a source over records that
// hookline's export also reads without their meter, which would count
// them twice.
func TestSumSourcesAreCheckedAgainstTheUsageMappings(t *testing.T) {
	stripe := func(usageSource, meters string) string {
		return `{"st": {"provider": "stripe", "usage_source": "` + usageSource + `", "account": "acct_1",
		  "start": "2026-12-01T00:00:00Z", "meters": ` + meters + `}}`
	}
	const (
		api     = `{"api": {"provider_meter": "mtr_api", "aggregation": "sum"}}`
		ceNamed = `{"meters": {"format": "cloudevents", "usage_types": ["com.example.api"], "meter_name": "api", "unit": "units"}}`
		ceTyped = `{"meters": {"format": "cloudevents", "usage_types": ["com.example.tokens"], "scale": 1000, "unit": "units", "reconciled": true}}`
	)
	tokens := `{"com.example.tokens": {"provider_meter": "tokens_total", "aggregation": "sum", "scale": 1000}}`
	openmeter := `{"om": {"provider": "openmeter", "usage_source": "meters", "account": "ns_1", "start": "2026-12-01T00:00:00Z",
	  "meters": ` + tokens + `}}`
	openai := `{"oa": {"provider": "openai", "usage_source": "usage", "account": "org_1", "livemode": true, "start": "2026-12-01T00:00:00Z",
	  "meters": {"tokens": {"endpoint": "completions", "fields": {"input_tokens": 1, "output_tokens": 4}}}}}`
	tests := []struct {
		name    string
		env     map[string]string
		wantErr []string
	}{
		{name: "Stripe over a named meter (docs/usage-providers.md)", env: map[string]string{"SUM_SOURCES": stripe("meters", api), "USAGE_MAPPINGS": ceNamed}},
		{name: "OpenMeter over its export's source (docs/usage-providers.md)", env: map[string]string{"SUM_SOURCES": openmeter, "USAGE_MAPPINGS": ceTyped,
			"USAGE_EXPORT": "openmeter", "USAGE_EXPORT_SOURCE": "meters"}},
		{name: "OpenAI, read by the poll alone, over the usage source", env: map[string]string{"SUM_SOURCES": openai, "USAGE_MAPPINGS": ceNamed}},
		{name: "no mappings to check against", env: map[string]string{"SUM_SOURCES": stripe("meters", api)}},
		{name: "a scale other than the mapping's",
			env:     map[string]string{"SUM_SOURCES": stripe("meters", `{"api": {"provider_meter": "mtr_api", "aggregation": "sum", "scale": 1000}}`), "USAGE_MAPPINGS": ceNamed},
			wantErr: []string{`st: meter "api": scale 1000 differs from the scale 1 of usage source "meters" (USAGE_MAPPINGS)`}},
		{name: "a meter the mapping never names",
			env:     map[string]string{"SUM_SOURCES": stripe("meters", `{"apis": {"provider_meter": "mtr_api", "aggregation": "sum"}}`), "USAGE_MAPPINGS": ceNamed},
			wantErr: []string{`st: meter "apis": usage source "meters" counts no records of that meter (USAGE_MAPPINGS: meters "api")`}},
		{name: "a meter that is not one of the usage types",
			env:     map[string]string{"SUM_SOURCES": openmeter, "USAGE_MAPPINGS": strings.Replace(ceTyped, "com.example.tokens", "com.example.words", 1)},
			wantErr: []string{`om: meter "com.example.tokens": usage source "meters" counts no records of that meter`}},
		{name: "a usage source with no mapping",
			env:     map[string]string{"SUM_SOURCES": stripe("metres", api), "USAGE_MAPPINGS": ceNamed},
			wantErr: []string{`st: meter "api": usage source "metres" counts no records of that meter (USAGE_MAPPINGS: none for "metres", so usage.recorded, meters "units")`}},
		{name: "an alerts source",
			env:     map[string]string{"SUM_SOURCES": stripe("alerts", api), "USAGE_MAPPINGS": `{"alerts": {"format": "stripe-alerts"}}`},
			wantErr: []string{`st: usage_source: "alerts" reads a provider's alerts and counts no records`}},
		{name: "over records hookline's export reads too",
			env:     map[string]string{"SUM_SOURCES": stripe("usage", `{"units": {"provider_meter": "mtr_units", "aggregation": "sum"}}`), "USAGE_MAPPINGS": `{"usage": {"max_age": "840h"}}`},
			wantErr: []string{`st: meter "units": hookline's export (USAGE_EXPORT=hookline) also reads usage source "usage" (USAGE_EXPORT_SOURCE), without meters: its records would be counted twice`}},
		{name: "every problem at once",
			env: map[string]string{"SUM_SOURCES": stripe("meters", `{"api": {"provider_meter": "mtr_api", "aggregation": "sum", "scale": 10},
			  "other": {"provider_meter": "mtr_other", "aggregation": "sum"}}`), "USAGE_MAPPINGS": ceNamed},
			wantErr: []string{`meter "api": scale 10 differs`, `meter "other": usage source "meters" counts no records of that meter`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"LEDGER_TABLE": "l", "WORKLOADS_TABLE": "w"}
			for k, v := range tc.env {
				env[k] = v
			}
			_, err := config.SpendFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			for _, want := range append(tc.wantErr, "config: SUM_SOURCES: ") {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("err = %v, want one saying %q", err, want)
				}
			}
		})
	}
}
