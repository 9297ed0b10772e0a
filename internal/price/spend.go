package price

import (
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/cockroachdb/apd/v3"
)

// Scale is the number of decimals k of a deployment's spend: spend is kept
// as an integer of 10^-k spend units (at k = 9, nano-units). Every
// configured price must have at most k decimals ([Schedule.Check]), so
// that a meter unit's price is a whole number of them and units × price
// is exact. Scale 0 counts whole spend units: a deployment without prices.
type Scale int32

// MaxScale is the most decimals a scale counts. At 12 the int64 range is
// still some 9 × 10^6 spend units ([Scale.MaxCap] half that).
const MaxScale Scale = 12

// MaxNano is the largest spend a [Spend] holds, in 10^-k spend units:
// the int64 range. A spend beyond it saturates there ([ErrOverflow]).
const MaxNano = math.MaxInt64

// Check refuses a scale outside 0..[MaxScale].
func (s Scale) Check() error {
	if s < 0 || s > MaxScale {
		return &FieldError{Field: "scale", Value: itoa(int64(s)), Reason: fmt.Sprintf("want 0..%d decimals", MaxScale)}
	}
	return nil
}

// Factor is 10^k: the number of the scale's units in one spend unit.
func (s Scale) Factor() int64 { return pow10(int32(s)) }

// MaxCap is the largest cap, in spend units, a workload may have at the
// scale: half the int64 range in spend units, so that a total may run
// past its cap by as much again before it saturates, and a saturated
// total is always over the cap. Scale 0: 4.6 × 10^18; 6: 4.6 × 10^12;
// 12: 4.6 × 10^6.
func (s Scale) MaxCap() int64 { return MaxNano / 2 / s.Factor() }

// CheckCap refuses a cap outside 0..[Scale.MaxCap].
func (s Scale) CheckCap(cap int64) error {
	if cap < 0 || cap > s.MaxCap() {
		return fmt.Errorf("%w: cap %d outside 0..%d spend units at scale %d", ErrOverflow, cap, s.MaxCap(), s)
	}
	return nil
}

// Spend is an exact amount of spend, kept as an integer of 10^-k spend
// units at its [Scale]: the storage form, which a DynamoDB number holds
// and an UpdateExpression's ADD adds exactly. It is summed per record,
// per bucket and per period without rounding; [Spend.Rounded] rounds it
// once, up, where a total meets a cap. The zero Spend is nothing at scale
// 0.
//
// Arithmetic is checked: a result beyond int64 saturates at [MaxNano],
// returns [ErrOverflow], and stays saturated, so that an overflow can only
// trip a cap, never wrap below it.
type Spend struct {
	scale     Scale
	nano      int64
	saturated bool
}

// Zero is no spend at scale s.
func Zero(s Scale) Spend { return Spend{scale: s} }

// FromNano is the spend of nano 10^-k spend units at scale s: a stored
// value read back.
func FromNano(s Scale, nano int64) Spend {
	return Spend{scale: s, nano: nano, saturated: nano == MaxNano}
}

// ParseNano reads a stored spend: DynamoDB's decimal text of an integer
// of 10^-k spend units. DynamoDB holds 38 digits, so an ADD there does not
// overflow; a value beyond int64 reads as saturated ([ErrOverflow]).
func ParseNano(s Scale, text string) (Spend, error) {
	n, ok := new(big.Int).SetString(text, 10)
	switch {
	case !ok:
		return Spend{}, fmt.Errorf("price: stored spend %q is not an integer", text)
	case !n.IsInt64() || n.Int64() == MaxNano:
		return Spend{scale: s, nano: MaxNano, saturated: true}, fmt.Errorf("%w: stored spend %s at scale %d", ErrOverflow, text, s)
	}
	return FromNano(s, n.Int64()), nil
}

// Of is units × p at scale s, exact: the spend of one record, or of a
// bucket's count. units may be negative (a revision down).
func Of(units int64, p Price, s Scale) (Spend, error) {
	a := Zero(s)
	err := a.Add(units, p)
	return a, err
}

// Add adds units × p exactly. A price with more decimals than the scale
// is [ErrScale] and adds nothing; an overflow saturates ([ErrOverflow]).
func (a *Spend) Add(units int64, p Price) error {
	n, err := p.Nano(a.scale)
	if err != nil && !isOverflow(err) {
		return err
	}
	v, ok := mul(units, n)
	if err != nil || !ok {
		a.saturate()
		return fmt.Errorf("%w: %d units at %s at scale %d", ErrOverflow, units, p, a.scale)
	}
	return a.addNano(v)
}

// Plus adds b, a spend of the same scale: a bucket's spend to its
// period's, or a delta to a stored total.
func (a *Spend) Plus(b Spend) error {
	if a.scale != b.scale {
		return fmt.Errorf("%w: adding spend at scale %d to spend at scale %d", ErrScale, b.scale, a.scale)
	}
	if b.saturated {
		a.saturate()
		return fmt.Errorf("%w: adding a saturated spend", ErrOverflow)
	}
	return a.addNano(b.nano)
}

func (a *Spend) addNano(v int64) error {
	if a.saturated {
		return fmt.Errorf("%w: the spend is saturated", ErrOverflow)
	}
	sum := a.nano + v
	if (v > 0 && sum < a.nano) || (v < 0 && sum > a.nano) || sum == MaxNano {
		a.saturate()
		return fmt.Errorf("%w: %d + %d at scale %d", ErrOverflow, a.nano, v, a.scale)
	}
	a.nano = sum
	return nil
}

func (a *Spend) saturate() { a.nano, a.saturated = MaxNano, true }

// Scale is the spend's scale.
func (a Spend) Scale() Scale { return a.scale }

// Nano is the exact spend in 10^-k spend units: the storage form.
func (a Spend) Nano() int64 { return a.nano }

// Saturated reports whether the spend overflowed and holds [MaxNano].
func (a Spend) Saturated() bool { return a.saturated }

// Rounded is the spend in whole spend units, rounded once and up
// (ceiling), so that a cap compared with it never trips later than exact
// arithmetic would: 12.0001 is 13, -0.5 is 0. At scale 0 it is the spend
// itself.
func (a Spend) Rounded() int64 {
	f := a.scale.Factor()
	q := a.nano / f // Go truncates toward zero: the ceiling of a negative
	if a.nano > 0 && a.nano%f != 0 {
		q++
	}
	return q
}

// Over reports whether the spend is over cap, a whole number of spend
// units: Rounded() > cap, which is the exact spend > cap.
func (a Spend) Over(cap int64) bool { return a.saturated || a.Rounded() > cap }

// String is the exact spend as a decimal in spend units: "12.0001".
func (a Spend) String() string {
	if a.saturated {
		return "overflow"
	}
	return apd.New(a.nano, -int32(a.scale)).Text('f')
}

// mul is a × b, and whether it fits an int64.
func mul(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	c := a * b
	if c/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	return c, true
}

func isOverflow(err error) bool { return errors.Is(err, ErrOverflow) }
