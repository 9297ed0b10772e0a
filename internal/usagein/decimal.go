package usagein

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// MaxUnits is the most units one record may carry after scaling, 2^53:
// the ledger's limit, exact in every JSON reader on the way.
const MaxUnits int64 = 1 << 53

// MaxScale bounds a mapping's scale: 10^18 still fits an int64.
const MaxScale int64 = 1_000_000_000_000_000_000

// maxDecimalLen bounds a value's text. A longer one cannot be a meter's
// reading, and its exponent could ask for a number too large to compute.
const maxDecimalLen = 64

// Errors of [ScaleDecimal]; the reader turns each into a field error.
var (
	errNotDecimal = errors.New("want a decimal number, such as 12.5 or \"12.5\"")
	errNegative   = errors.New("must not be negative")
)

// ScaleDecimal reads text, a decimal number in JSON's grammar (an optional
// '-', digits without a leading zero, an optional fraction and exponent),
// exactly, and returns it times scale. A value that is not a whole number
// of units at that scale is refused, never rounded: 12.5 at scale 1000 is
// 12500, 12.5005 at scale 1000 is an error. So are a negative value and one
// beyond [MaxUnits]. Zero ("0", "0.0", "-0") is zero.
func ScaleDecimal(text string, scale int64) (int64, error) {
	if scale < 1 || scale > MaxScale {
		return 0, fmt.Errorf("scale %d outside 1..%d", scale, MaxScale)
	}
	neg, digits, exp, err := splitDecimal(text)
	if err != nil {
		return 0, err
	}
	digits = strings.TrimLeft(digits, "0")
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits, exp = digits[:len(digits)-1], exp+1
	}
	switch {
	case digits == "":
		return 0, nil
	case neg:
		return 0, errNegative
	case exp > 20:
		return 0, fmt.Errorf("exceeds %d (2^53) at scale %d", MaxUnits, scale)
	case exp < -(19 + maxDecimalLen):
		return 0, fmt.Errorf("has more precision than scale %d counts", scale)
	}
	n, _ := new(big.Int).SetString(digits, 10)
	n.Mul(n, big.NewInt(scale))
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil)
	if exp >= 0 {
		n.Mul(n, pow)
	} else if _, rem := n.QuoRem(n, pow, new(big.Int)); rem.Sign() != 0 {
		return 0, fmt.Errorf("has more precision than scale %d counts", scale)
	}
	if !n.IsInt64() || n.Int64() > MaxUnits {
		return 0, fmt.Errorf("exceeds %d (2^53) at scale %d", MaxUnits, scale)
	}
	return n.Int64(), nil
}

// splitDecimal parses JSON's number grammar into its sign, its significant
// digits (the integer and fraction parts joined) and the power of ten they
// are multiplied by.
func splitDecimal(text string) (neg bool, digits string, exp int, err error) {
	if text == "" || len(text) > maxDecimalLen {
		return false, "", 0, errNotDecimal
	}
	s := text
	neg = strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, expText, hasExp := strings.Cut(strings.ToLower(s), "e")
	whole, frac, hasFrac := strings.Cut(mant, ".")
	switch {
	case !allDigits(whole) || (len(whole) > 1 && whole[0] == '0'),
		hasFrac && !allDigits(frac),
		hasExp && !allDigits(strings.TrimLeft(expText, "+-")),
		hasExp && len(expText) > 1 && strings.ContainsAny(expText[1:], "+-"):
		return false, "", 0, errNotDecimal
	}
	if hasExp {
		e, perr := strconv.Atoi(expText)
		if perr != nil || abs(e) > 1000 {
			return false, "", 0, errNotDecimal
		}
		exp = e
	}
	return neg, whole + frac, exp - len(frac), nil
}

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
