package config_test

import (
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/config"
)

// TestUsageMappingsAreCheckedAtStart: a usage source whose records would
// be counted against caps of another unit, or a mapping the sources
// cannot take, stops the receiver at start, naming the source and field.
func TestUsageMappingsAreCheckedAtStart(t *testing.T) {
	const sources = `[{"name":"usage","scheme":"standard-webhooks","secret_env":"S","queue":"usage"},
	  {"name":"meters","scheme":"standard-webhooks","secret_env":"M","queue":"usage"}]`
	const meters = `{"meters": {"format": "cloudevents", "usage_types": ["com.example.tokens"], "value": "/data/tokens", "unit": "%s"}}`
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{name: "none: usage.recorded in units"},
		{name: "a meter in the workloads' unit", env: map[string]string{"USAGE_MAPPINGS": strings.Replace(meters, "%s", "units", 1)}},
		{name: "tokens against caps in units", env: map[string]string{"USAGE_MAPPINGS": strings.Replace(meters, "%s", "tokens", 1)},
			wantErr: `source "meters": unit: "tokens" differs from the workloads' unit "units" (SPEND_UNIT)`},
		{name: "caps in tokens", env: map[string]string{"SPEND_UNIT": "tokens", "USAGE_MAPPINGS": strings.Replace(meters, "%s", "tokens", 1)},
			wantErr: `source "usage": unit: "units" differs from the workloads' unit "tokens"`},
		{name: "not JSON", env: map[string]string{"USAGE_MAPPINGS": "{"}, wantErr: "config: USAGE_MAPPINGS:"},
		{name: "a misspelt member", env: map[string]string{"USAGE_MAPPINGS": `{"meters": {"format": "cloudevents", "usage_types": ["t"], "unit": "units", "scal": 1000}}`},
			wantErr: `unknown field "scal"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := receiverFromEnv(map[string]string{"INTAKE_TABLE": "t", "QUEUE_URL_USAGE": "http://q", "HOOKLINE_SOURCES": sources}, tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || cfg.Usage.WorkloadUnit != "units" {
				t.Fatalf("cfg %+v, %v", cfg.Usage, err)
			}
		})
	}
}

// receiverFromEnv reads the receiver's configuration from base with
// overrides over it.
func receiverFromEnv(base, overrides map[string]string) (config.Receiver, error) {
	env := map[string]string{}
	for _, m := range []map[string]string{base, overrides} {
		for k, v := range m {
			env[k] = v
		}
	}
	return config.ReceiverFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
}
