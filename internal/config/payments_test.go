package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/paymentworker"
)

func paymentEnv(extra map[string]string) Lookup {
	m := map[string]string{
		"IDEMPOTENCY_TABLE": "idem", "QUEUE_URL": "http://q", "DEAD_LETTER_QUEUE_URL": "http://dlq",
	}
	for k, v := range extra {
		m[k] = v
	}
	return mapLookup(m)
}

func TestPaymentWorkerProviders(t *testing.T) {
	stripeMapping := `{"stripe":{"act_when":{"/type":["invoice.finalized"]},"customer":"/data/object/customer","amount":"/data/object/amount_due","currency":"/data/object/currency"}}`
	tests := []struct {
		name    string
		env     map[string]string
		wantErr []string // each must appear; none means valid
		check   func(t *testing.T, c PaymentWorker)
	}{
		{name: "generic by default", env: map[string]string{"PROVIDER_URL": "http://sim"}, check: func(t *testing.T, c PaymentWorker) {
			if c.PaymentProvider != ProviderGeneric || c.ProviderHorizon != 30*time.Second || !reflect.DeepEqual(c.Mappings.For("x"), paymentworker.HooklineMapping) {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "generic needs its URL", env: nil, wantErr: []string{"PROVIDER_URL is required"}},
		{name: "the charge API's own URL wins over the provider's", env: map[string]string{"PROVIDER_URL": "http://usage", "PAYMENT_PROVIDER_URL": "http://charges"},
			check: func(t *testing.T, c PaymentWorker) {
				if c.ProviderURL != "http://charges" {
					t.Fatalf("URL %q", c.ProviderURL)
				}
			}},
		{name: "stripe ignores the usage provider's URL", env: map[string]string{"PAYMENT_PROVIDER": "stripe", "PROVIDER_API_KEY": "sk_test_x", "PROVIDER_URL": "https://api.payments.example.com"},
			check: func(t *testing.T, c PaymentWorker) {
				if c.ProviderURL != "" {
					t.Fatalf("URL %q, want Stripe's default", c.ProviderURL)
				}
			}},
		{name: "stripe with its defaults", env: map[string]string{"PAYMENT_PROVIDER": "stripe", "PROVIDER_API_KEY": "sk_test_x", "PAYMENT_MAPPINGS": stripeMapping},
			check: func(t *testing.T, c PaymentWorker) {
				if c.ProviderURL != "" || c.ProviderHorizon != 90*time.Second || c.InProgressTimeout != 150*time.Second {
					t.Fatalf("%+v", c)
				}
				if c.Mappings.For("stripe").Amount != "/data/object/amount_due" || !reflect.DeepEqual(c.Mappings.For("payments"), paymentworker.HooklineMapping) {
					t.Fatalf("mappings: stripe %+v, payments %+v", c.Mappings.For("stripe"), c.Mappings.For("payments"))
				}
			}},
		{name: "stripe needs its key", env: map[string]string{"PAYMENT_PROVIDER": "stripe"}, wantErr: []string{"PROVIDER_API_KEY is required"}},
		{name: "stripe refuses a horizon shorter than search's lag", env: map[string]string{"PAYMENT_PROVIDER": "stripe", "PROVIDER_API_KEY": "k", "PROVIDER_SETTLE_HORIZON": "30s"},
			wantErr: []string{"PROVIDER_SETTLE_HORIZON 30s must be at least 1m0s"}},
		{name: "a simulator's known search lag allows a shorter horizon", env: map[string]string{"PAYMENT_PROVIDER": "stripe", "PROVIDER_API_KEY": "k",
			"STRIPE_SEARCH_LAG": "200ms", "PROVIDER_SETTLE_HORIZON": "2s"},
			check: func(t *testing.T, c PaymentWorker) {
				if c.ProviderHorizon != 2*time.Second {
					t.Fatalf("horizon %s", c.ProviderHorizon)
				}
			}},
		{name: "unknown provider", env: map[string]string{"PAYMENT_PROVIDER": "paypal"}, wantErr: []string{`PAYMENT_PROVIDER="paypal"`}},
		{name: "a bad mapping names its source and field, with every other problem",
			env:     map[string]string{"PAYMENT_MAPPINGS": `{"stripe":{"customer":"/c","currency":"/cur"}}`},
			wantErr: []string{"PAYMENT_MAPPINGS", `source "stripe"`, "amount", "PROVIDER_URL is required"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := PaymentWorkerFromEnv(paymentEnv(tc.env))
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, c)
				return
			}
			if err == nil {
				t.Fatalf("accepted %+v", tc.env)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// The Stripe key never appears in a configuration error.
func TestPaymentWorkerErrorsDoNotShowTheKey(t *testing.T) {
	_, err := PaymentWorkerFromEnv(paymentEnv(map[string]string{"PAYMENT_PROVIDER": "stripe", "PROVIDER_API_KEY": "sk_live_secret", "PROVIDER_SETTLE_HORIZON": "1s"}))
	if err == nil || strings.Contains(err.Error(), "sk_live_secret") {
		t.Fatalf("err %v", err)
	}
}
