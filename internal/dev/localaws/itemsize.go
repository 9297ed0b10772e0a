package localaws

import (
	"strings"
	"unicode/utf8"
)

// DynamoDB's size limits (developer guide, "Constraints in Amazon
// DynamoDB"; 1 KB = 1,024 bytes).
const (
	maxItemBytes        = 400 * 1024      // one item
	maxTransactionBytes = 4 * 1024 * 1024 // the items of one transaction
)

// itemSize is an item's size by DynamoDB's rules (developer guide,
// "DynamoDB item sizes and formats",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
// the sum over its attributes of the UTF-8 length of the name and the
// size of the value. Item limits and capacity units are computed from it.
func itemSize(it item) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

// valueSize is the size of one attribute value without its name:
//
//   - a string, its UTF-8 bytes; a binary, its raw bytes;
//   - a number, 1 byte per two significant digits, plus 1;
//   - a null or a Boolean, 1 byte;
//   - a list or a map, 3 bytes, plus each element's size (a map element's
//     name included), plus 1 byte per element;
//   - a set, the sum of its elements' sizes.
func valueSize(v *av) int {
	switch {
	case v == nil:
		return 0
	case v.S != nil:
		return len(*v.S)
	case v.N != nil:
		return numberSize(*v.N)
	case v.B != nil:
		return len(v.B)
	case v.BOOL != nil, v.NULL != nil:
		return 1
	case v.SS != nil:
		n := 0
		for _, s := range v.SS {
			if s != nil {
				n += len(*s)
			}
		}
		return n
	case v.NS != nil:
		n := 0
		for _, s := range v.NS {
			if s != nil {
				n += numberSize(*s)
			}
		}
		return n
	case v.BS != nil:
		n := 0
		for _, b := range v.BS {
			n += len(b)
		}
		return n
	case v.L != nil:
		n := 3
		for _, e := range v.L {
			n += valueSize(e) + 1
		}
		return n
	case v.M != nil:
		return 3 + itemSize(v.M) + len(v.M)
	}
	return 0
}

// numberSize is the size of a number in its wire text ("-12.50",
// "1.5E+3"): 1 byte per two significant digits (leading and trailing
// zeros trimmed; zero has one), plus 1 byte.
func numberSize(text string) int {
	mantissa := strings.TrimLeft(text, "+-")
	if i := strings.IndexAny(mantissa, "eE"); i >= 0 {
		mantissa = mantissa[:i]
	}
	digits := strings.Trim(strings.Replace(mantissa, ".", "", 1), "0")
	sig := utf8.RuneCountInString(digits)
	if sig == 0 {
		sig = 1
	}
	return (sig+1)/2 + 1
}
