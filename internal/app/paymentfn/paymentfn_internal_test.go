package paymentfn

import (
	"slices"
	"testing"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/paymentworker"
)

// TestNewFetchersRegistersEachConfiguredProvider: each provider with
// credentials gets its fetcher, under its scheme's name, and a provider
// without none, so its messages are dead-lettered, never acted on.
func TestNewFetchersRegistersEachConfiguredProvider(t *testing.T) {
	all := config.PaymentWorker{
		Mollie:     config.Mollie{URL: "http://mollie", APIKey: "test_k"},
		PayPal:     config.PayPal{URL: "http://paypal", ClientID: "id", ClientSecret: "secret"},
		GoCardless: config.GoCardless{URL: "http://gocardless", AccessToken: "token"},
	}
	got := newFetchers(all)
	if p, ok := got["paypal"].(*paymentworker.PayPalClient); !ok || p.BaseURL != "http://paypal" || p.ClientID != "id" || p.ClientSecret != "secret" {
		t.Fatalf("paypal fetcher %#v", got["paypal"])
	}
	if g, ok := got["gocardless"].(*paymentworker.GoCardlessClient); !ok || g.BaseURL != "http://gocardless" || g.AccessToken != "token" {
		t.Fatalf("gocardless fetcher %#v", got["gocardless"])
	}
	if _, ok := got["mollie"].(*paymentworker.MollieClient); !ok {
		t.Fatalf("mollie fetcher %#v", got["mollie"])
	}
	only := all
	only.PayPal, only.GoCardless = config.PayPal{}, config.GoCardless{}
	var names []string
	for name := range newFetchers(only) {
		names = append(names, name)
	}
	if !slices.Equal(names, []string{"mollie"}) {
		t.Fatalf("fetchers %v, want only mollie", names)
	}
}
