package config

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestPaymentWorkerFetchers: PayPal's client credentials and GoCardless's
// access token make the worker fetch those providers' objects; one half
// of PayPal's pair, or a URL without credentials, is refused by name and
// never by value.
func TestPaymentWorkerFetchers(t *testing.T) {
	const secret = "secret-value-never-shown"
	tests := []struct {
		name       string
		env        map[string]string
		paypal     PayPal
		gocardless GoCardless
		wantErr    string
	}{
		{name: "no credentials fetch nothing"},
		{name: "PayPal's live API", env: map[string]string{"PAYPAL_CLIENT_ID": "AZ-client", "PAYPAL_CLIENT_SECRET": secret},
			paypal: PayPal{URL: PayPalAPIURL, ClientID: "AZ-client", ClientSecret: secret}},
		{name: "PayPal's sandbox", env: map[string]string{"PAYPAL_CLIENT_ID": "AZ-client", "PAYPAL_CLIENT_SECRET": secret, "PAYPAL_API_URL": "https://api-m.sandbox.paypal.com"},
			paypal: PayPal{URL: "https://api-m.sandbox.paypal.com", ClientID: "AZ-client", ClientSecret: secret}},
		{name: "a PayPal client ID needs its secret", env: map[string]string{"PAYPAL_CLIENT_ID": secret},
			wantErr: "PAYPAL_CLIENT_ID is set but PAYPAL_CLIENT_SECRET is not"},
		{name: "a PayPal secret needs its client ID", env: map[string]string{"PAYPAL_CLIENT_SECRET": secret},
			wantErr: "PAYPAL_CLIENT_SECRET is set but PAYPAL_CLIENT_ID is not"},
		{name: "a PayPal URL needs credentials", env: map[string]string{"PAYPAL_API_URL": "http://127.0.0.1:9"},
			wantErr: "PAYPAL_API_URL is set but PAYPAL_CLIENT_ID and PAYPAL_CLIENT_SECRET are not"},
		{name: "GoCardless's live API", env: map[string]string{"GOCARDLESS_ACCESS_TOKEN": secret},
			gocardless: GoCardless{URL: GoCardlessAPIURL, AccessToken: secret}},
		{name: "GoCardless on a double", env: map[string]string{"GOCARDLESS_ACCESS_TOKEN": secret, "GOCARDLESS_API_URL": "http://127.0.0.1:9"},
			gocardless: GoCardless{URL: "http://127.0.0.1:9", AccessToken: secret}},
		{name: "a GoCardless URL needs a token", env: map[string]string{"GOCARDLESS_API_URL": "http://127.0.0.1:9"},
			wantErr: "GOCARDLESS_API_URL is set but GOCARDLESS_ACCESS_TOKEN is not"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, ok := fetcherConfig(t, tt.env, tt.wantErr, secret)
			if ok && (cfg.PayPal != tt.paypal || cfg.GoCardless != tt.gocardless) {
				t.Fatalf("%+v, %+v; want %+v, %+v", cfg.PayPal, cfg.GoCardless, tt.paypal, tt.gocardless)
			}
		})
	}
}

// fetcherConfig reads the payment worker's configuration from env and a
// provider URL. With wantErr it checks that the error says so and never
// holds secret, and returns false.
func fetcherConfig(t *testing.T, env map[string]string, wantErr, secret string) (PaymentWorker, bool) {
	t.Helper()
	all := map[string]string{"PROVIDER_URL": "http://sim"}
	for k, v := range env {
		all[k] = v
	}
	cfg, _, err := paymentWorkerFromEnv(paymentEnv(all))
	switch {
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr) || strings.Contains(err.Error(), secret)):
		// The error names the variable, never the credential.
		t.Fatalf("error %v, want %q without the credential", err, wantErr)
	case wantErr == "" && err != nil:
		t.Fatal(err)
	}
	return cfg, wantErr == ""
}

// TestFetcherSecretsComeFromSecretsManager: PayPal's client secret and
// GoCardless's access token are read from the secret that their
// _SECRET_ID variable names, as Mollie's key is.
func TestFetcherSecretsComeFromSecretsManager(t *testing.T) {
	for _, name := range []string{"PAYPAL_CLIENT_SECRET", "GOCARDLESS_ACCESS_TOKEN"} {
		if !slices.Contains(SecretVars, name) {
			t.Fatalf("%s is not in SecretVars", name)
		}
	}
	read := func(_ context.Context, id string) (string, error) { return "from-" + id, nil }
	lookup, err := WithSecrets(context.Background(), paymentEnv(map[string]string{
		"PROVIDER_URL": "http://sim", "PAYPAL_CLIENT_ID": "AZ-client",
		"PAYPAL_CLIENT_SECRET_SECRET_ID": "arn:paypal", "GOCARDLESS_ACCESS_TOKEN_SECRET_ID": "arn:gocardless",
	}), read, SecretVars...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := paymentWorkerFromEnv(lookup)
	if err != nil || cfg.PayPal.ClientSecret != "from-arn:paypal" || cfg.GoCardless.AccessToken != "from-arn:gocardless" {
		t.Fatalf("%+v, %+v, %v", cfg.PayPal, cfg.GoCardless, err)
	}
}
