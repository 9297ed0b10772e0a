package price

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cockroachdb/apd/v3"
)

// maxPriceLen bounds a price's text: a longer one is no price, and its
// exponent could ask for a number too large to compute.
const maxPriceLen = 64

// Price is an exact decimal number of spend units per meter unit, and the
// instant from which it holds. "2.5" micro-dollars a token is 25 × 10^-1;
// "0.000004" USD a call is 4 × 10^-6. The zero Price is 0 from the
// beginning; [One] is 1.
type Price struct {
	// From is the first instant the price holds: usage that occurs at or
	// after it, until the next price's From. Zero is since the
	// beginning.
	From time.Time
	coef int64 // the price is coef × 10^-dec, exactly
	dec  int32
}

// One is 1 spend unit per meter unit from the beginning: what every meter
// costs in a deployment without prices, and what OpenAI's costs cost (they
// are already money).
var One = Price{coef: 1}

// bigTen is the context the package computes in: 40 digits is more than
// any int64 coefficient, so an inexact result is a finer price, never a
// lost digit.
var bigTen = apd.BaseContext.WithPrecision(40)

// Parse reads text, a non-negative decimal number such as "2.5",
// "0.000004" or "1e-6", exactly. Trailing zeros are not decimals: "2.50"
// has one. A negative, NaN or infinite price is refused, and so is one
// with more than [MaxScale] decimals or a coefficient beyond int64.
func Parse(text string) (Price, error) {
	bad := func(reason string) (Price, error) {
		return Price{}, &FieldError{Field: "price", Value: text, Reason: reason}
	}
	if text == "" || len(text) > maxPriceLen {
		return bad(fmt.Sprintf("want a decimal number of at most %d characters, such as \"2.5\"", maxPriceLen))
	}
	d, _, err := apd.NewFromString(text)
	switch {
	case err != nil:
		return bad("want a decimal number, such as \"2.5\"")
	case d.Form != apd.Finite:
		return bad("want a finite number")
	case d.Negative:
		return bad("must not be negative")
	}
	d.Reduce(d)
	if d.Exponent > 0 { // 25e1: an integer, with no decimals
		if _, err := bigTen.Quantize(d, d, 0); err != nil {
			return bad("too large")
		}
	}
	switch {
	case -d.Exponent > int32(MaxScale):
		return bad(fmt.Sprintf("has %d decimals; at most %d are counted", -d.Exponent, MaxScale))
	case !d.Coeff.IsInt64():
		return bad("too large")
	}
	return Price{coef: d.Coeff.Int64(), dec: max(-d.Exponent, 0)}, nil
}

// MustParse is [Parse] for a literal price in tests and examples; it
// panics on a bad one.
func MustParse(text string) Price {
	p, err := Parse(text)
	if err != nil {
		panic(err)
	}
	return p
}

// Decimals is the number of decimals the price has: 1 for "2.5", 0 for
// "3".
func (p Price) Decimals() int { return int(p.dec) }

// String is the price as an exact decimal: "2.5", "0.000004".
func (p Price) String() string { return apd.New(p.coef, -p.dec).Text('f') }

// Equal reports whether p and q are the same price from the same instant.
func (p Price) Equal(q Price) bool {
	return p.coef == q.coef && p.dec == q.dec && p.From.Equal(q.From)
}

// Nano is the price in the scale's units: 10^-k spend units per meter
// unit, an integer. A price with more decimals than the scale is
// [ErrScale], one beyond int64 at the scale [ErrOverflow].
func (p Price) Nano(s Scale) (int64, error) {
	if p.dec > int32(s) {
		return 0, fmt.Errorf("%w: price %s has %d decimals, more than scale %d counts", ErrScale, p, p.dec, s)
	}
	n, ok := mul(p.coef, pow10(int32(s)-p.dec))
	if !ok {
		return 0, fmt.Errorf("%w: price %s at scale %d", ErrOverflow, p, s)
	}
	return n, nil
}

// Schedule is a meter's prices over time, by From ascending: the price at
// an instant is the last one whose From is at or before it ([Schedule.PriceAt]).
// A price change so applies to usage that occurs at or after it, and
// never reprices what was counted before. The zero Schedule has no price.
type Schedule struct {
	prices []Price
}

// Fixed is the schedule of one price from the beginning.
func Fixed(p Price) Schedule {
	p.From = time.Time{}
	return Schedule{prices: []Price{p}}
}

// NewSchedule is the schedule of prices, which must be in strictly
// ascending order of From; only the first may have a zero From.
func NewSchedule(prices ...Price) (Schedule, error) {
	var errs []error
	for i, p := range prices {
		switch {
		case i > 0 && p.From.IsZero():
			errs = append(errs, &FieldError{Field: fmt.Sprintf("price[%d].from", i), Reason: "required after the first price"})
		case i > 0 && !p.From.After(prices[i-1].From):
			errs = append(errs, &FieldError{Field: fmt.Sprintf("price[%d].from", i), Value: p.From.Format(time.RFC3339Nano),
				Reason: "must be after the price before it: write prices in the order they hold"})
		}
	}
	if len(prices) == 0 {
		errs = append(errs, &FieldError{Field: "price", Reason: "at least one price is required"})
	}
	if len(errs) > 0 {
		return Schedule{}, errors.Join(errs...)
	}
	return Schedule{prices: slices.Clone(prices)}, nil
}

// Prices are the schedule's prices, by From ascending.
func (s Schedule) Prices() []Price { return slices.Clone(s.prices) }

// PriceAt is the price that holds at t: the last whose From is at or
// before t. Usage before the first price has none: [ErrNoPrice].
func (s Schedule) PriceAt(t time.Time) (Price, error) {
	i, _ := slices.BinarySearchFunc(s.prices, t, func(p Price, t time.Time) int {
		if p.From.After(t) {
			return 1
		}
		return -1 // at or before t: keep looking right
	})
	if i == 0 {
		if len(s.prices) == 0 {
			return Price{}, fmt.Errorf("%w: the meter has no price", ErrNoPrice)
		}
		return Price{}, fmt.Errorf("%w: at %s, before the first price (from %s)", ErrNoPrice,
			t.UTC().Format(time.RFC3339Nano), s.prices[0].From.UTC().Format(time.RFC3339Nano))
	}
	return s.prices[i-1], nil
}

// Equal reports whether s and o hold the same prices from the same
// instants.
func (s Schedule) Equal(o Schedule) bool { return slices.EqualFunc(s.prices, o.prices, Price.Equal) }

// Check refuses a price the scale cannot count exactly: more decimals than
// the scale, or beyond int64 at it.
func (s Schedule) Check(scale Scale) error {
	var errs []error
	for i, p := range s.prices {
		if _, err := p.Nano(scale); err != nil {
			reason := fmt.Sprintf("exceeds %d at scale %d", int64(MaxNano), scale)
			if errors.Is(err, ErrScale) {
				reason = fmt.Sprintf("has %d decimals, more than scale %d counts: raise the scale, or round the price", p.dec, scale)
			}
			errs = append(errs, &FieldError{Field: fmt.Sprintf("price[%d]", i), Value: p.String(), Reason: reason})
		}
	}
	return errors.Join(errs...)
}

// scheduleEntry is one price as written in JSON.
type scheduleEntry struct {
	Price json.Number `json:"price"`
	From  string      `json:"from,omitempty"`
}

// ParseSchedule reads a meter's prices: one price from the beginning,
// written as a decimal string or number ("2.5", 2.5), or a list of
// prices and the instants (RFC 3339) from which they hold, in order:
//
//	[{"price": "2.5"}, {"price": "3", "from": "2026-03-01T00:00:00Z"}]
//
// Every problem is reported at once, each a [*FieldError] naming the
// price ("price[1].from").
func ParseSchedule(data []byte) (Schedule, error) { return parseSchedule(data, "price") }

func parseSchedule(data []byte, path string) (Schedule, error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] != '[' {
		var n json.Number
		if err := json.Unmarshal(data, &n); err != nil {
			return Schedule{}, &FieldError{Field: path, Value: string(data), Reason: "want a decimal such as \"2.5\", or a list of {\"price\", \"from\"}"}
		}
		p, err := Parse(n.String())
		if err != nil {
			return Schedule{}, renamed(err, path)
		}
		return Fixed(p), nil
	}
	var entries []scheduleEntry
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&entries); err != nil {
		return Schedule{}, &FieldError{Field: path, Value: string(data), Reason: "want a list of {\"price\", \"from\"}: " + err.Error()}
	}
	var errs []error
	prices := make([]Price, 0, len(entries))
	for i, e := range entries {
		at := fmt.Sprintf("%s[%d]", path, i)
		p, err := Parse(e.Price.String())
		if err != nil {
			errs = append(errs, renamed(err, at+".price"))
		}
		if e.From != "" {
			if p.From, err = time.Parse(time.RFC3339Nano, e.From); err != nil {
				errs = append(errs, &FieldError{Field: at + ".from", Value: e.From, Reason: "want an RFC 3339 instant such as \"2026-03-01T00:00:00Z\""})
			}
		}
		prices = append(prices, p)
	}
	if len(errs) > 0 {
		return Schedule{}, errors.Join(errs...)
	}
	s, err := NewSchedule(prices...)
	if err != nil {
		return Schedule{}, prefixed(err, path)
	}
	return s, nil
}

// MarshalJSON writes s as [ParseSchedule] reads it: a list of prices
// (as strings, exact) and their instants.
func (s Schedule) MarshalJSON() ([]byte, error) {
	type written struct {
		Price string `json:"price"`
		From  string `json:"from,omitempty"`
	}
	out := make([]written, len(s.prices))
	for i, p := range s.prices {
		out[i].Price = p.String()
		if !p.From.IsZero() {
			out[i].From = p.From.UTC().Format(time.RFC3339Nano)
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads s as [ParseSchedule] does.
func (s *Schedule) UnmarshalJSON(b []byte) error {
	v, err := ParseSchedule(b)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// renamed gives a [*FieldError] (or joined ones) the field path.
func renamed(err error, path string) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		return &FieldError{Field: path, Value: fe.Value, Reason: fe.Reason}
	}
	return err
}

// prefixed puts path before the field of every [*FieldError] in err,
// replacing the "price" every schedule error starts with.
func prefixed(err error, path string) error {
	var out []error
	for _, e := range unjoin(err) {
		var fe *FieldError
		if errors.As(e, &fe) {
			field := fe.Field
			if len(field) >= len("price") && field[:len("price")] == "price" {
				field = path + field[len("price"):]
			} else {
				field = path + "." + field
			}
			e = &FieldError{Field: field, Value: fe.Value, Reason: fe.Reason}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// unjoin lists the errors errors.Join put together, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// pow10 is 10^n for 0 <= n <= 18.
func pow10(n int32) int64 {
	v := int64(1)
	for range n {
		v *= 10
	}
	return v
}

// itoa is strconv.FormatInt in base 10.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }
