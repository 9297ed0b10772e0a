package reconcilerfn

import (
	"fmt"

	"golang.org/x/time/rate"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/openaiusage"
	"github.com/hookline/hookline/internal/stripeusage"
	"github.com/hookline/hookline/internal/sums"
)

// sumReader builds the adapter that reads src's sums, by its provider. A
// Stripe source reads with STRIPE_USAGE_API_KEY, paced to
// STRIPE_USAGE_RATE calls a second; an OpenAI source with
// OPENAI_ADMIN_KEY, paced to OPENAI_USAGE_RATE.
func sumReader(d app.Deps, cfg config.Reconciler, src sums.Source) (sums.Reader, error) {
	switch src.Provider {
	case "stripe":
		return stripeusage.New(stripeusage.Config{BaseURL: src.BaseURL, Key: cfg.StripeUsageKey,
			Rate: cfg.StripeUsageRate, Logger: d.Log()})
	case "openai":
		return openaiusage.New(openaiusage.Config{BaseURL: src.BaseURL, Key: cfg.OpenAIAdminKey,
			Rate: rate.Limit(cfg.OpenAIUsageRate), Logger: d.Log()})
	case "openmeter":
		return newOpenMeterReader(d, src.BaseURL)
	default:
		return nil, fmt.Errorf("no adapter for provider %q", src.Provider)
	}
}
