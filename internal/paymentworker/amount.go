package paymentworker

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Amount formats of a [Mapping]: how the provider writes an amount.
const (
	// AmountMinor is a JSON integer in the currency's minor units (Stripe,
	// Adyen, Checkout.com, Square, Razorpay, GoCardless): 990 for 9.90 USD.
	AmountMinor = "minor"
	// AmountMinorString is minor units as a JSON string of digits (Paddle):
	// "990".
	AmountMinorString = "minor_string"
	// AmountDecimal is a JSON string in major units with a decimal point
	// (PayPal, Mollie): "9.90", scaled by the currency's minor unit in
	// ISO 4217 (JPY 0, USD 2, KWD 3, UYW 4; see [minorUnits]). It is
	// refused when it does not scale exactly, in a currency ISO gives no
	// minor unit ([ErrNoMinorUnit]), and with a fraction where the
	// provider's API takes none ([ErrProviderDecimals]).
	AmountDecimal = "decimal"
)

var amountFormats = []string{AmountMinor, AmountMinorString, AmountDecimal}

// maxAmountDigits bounds an amount's digits: 18 fit in an int64.
const maxAmountDigits = 18

// amountOf reads v, the JSON value at the mapping's amount pointer, as a
// positive count of the currency's minor units in ISO 4217. scheme is the
// mapping's, whose provider may write some currencies without decimals.
func amountOf(v any, format, cur, scheme string) (int64, error) {
	switch format {
	case AmountMinorString:
		s, ok := v.(string)
		if !ok {
			return 0, errors.New("is not a string of minor units")
		}
		return positiveDigits(s)
	case AmountDecimal:
		s, ok := v.(string)
		if !ok {
			return 0, errors.New("is not a decimal string")
		}
		return scaleDecimal(s, cur, scheme)
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, errors.New("is not a number")
	}
	return positiveDigits(string(n))
}

// positiveDigits reads 1 to 18 decimal digits, and nothing else, as a
// positive integer.
func positiveDigits(s string) (int64, error) {
	if rest, neg := strings.CutPrefix(s, "-"); neg && rest != "" && strings.Trim(rest, "0123456789") == "" {
		return 0, errors.New("is not positive")
	}
	if s == "" || len(s) > maxAmountDigits || strings.Trim(s, "0123456789") != "" {
		return 0, errors.New("is not an integer in minor units")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("is not positive")
	}
	return n, nil
}

// scaleDecimal turns "9.90" in cur into 990: the digits after the point
// are padded to the currency's minor unit, and any beyond it must be
// zeros.
func scaleDecimal(s, cur, scheme string) (int64, error) {
	scale, err := minorUnits(cur)
	if err != nil {
		return 0, err
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || strings.Trim(whole, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" {
		return 0, errors.New("is not a decimal amount (digits, an optional point and digits)")
	}
	frac = strings.TrimRight(frac, "0")
	if err := providerDecimals(scheme, cur, frac); err != nil {
		return 0, err
	}
	if len(frac) > scale {
		return 0, fmt.Errorf("has more decimals than its currency's %d: it does not scale exactly to minor units", scale)
	}
	frac += strings.Repeat("0", scale-len(frac))
	digits := strings.TrimLeft(whole+frac, "0")
	if digits == "" {
		return 0, errors.New("is not positive")
	}
	return positiveDigits(digits)
}
