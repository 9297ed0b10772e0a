package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/usagein"
)

// Reconciler is the reconciler function's configuration.
type Reconciler struct {
	Spend
	ProviderURL     string
	ProviderAPIKey  string
	ProviderTimeout time.Duration
	// UsagePageLimit is the page size asked of the usage export.
	UsagePageLimit int
	// Overlap, Lag and Horizon shape the export window and the
	// consistency horizon; InitialLookback places the first cursor.
	Overlap, Lag, Horizon, InitialLookback time.Duration
	// The base interval is Spend.PollInterval, the schedule's rate.
	ActiveInterval, QuietInterval, QuietAfter time.Duration
	NearCapRatio                              float64
	FoldConcurrency                           int
	// ExportRule is the time rule of the usage source the export holds
	// (USAGE_EXPORT_SOURCE in USAGE_MAPPINGS).
	ExportRule usagein.TimeRule
	// StripeUsageKey is STRIPE_USAGE_API_KEY (or its _SECRET_ID): the
	// restricted Stripe key the sums reconciler reads meter summaries
	// with. Required when a SUM_SOURCES source is Stripe's. It is a
	// credential and is never logged.
	StripeUsageKey string
	// StripeUsageRate is STRIPE_USAGE_RATE, the calls a second the
	// reconciler makes to one Stripe endpoint (25).
	StripeUsageRate float64
	// OpenAIAdminKey is OPENAI_ADMIN_KEY (or its _SECRET_ID): the OpenAI
	// admin key (sk-admin-...) the sums reconciler reads organization
	// usage and costs with. Required when a SUM_SOURCES source is
	// OpenAI's. It has organisation-owner power: a credential, never
	// logged, read by the reconciler only.
	OpenAIAdminKey string
	// OpenAIUsageRate is OPENAI_USAGE_RATE, the calls a second the
	// reconciler makes to one OpenAI endpoint (5).
	OpenAIUsageRate float64
}

// ReconcilerFromEnv reads [SpendFromEnv]'s variables with RECON_ROUTING_KEY
// required, PROVIDER_URL, and the optional PROVIDER_API_KEY,
// PROVIDER_TIMEOUT (5s), USAGE_PAGE_LIMIT (500), OVERLAP_WINDOW (10m),
// CONSISTENCY_LAG (2m), CONSISTENCY_HORIZON (POLL_MAX_AGE),
// INITIAL_LOOKBACK (1h), ACTIVE_INTERVAL (15m), QUIET_INTERVAL (1h),
// QUIET_AFTER (6h), NEAR_CAP_RATIO (0.8), FOLD_CONCURRENCY (8), and
// USAGE_EXPORT_SOURCE (usage) with USAGE_MAPPINGS for the export's time
// rule ([exportRuleFromEnv]), for SUM_SOURCES of Stripe's,
// STRIPE_USAGE_API_KEY and STRIPE_USAGE_RATE (25), and for OpenAI's,
// OPENAI_ADMIN_KEY (an sk-admin- key) and OPENAI_USAGE_RATE (5).
func ReconcilerFromEnv(lookup Lookup) (Reconciler, error) {
	e := newEnv(lookup)
	cfg := Reconciler{Spend: spendFromEnv(e)}
	if cfg.ReconRoutingKey == "" {
		e.required("RECON_ROUTING_KEY")
	}
	cfg.ProviderURL = e.required("PROVIDER_URL")
	cfg.ProviderAPIKey = e.optional("PROVIDER_API_KEY", "")
	cfg.ProviderTimeout = e.duration("PROVIDER_TIMEOUT", 5*time.Second)
	cfg.UsagePageLimit = e.integer("USAGE_PAGE_LIMIT", 500)
	cfg.Overlap = e.duration("OVERLAP_WINDOW", 10*time.Minute)
	cfg.Lag = e.duration("CONSISTENCY_LAG", 2*time.Minute)
	cfg.Horizon = e.duration("CONSISTENCY_HORIZON", cfg.PollMaxAge)
	cfg.InitialLookback = e.duration("INITIAL_LOOKBACK", time.Hour)
	cfg.ActiveInterval = e.duration("ACTIVE_INTERVAL", 15*time.Minute)
	cfg.QuietInterval = e.duration("QUIET_INTERVAL", time.Hour)
	cfg.QuietAfter = e.duration("QUIET_AFTER", 6*time.Hour)
	cfg.NearCapRatio = ratio(e, "NEAR_CAP_RATIO", 0.8)
	cfg.FoldConcurrency = e.integer("FOLD_CONCURRENCY", 8)
	cfg.ExportRule = exportRuleFromEnv(e)
	cfg.StripeUsageKey = e.optional("STRIPE_USAGE_API_KEY", "")
	cfg.StripeUsageRate = float64(e.integer("STRIPE_USAGE_RATE", 25))
	cfg.OpenAIAdminKey = e.optional("OPENAI_ADMIN_KEY", "")
	cfg.OpenAIUsageRate = float64(e.integer("OPENAI_USAGE_RATE", 5))
	if cfg.OpenAIAdminKey != "" && !strings.HasPrefix(cfg.OpenAIAdminKey, "sk-admin-") {
		e.errs = append(e.errs, errors.New("config: OPENAI_ADMIN_KEY is not an OpenAI admin key (sk-admin-...)"))
	}
	sumKeysRequired(e, cfg)
	return cfg, e.err()
}

// sumKeysRequired requires the key of each provider a SUM_SOURCES source
// reads.
func sumKeysRequired(e *env, cfg Reconciler) {
	keys := map[string]struct{ name, value string }{
		"stripe": {"STRIPE_USAGE_API_KEY", cfg.StripeUsageKey},
		"openai": {"OPENAI_ADMIN_KEY", cfg.OpenAIAdminKey},
	}
	for _, p := range []string{"openai", "stripe"} {
		if keys[p].value != "" {
			continue
		}
		for _, src := range cfg.Sums {
			if src.Provider == p {
				e.required(keys[p].name)
				break
			}
		}
	}
}

// ratio reads a number in (0, 1].
func ratio(e *env, name string, def float64) float64 {
	v, ok := e.lookup(name)
	if !ok || v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 || f > 1 {
		e.errs = append(e.errs, fmt.Errorf("config: %s=%q is not a ratio in (0, 1]", name, v))
		return def
	}
	return f
}
