package localrun

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
)

// DevSecrets are the development-only signing secrets a local run uses
// when HOOKLINE_<SOURCE>_SECRETS is not set. They are published in
// docs/local-run.md and must never be used anywhere else.
var DevSecrets = map[string]string{
	"HOOKLINE_PAYMENTS_SECRETS": "whsec_aG9va2xpbmUtbG9jYWwtcGF5bWVudHMta2V5IQ==",
	"HOOKLINE_USAGE_SECRETS":    "whsec_aG9va2xpbmUtbG9jYWwtdXNhZ2Uta2V5ISEhIQ==",
}

// StripeUsageKey is the Stripe key a local run's reconciler reads meter
// summaries with when the simulator checks no key: a test-mode key, as a
// sandbox's.
const StripeUsageKey = "sk_test_hookline_local_usage"

// localCommitHorizon is how late the simulator's slowest fault commits
// (a slow commit or a key in flight, with the delays the local drills
// use), the commit part of a local run's settle horizon.
const localCommitHorizon = 3 * time.Second

// DevRoutingKey is the PagerDuty routing key of the reconciliation owner
// in local runs (the simulator's pager sink accepts any key).
const DevRoutingKey = "local-recon-routing-key"

// SecretVar names the environment variable holding a source's secrets in
// local runs.
func SecretVar(source string) string {
	return "HOOKLINE_" + strings.ToUpper(strings.ReplaceAll(source, "-", "_")) + "_SECRETS"
}

// functionLookup resolves a function's variables: the process environment
// (or Config.Lookup) first, then the template's Environment with every
// reference resolved locally, then the development secrets.
func (s *System) functionLookup(function string) (func(string) (string, bool), error) {
	vars, err := s.AWS.FunctionEnv(function)
	if err != nil {
		return nil, err
	}
	for k, v := range vars {
		if d, ok := s.AWS.Template.ParameterDefault(v); ok && strings.HasPrefix(v, "ref:") {
			vars[k] = d // as CloudFormation would, for a parameter left unset
		}
	}
	if text, ok := vars["HOOKLINE_SOURCES"]; ok {
		if vars["HOOKLINE_SOURCES"], err = localSources(text); err != nil {
			return nil, err
		}
	}
	override := s.cfg.Lookup
	if override == nil {
		override = os.LookupEnv
	}
	local := map[string]string{
		"PROVIDER_URL": s.Sim.URL(), "PROVIDER_API_KEY": s.cfg.Sim.APIKey,
		"PAYMENT_PROVIDER_URL": s.Sim.URL(),
		"PAGER_URL":            s.Sim.URL(), "RECON_ROUTING_KEY": DevRoutingKey,
		"MOLLIE_API_URL": s.Mollie.URL(), "MOLLIE_API_KEY": providersim.MollieAPIKey,
		"PAYPAL_API_URL": s.PayPalAPI.URL(), "PAYPAL_CLIENT_ID": providersim.PayPalClientID, "PAYPAL_CLIENT_SECRET": providersim.PayPalClientSecret,
		"GOCARDLESS_API_URL": s.GoCardless.URL(), "GOCARDLESS_ACCESS_TOKEN": providersim.GoCardlessAccessToken,
		"STRIPE_USAGE_API_KEY": cmp.Or(s.cfg.Sim.APIKey, StripeUsageKey),
		"OPENAI_ADMIN_KEY":     providersim.OpenAIAdminKey,
		"OPENMETER_URL":        s.OpenMeter.URL(), "OPENMETER_API_KEY": providersim.OpenMeterAPIKey,
	}
	if s.cfg.PaymentProvider != "" {
		local["PAYMENT_PROVIDER"] = s.cfg.PaymentProvider
		// The simulator's search lags by exactly its lookup lag, not by
		// Stripe's minute: the horizon shrinks with it, so that an
		// unknown outcome settles in seconds.
		lag := max(s.cfg.Sim.LookupLag, time.Millisecond) // a positive duration
		local["STRIPE_SEARCH_LAG"] = lag.String()
		local["PROVIDER_SETTLE_HORIZON"] = (lag + localCommitHorizon).String()
	}
	if s.cfg.PaymentMappings != "" {
		local["PAYMENT_MAPPINGS"] = s.cfg.PaymentMappings
	}
	if every := s.cfg.ScheduleEvery; every > 0 {
		// A faster local schedule shortens the poll contract with it: the
		// export of the simulator is consistent at once.
		local["POLL_INTERVAL"] = every.String()
		local["CONSISTENCY_LAG"] = "1s"
	}
	return func(name string) (string, bool) {
		if v, ok := override(name); ok {
			if name == "SUM_SOURCES" {
				om := s.OpenMeter.URL()
				if _, set := override("OPENMETER_URL"); set {
					om = "" // the reader falls back to OPENMETER_URL
				}
				return localSumSources(v, s.Sim.URL(), om), true
			}
			return v, true
		}
		if v, ok := local[name]; ok {
			return v, true
		}
		if v, ok := vars[name]; ok {
			return v, true
		}
		v, ok := DevSecrets[name]
		return v, ok
	}, nil
}

// localSources rewrites the template's source list so that each source
// reads its secrets from HOOKLINE_<SOURCE>_SECRETS instead of Secrets
// Manager, which no local emulator here runs.
func localSources(text string) (string, error) {
	var sources []map[string]any
	if err := json.Unmarshal([]byte(text), &sources); err != nil {
		return "", fmt.Errorf("localrun: template HOOKLINE_SOURCES: %w", err)
	}
	for _, src := range sources {
		delete(src, "secret_id")
		src["secret_env"] = SecretVar(fmt.Sprint(src["name"]))
	}
	out, err := json.Marshal(sources)
	return string(out), err
}

// localSumSources points every source of SUM_SOURCES that names no
// base_url at the simulator, whose faces serve each provider's sums: an
// openmeter source at the OpenMeter face, on its own port (or, when
// openMeterURL is "", at OPENMETER_URL, by naming none), the others at
// simURL. Text that does not parse is returned as it is, for the
// configuration to refuse with its own error.
func localSumSources(text, simURL, openMeterURL string) string {
	var sources map[string]map[string]any
	if err := json.Unmarshal([]byte(text), &sources); err != nil || len(sources) == 0 {
		return text
	}
	for _, src := range sources {
		if src == nil {
			return text
		}
		_, named := src["base_url"]
		switch {
		case named:
		case src["provider"] == "openmeter" && openMeterURL == "":
		case src["provider"] == "openmeter":
			src["base_url"] = openMeterURL
		default:
			src["base_url"] = simURL
		}
	}
	out, err := json.Marshal(sources)
	if err != nil {
		return text
	}
	return string(out)
}
