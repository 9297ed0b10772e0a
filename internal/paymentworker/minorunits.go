package paymentworker

import (
	"errors"
	"slices"
	"strings"

	"github.com/bojanz/currency"

	"github.com/hookline/hookline/pkg/webhook"
)

// A decimal amount is refused for its currency with these errors, inside
// [ErrMalformed].
var (
	// ErrNoMinorUnit means the currency has no minor unit in ISO 4217
	// ("N.A."): a metal (XAU, XAG, XPD, XPT), a unit of account (XDR,
	// XUA, XSU, XBA to XBD), the testing code XTS or "no currency" XXX.
	// A decimal amount in it has no scale to become minor units by.
	ErrNoMinorUnit = errors.New("paymentworker: the currency has no minor unit in ISO 4217")
	// ErrProviderDecimals means the amount has a fraction in a currency
	// that its provider's API writes without decimals (PayPal's HUF, JPY
	// and TWD), so the amount is not what the provider sent.
	ErrProviderDecimals = errors.New("paymentworker: the provider takes no decimals in the currency")
)

// refusal is an amount refused for its currency: it reads as msg, which
// follows the field's pointer, and is one of the errors above.
type refusal struct {
	msg  string
	kind error
}

func (r refusal) Error() string { return r.msg }
func (r refusal) Unwrap() error { return r.kind }

// Minor units come from ISO 4217 list one, through
// github.com/bojanz/currency, whose table is generated from the list-one.xml
// that ISO's maintenance agency publishes (v1.5.1: list one of
// 2026-01-01, 165 codes with a minor unit). golang.org/x/text/currency is
// not used: its digits are CLDR's display data (IDR, COP and IQD 0, no
// MRU, SLE, VES, VED or UYW). TestEveryISOCodeHasISOsMinorUnit holds
// this file to ISO's own table in testdata/iso4217-list-one.tsv, so an
// upgrade of the module that drifts from ISO fails there.

// noMinorUnit lists the codes whose minor unit is "N.A." in list one of
// 2026-01-01. bojanz/currency leaves them out, as it leaves out codes
// ISO does not list; this list tells the two apart in the error.
var noMinorUnit = []string{"XAG", "XAU", "XBA", "XBB", "XBC", "XBD", "XDR", "XPD", "XPT", "XSU", "XTS", "XUA", "XXX"}

// minorUnits is cur's minor unit in ISO 4217, the number of decimals its
// amounts have: JPY 0, USD 2, IQD 3, UYW 4. cur may be in lower case.
func minorUnits(cur string) (int, error) {
	if len(cur) != 3 || strings.Trim(cur, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") != "" {
		return 0, errNotISO
	}
	code := strings.ToUpper(cur)
	if slices.Contains(noMinorUnit, code) {
		return 0, refusal{"is in a currency with no minor unit in ISO 4217 (a metal, a unit of account, XTS or XXX), so a decimal amount in it cannot be counted in minor units", ErrNoMinorUnit}
	}
	digits, ok := currency.GetDigits(code)
	if !ok {
		return 0, errNotISO
	}
	return int(digits), nil
}

var errNotISO = errors.New("is in a currency that is not an ISO 4217 code, so its minor unit is unknown")

// A noDecimals rule is a provider's documented exception to ISO 4217:
// currencies its API writes without decimals, though ISO gives them a
// minor unit.
type noDecimals struct {
	currencies []string
	rule       string
}

// providerNoDecimals holds each provider's exceptions, by scheme. PayPal:
// HUF, JPY and TWD "do not support decimals"
// (https://developer.paypal.com/reference/currency-codes/). Its amount is
// still counted in ISO's minor units, which is what the effect takes:
// "1000" HUF is 100000.
var providerNoDecimals = map[webhook.Scheme]noDecimals{
	webhook.SchemePayPal: {currencies: []string{"HUF", "JPY", "TWD"},
		rule: "PayPal takes HUF, JPY and TWD without decimals (developer.paypal.com/reference/currency-codes)"},
}

// providerDecimals refuses frac, the nonzero digits after the point, in a
// currency that scheme's provider writes without decimals.
func providerDecimals(scheme, cur, frac string) error {
	nd, ok := providerNoDecimals[webhook.Scheme(scheme)]
	if !ok || frac == "" || !slices.Contains(nd.currencies, strings.ToUpper(cur)) {
		return nil
	}
	return refusal{"has decimals, and " + nd.rule, ErrProviderDecimals}
}
