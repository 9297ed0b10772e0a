package config

import "testing"

func TestPaymentWorkerMollie(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Mollie
		wantErr string
	}{
		{name: "no key fetches nothing", env: nil, want: Mollie{}},
		{name: "a key on Mollie's API", env: map[string]string{"MOLLIE_API_KEY": "live_abc"},
			want: Mollie{URL: MollieAPIURL, APIKey: "live_abc"}},
		{name: "a key on a double", env: map[string]string{"MOLLIE_API_KEY": "test_abc", "MOLLIE_API_URL": "http://127.0.0.1:9"},
			want: Mollie{URL: "http://127.0.0.1:9", APIKey: "test_abc"}},
		{name: "a URL needs a key", env: map[string]string{"MOLLIE_API_URL": "http://127.0.0.1:9"},
			wantErr: "MOLLIE_API_URL is set but MOLLIE_API_KEY is not"},
		{name: "a key not Mollie's", env: map[string]string{"MOLLIE_API_KEY": "sk_secret_value"},
			wantErr: "MOLLIE_API_KEY is not a Mollie API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, ok := fetcherConfig(t, tt.env, tt.wantErr, "sk_secret_value")
			if ok && cfg.Mollie != tt.want {
				t.Fatalf("%+v; want %+v", cfg.Mollie, tt.want)
			}
		})
	}
}
