package config

import "errors"

// PayPal is the payment worker's access to PayPal's REST API, where it
// reads the capture or sale a PayPal webhook names: PayPal signs only a
// CRC32 of the body, so the body is never acted on.
type PayPal struct {
	// URL is the API's base URL (https://api-m.paypal.com, the sandbox's,
	// or a double's).
	URL string
	// ClientID and ClientSecret are the REST app's client credentials.
	// Never log the secret.
	ClientID     string
	ClientSecret string
}

// PayPalAPIURL is PayPal's live API, the default of PAYPAL_API_URL.
const PayPalAPIURL = "https://api-m.paypal.com"

// GoCardless is the payment worker's access to GoCardless's API, where
// it reads the payment of a payments.confirmed event, which carries no
// amount.
type GoCardless struct {
	// URL is the API's base URL (https://api.gocardless.com, the
	// sandbox's, or a double's).
	URL string
	// AccessToken is a GoCardless access token that may read payments.
	// Never log it.
	AccessToken string
}

// GoCardlessAPIURL is GoCardless's live API, the default of
// GOCARDLESS_API_URL.
const GoCardlessAPIURL = "https://api.gocardless.com"

// fetchersFromEnv reads the credentials of the providers whose objects
// the payment worker fetches besides Mollie's: PAYPAL_CLIENT_ID with
// PAYPAL_CLIENT_SECRET (both or neither) and PAYPAL_API_URL, and
// GOCARDLESS_ACCESS_TOKEN with GOCARDLESS_API_URL. Unset, a provider is
// not fetched and its messages are dead-lettered. A URL without
// credentials is refused; no credential's value is ever part of an error.
func fetchersFromEnv(e *env) (PayPal, GoCardless) {
	p := PayPal{ClientID: e.optional("PAYPAL_CLIENT_ID", ""), ClientSecret: e.optional("PAYPAL_CLIENT_SECRET", ""), URL: e.optional("PAYPAL_API_URL", "")}
	switch {
	case p.ClientID != "" && p.ClientSecret == "":
		e.errs = append(e.errs, errors.New("config: PAYPAL_CLIENT_ID is set but PAYPAL_CLIENT_SECRET is not: set both, or neither"))
	case p.ClientID == "" && p.ClientSecret != "":
		e.errs = append(e.errs, errors.New("config: PAYPAL_CLIENT_SECRET is set but PAYPAL_CLIENT_ID is not: set both, or neither"))
	case p.ClientID == "" && p.URL != "":
		e.errs = append(e.errs, errors.New("config: PAYPAL_API_URL is set but PAYPAL_CLIENT_ID and PAYPAL_CLIENT_SECRET are not"))
	case p.ClientID != "" && p.URL == "":
		p.URL = PayPalAPIURL
	}
	g := GoCardless{AccessToken: e.optional("GOCARDLESS_ACCESS_TOKEN", ""), URL: e.optional("GOCARDLESS_API_URL", "")}
	switch {
	case g.AccessToken == "" && g.URL != "":
		e.errs = append(e.errs, errors.New("config: GOCARDLESS_API_URL is set but GOCARDLESS_ACCESS_TOKEN is not"))
	case g.AccessToken != "" && g.URL == "":
		g.URL = GoCardlessAPIURL
	}
	return p, g
}
