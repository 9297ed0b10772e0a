package stripecharge_test

import (
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
)

// newStripeSim starts the provider simulator in Stripe's profile (keys
// honoured and replayed, errors included; a key in flight answers 409;
// currencies in lower case) with its search lagging commits by lag. Its
// PaymentIntents face holds the state stripe-mock lacks.
func newStripeSim(t *testing.T, lag time.Duration) *providersim.Sim {
	t.Helper()
	sim, err := providersim.New(providersim.Config{Profile: providersim.ProfileHonoursKeys, LookupLag: lag,
		NormaliseCurrency: true, APIKey: "sk_test_123"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	return sim
}

// firstRequestOf injects fault into the first create under each of keys.
func firstRequestOf(fault providersim.Fault, keys ...string) providersim.FaultFunc {
	return func(key string, n int) providersim.Fault {
		for _, k := range keys {
			if key == k && n == 1 {
				return fault
			}
		}
		return providersim.Fault{}
	}
}
