package reconcilerfn

import (
	"fmt"

	"golang.org/x/time/rate"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/openaiusage"
	"github.com/hookline/hookline/internal/paced"
	"github.com/hookline/hookline/internal/stripeusage"
	"github.com/hookline/hookline/internal/sums"
)

// sumReaders builds the reader of each sums source (SUM_SOURCES), once
// for the function's life, so every workload of a run (and every run) of
// a source reads through one paced client. Sources of one provider at one
// address (one account: each provider has one key) share it too: a
// Retry-After the provider names to one holds the calls of all.
func sumReaders(d app.Deps, cfg config.Reconciler) (map[string]sums.Reader, error) {
	readers := map[string]sums.Reader{}
	shared := map[[2]string]*paced.Client{}
	for name, src := range cfg.Sums {
		at := [2]string{src.Provider, src.BaseURL}
		if src.Provider == "openmeter" {
			at[1] = cmpOr(src.BaseURL, lookup(d, "OPENMETER_URL"))
		}
		r, err := sumReader(d, cfg, src, shared[at])
		if err != nil {
			return nil, fmt.Errorf("sums source %s: %w", name, err)
		}
		readers[name] = r
		if p, ok := r.(interface{ Paced() *paced.Client }); ok {
			shared[at] = p.Paced()
		}
	}
	return readers, nil
}

// sumReader builds the adapter that reads src's sums, by its provider,
// through call when it is not nil. A Stripe source reads with
// STRIPE_USAGE_API_KEY, paced to STRIPE_USAGE_RATE calls a second; an
// OpenAI source with OPENAI_ADMIN_KEY, paced to OPENAI_USAGE_RATE.
func sumReader(d app.Deps, cfg config.Reconciler, src sums.Source, call *paced.Client) (sums.Reader, error) {
	switch src.Provider {
	case "stripe":
		return stripeusage.New(stripeusage.Config{BaseURL: src.BaseURL, Key: cfg.StripeUsageKey,
			Rate: cfg.StripeUsageRate, Logger: d.Log(), Paced: call})
	case "openai":
		return openaiusage.New(openaiusage.Config{BaseURL: src.BaseURL, Key: cfg.OpenAIAdminKey,
			Rate: rate.Limit(cfg.OpenAIUsageRate), Logger: d.Log(), Paced: call})
	case "openmeter":
		return newOpenMeterReader(d, src.BaseURL, call)
	default:
		return nil, fmt.Errorf("no adapter for provider %q", src.Provider)
	}
}

func lookup(d app.Deps, k string) string {
	if d.Lookup == nil {
		return ""
	}
	v, _ := d.Lookup(k)
	return v
}
