package config_test

import (
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/config"
)

// TestReceiverRefusesPresetsMissingAField: at start, an unknown scheme or
// a preset without what it needs is refused with the field's name, every
// problem at once.
func TestReceiverRefusesPresetsMissingAField(t *testing.T) {
	tests := []struct {
		name    string
		sources string
		want    []string
	}{
		{name: "unknown scheme", sources: `[{"name":"p","scheme":"worldpay","secret_env":"S","queue":"payments"}]`,
			want: []string{`scheme "worldpay" unknown, want one of adyen, braintree`}},
		{name: "square without its signed URL", sources: `[{"name":"sq","scheme":"square","secret_env":"S","queue":"payments"}]`,
			want: []string{`scheme "square" needs signed_url`}},
		{name: "paypal without webhook ID and hosts", sources: `[{"name":"pp","scheme":"paypal","queue":"payments"}]`,
			want: []string{`scheme "paypal" needs webhook_id`, `scheme "paypal" needs cert_hosts`}},
		{name: "adyen without a key", sources: `[{"name":"ad","scheme":"adyen","queue":"payments"}]`,
			want: []string{"want secret_env or secret_id"}},
		{name: "mollie given a secret", sources: `[{"name":"mo","scheme":"mollie","secret_env":"S","queue":"payments"}]`,
			want: []string{`scheme "mollie" takes no secret`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given the sources, when the receiver's config is read
			env := map[string]string{"INTAKE_TABLE": "t", "QUEUE_URL_PAYMENTS": "http://q", "HOOKLINE_SOURCES": tc.sources}
			_, err := config.ReceiverFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			// Then it is refused naming each field
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	// A source of each kind with what it needs is accepted.
	all := `[{"name":"gh","scheme":"github","secret_env":"S","queue":"payments"},
	  {"name":"sq","scheme":"square","secret_env":"S","queue":"payments","signed_url":"https://hooks.example.com/webhooks/sq"},
	  {"name":"pp","scheme":"paypal","queue":"payments","webhook_id":"1JE4291016473214C","cert_hosts":["api.paypal.com","api.sandbox.paypal.com"]},
	  {"name":"mo","scheme":"mollie","queue":"payments"}]`
	env := map[string]string{"INTAKE_TABLE": "t", "QUEUE_URL_PAYMENTS": "http://q", "HOOKLINE_SOURCES": all}
	cfg, err := config.ReceiverFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil || len(cfg.Sources) != 4 || cfg.Sources[2].Spec.CertHosts[1] != "api.sandbox.paypal.com" {
		t.Fatalf("sources %+v, err %v", cfg.Sources, err)
	}
}
