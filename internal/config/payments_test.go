package config

import (
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/pkg/webhook"
)

func paymentEnv(extra map[string]string) Lookup {
	m := map[string]string{
		"IDEMPOTENCY_TABLE": "idem", "INTAKE_TABLE": "intake", "QUEUE_URL": "http://q", "DEAD_LETTER_QUEUE_URL": "http://dlq",
	}
	for k, v := range extra {
		m[k] = v
	}
	return mapLookup(m)
}

// paymentWorkerFromEnv reads the payment worker's configuration as its
// wiring does, with the mappings paymentworker reads from
// PAYMENT_MAPPINGS.
func paymentWorkerFromEnv(lookup Lookup) (PaymentWorker, *paymentworker.Mappings, error) {
	ms := paymentworker.DefaultMappings()
	cfg, err := PaymentWorkerFromEnv(lookup, func(raw []byte, sources []webhook.SourceSpec) error {
		parsed, err := paymentworker.ParseMappingsFor(raw, sources)
		if err == nil {
			ms = parsed
		}
		return err
	})
	return cfg, ms, err
}

func TestPaymentWorkerProviders(t *testing.T) {
	stripeMapping := `{"stripe":{"act_when":{"/type":["invoice.finalized"]},"customer":"/data/object/customer","amount":"/data/object/amount_due","currency":"/data/object/currency"}}`
	tests := []struct {
		name    string
		env     map[string]string
		wantErr []string // each must appear; none means valid
		check   func(t *testing.T, c PaymentWorker, ms *paymentworker.Mappings)
	}{
		{name: "generic by default", env: map[string]string{"PROVIDER_URL": "http://sim"}, check: func(t *testing.T, c PaymentWorker, ms *paymentworker.Mappings) {
			if c.PaymentProvider != ProviderGeneric || c.ProviderHorizon != 30*time.Second || !reflect.DeepEqual(ms.For("x"), paymentworker.HooklineMapping) {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "generic needs its URL", env: nil, wantErr: []string{"PROVIDER_URL is required"}},
		{name: "the charge API's own URL wins over the provider's", env: map[string]string{"PROVIDER_URL": "http://usage", "PAYMENT_PROVIDER_URL": "http://charges"},
			check: func(t *testing.T, c PaymentWorker, ms *paymentworker.Mappings) {
				if c.ProviderURL != "http://charges" {
					t.Fatalf("URL %q", c.ProviderURL)
				}
			}},
		{name: "stripe ignores the usage provider's URL", env: map[string]string{"PAYMENT_PROVIDER": "stripe", "PROVIDER_API_KEY": "sk_test_x", "PROVIDER_URL": "https://api.payments.example.com"},
			check: func(t *testing.T, c PaymentWorker, ms *paymentworker.Mappings) {
				if c.ProviderURL != "" {
					t.Fatalf("URL %q, want Stripe's default", c.ProviderURL)
				}
			}},
		{name: "stripe with its defaults", env: map[string]string{"PAYMENT_PROVIDER": "stripe", "PROVIDER_API_KEY": "sk_test_x", "PAYMENT_MAPPINGS": stripeMapping},
			check: func(t *testing.T, c PaymentWorker, ms *paymentworker.Mappings) {
				if c.ProviderURL != "" || c.ProviderHorizon != 90*time.Second || c.InProgressTimeout != 150*time.Second {
					t.Fatalf("%+v", c)
				}
				if ms.For("stripe").Amount != "/data/object/amount_due" || !reflect.DeepEqual(ms.For("payments"), paymentworker.HooklineMapping) {
					t.Fatalf("mappings: stripe %+v, payments %+v", ms.For("stripe"), ms.For("payments"))
				}
			}},
		{name: "stripe needs its key", env: map[string]string{"PAYMENT_PROVIDER": "stripe"}, wantErr: []string{"PROVIDER_API_KEY is required"}},
		{name: "stripe refuses a horizon shorter than search's lag", env: map[string]string{"PAYMENT_PROVIDER": "stripe", "PROVIDER_API_KEY": "k", "PROVIDER_SETTLE_HORIZON": "30s"},
			wantErr: []string{"PROVIDER_SETTLE_HORIZON 30s must be at least 1m0s"}},
		{name: "a simulator's known search lag allows a shorter horizon", env: map[string]string{"PAYMENT_PROVIDER": "stripe", "PROVIDER_API_KEY": "k",
			"STRIPE_SEARCH_LAG": "200ms", "PROVIDER_SETTLE_HORIZON": "2s"},
			check: func(t *testing.T, c PaymentWorker, ms *paymentworker.Mappings) {
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
			c, ms, err := paymentWorkerFromEnv(paymentEnv(tc.env))
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, c, ms)
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
	_, _, err := paymentWorkerFromEnv(paymentEnv(map[string]string{"PAYMENT_PROVIDER": "stripe", "PROVIDER_API_KEY": "sk_live_secret", "PROVIDER_SETTLE_HORIZON": "1s"}))
	if err == nil || strings.Contains(err.Error(), "sk_live_secret") {
		t.Fatalf("err %v", err)
	}
}

// TestPaymentSourcesMeetMappingsOfTheirScheme: with HOOKLINE_SOURCES in
// the worker's environment, a preset source whose mapping was written
// for another scheme (or for a generic body) is refused at start, naming
// the source and the field.
func TestPaymentSourcesMeetMappingsOfTheirScheme(t *testing.T) {
	sources := `[{"name":"payments","scheme":"standard-webhooks","secret_env":"S","queue":"payments"},` +
		`{"name":"shop-adyen","scheme":"adyen","secret_env":"A","queue":"payments"},` +
		`{"name":"usage","scheme":"standard-webhooks","secret_env":"U","queue":"usage"}]`
	base := map[string]string{"IDEMPOTENCY_TABLE": "t", "INTAKE_TABLE": "i", "QUEUE_URL": "q", "DEAD_LETTER_QUEUE_URL": "d", "PROVIDER_URL": "http://p", "HOOKLINE_SOURCES": sources}
	tests := []struct {
		name, mappings, wantErr string
	}{
		{name: "a mapping for each scheme", mappings: `{"shop-adyen":{"scheme":"adyen","customer":"/item/merchantReference"}}`},
		{name: "no mapping for the preset source", mappings: ""},
		{name: "the preset source under a generic mapping", mappings: `{"shop-adyen":{"customer":"/item/merchantReference","amount":"/item/amount/value","currency":"/item/amount/currency","act_when":{"/type":["AUTHORISATION"]}}}`,
			wantErr: `source "shop-adyen": scheme: the source is adyen`},
		{name: "a generic source under a preset's mapping", mappings: `{"payments":{"scheme":"checkout","customer":"/item/data/customer/id"}}`,
			wantErr: `source "payments": scheme: the mapping is for checkout`},
		{name: "an earlier build's mapping of the preset source", mappings: `{"shop-adyen":{"customer":"/item/merchantReference","amount":"/item/amount/value","currency":"/item/amount/currency"}}`,
			wantErr: "source \"shop-adyen\": scheme: the mapping names no preset, as an earlier build's did, and the source's scheme is adyen: name the preset: `\"scheme\": \"adyen\"`"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := maps.Clone(base)
			if tc.mappings != "" {
				env["PAYMENT_MAPPINGS"] = tc.mappings
			}
			_, _, err := paymentWorkerFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}
