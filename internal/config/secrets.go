package config

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// SecretIDSuffix turns a variable's name into the name of the variable that
// holds its Secrets Manager secret ID instead: PROVIDER_API_KEY is read from
// the secret PROVIDER_API_KEY_SECRET_ID names.
const SecretIDSuffix = "_SECRET_ID"

// SecretVars are the credentials a function may read from Secrets Manager
// rather than from a plain environment variable: the provider's API key,
// Mollie's API key, PayPal's client secret, GoCardless's access token and
// the reconciliation owner's PagerDuty routing key, the Stripe key the
// reconciler reads meter summaries with, and the OpenAI admin key it reads
// organization usage and costs with.
var SecretVars = []string{"PROVIDER_API_KEY", "CONTRACT_API_KEY", "MOLLIE_API_KEY", "PAYPAL_CLIENT_SECRET", "GOCARDLESS_ACCESS_TOKEN", "RECON_ROUTING_KEY", "STRIPE_USAGE_API_KEY", "OPENAI_ADMIN_KEY"}

// ReadSecret returns the current value of a secret, such as
// [github.com/hookline/hookline/pkg/secrets.SecretsManager.Current].
type ReadSecret func(ctx context.Context, id string) (string, error)

// WithSecrets returns a Lookup that answers each of names from the secret
// that NAME_SECRET_ID names, read once now (at cold start), and every other
// variable from lookup. A name set both directly and by secret ID is
// refused as ambiguous; every problem is reported at once. Secret values
// are never part of an error.
func WithSecrets(ctx context.Context, lookup Lookup, read ReadSecret, names ...string) (Lookup, error) {
	resolved := map[string]string{}
	var errs []error
	for _, name := range names {
		id, _ := lookup(name + SecretIDSuffix)
		if strings.TrimSpace(id) == "" {
			continue
		}
		if v, ok := lookup(name); ok && v != "" {
			errs = append(errs, fmt.Errorf("config: %s and %s%s are both set; set one", name, name, SecretIDSuffix))
			continue
		}
		if read == nil {
			errs = append(errs, fmt.Errorf("config: %s%s is set but no Secrets Manager client was built", name, SecretIDSuffix))
			continue
		}
		v, err := read(ctx, id)
		if err != nil {
			errs = append(errs, fmt.Errorf("config: %s from secret %s: %w", name, id, err))
			continue
		}
		if strings.TrimSpace(v) == "" {
			errs = append(errs, fmt.Errorf("config: %s: secret %s is empty", name, id))
			continue
		}
		resolved[name] = strings.TrimSpace(v)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return func(name string) (string, bool) {
		if v, ok := resolved[name]; ok {
			return v, true
		}
		return lookup(name)
	}, nil
}
