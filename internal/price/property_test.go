package price_test

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/price"
)

// propRecord is one usage record of the property test.
type propRecord struct {
	meter int
	at    time.Time
	units int64
}

// propMeter is a meter's prices, as written (text) and as parsed.
type propMeter struct {
	texts    []string // each price's decimal text, as configured
	froms    []time.Time
	schedule price.Schedule
}

// propWorld is one seed's scale, meters, records, sums buckets and
// periods.
type propWorld struct {
	scale   price.Scale
	meters  []propMeter
	records []propRecord
	start   time.Time
	periods []time.Time // period starts; the last is the end
}

const propWidth = time.Hour // the sums buckets' width

// newPropWorld draws a world from seed: prices with up to scale decimals,
// written in the forms a configuration may use ("2.50", "25e-1"), price
// changes at random hour boundaries, and records at random instants, some
// exactly on a change.
func newPropWorld(t *testing.T, seed uint64) propWorld {
	r := rand.New(rand.NewPCG(seed, 48))
	w := propWorld{scale: price.Scale(r.IntN(10)), start: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	days := 28 + r.IntN(10)
	end := w.start.Add(time.Duration(days) * 24 * time.Hour)
	for p := w.start; p.Before(end); p = p.Add(time.Duration(1+r.IntN(10)) * 24 * time.Hour) {
		w.periods = append(w.periods, p)
	}
	w.periods = append(w.periods, end)
	for range 1 + r.IntN(3) {
		var m propMeter
		var prices []price.Price
		for i := range 1 + r.IntN(4) {
			text := propPriceText(r, int(w.scale))
			p := price.MustParse(text)
			if i > 0 {
				p.From = w.start.Add(time.Duration(r.IntN(days*24)) * propWidth)
				if !p.From.After(prices[len(prices)-1].From) {
					continue
				}
			}
			m.texts, m.froms, prices = append(m.texts, text), append(m.froms, p.From), append(prices, p)
		}
		s, err := price.NewSchedule(prices...)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		m.schedule = s
		w.meters = append(w.meters, m)
	}
	for range r.IntN(400) {
		rec := propRecord{meter: r.IntN(len(w.meters)), units: propUnits(r)}
		m := w.meters[rec.meter]
		if r.IntN(8) == 0 { // exactly on a price change
			rec.at = m.froms[r.IntN(len(m.froms))]
			if rec.at.IsZero() {
				rec.at = w.start
			}
		} else {
			rec.at = w.start.Add(time.Duration(r.Int64N(int64(end.Sub(w.start)))))
		}
		w.records = append(w.records, rec)
	}
	return w
}

// propPriceText is a price with at most scale decimals, written as a
// configuration might: "2.5", "2.50", "25e-1", "0.000004", "3".
func propPriceText(r *rand.Rand, scale int) string {
	dec := r.IntN(scale + 1)
	coef := r.Int64N(pow10(dec + []int{0, 0, 1, 1, 3, 6}[r.IntN(6)])) // a price below 1, 10, 1000 or 10^6
	switch r.IntN(4) {
	case 0:
		return fmt.Sprintf("%de-%d", coef, dec)
	case 1:
		return new(big.Rat).SetFrac64(coef, pow10(dec)).FloatString(dec) + "0"
	}
	return new(big.Rat).SetFrac64(coef, pow10(dec)).FloatString(dec)
}

// propUnits is a record's units: mostly small, some zero, and one in 500
// large enough that a dear price at a fine scale takes its period past
// int64 (about 5% of periods saturate).
func propUnits(r *rand.Rand) int64 {
	switch n := r.IntN(500); {
	case n < 20:
		return 0
	case n == 20:
		return r.Int64N(1 << 40)
	}
	return 1 + r.Int64N(5000)
}

func pow10(n int) int64 {
	v := int64(1)
	for range n {
		v *= 10
	}
	return v
}

// ratPriceAt is the price of m at t as an exact fraction, read from its
// configured text by math/big alone: the last price whose From is at or
// before t. ok is false before the first.
func (m propMeter) ratPriceAt(t time.Time) (*big.Rat, bool) {
	var out *big.Rat
	for i, from := range m.froms {
		if !from.After(t) {
			out, _ = new(big.Rat).SetString(m.texts[i])
		}
	}
	return out, out != nil
}

// period is the index of the period holding t, or -1.
func (w propWorld) period(t time.Time) int {
	for i := range len(w.periods) - 1 {
		if !t.Before(w.periods[i]) && t.Before(w.periods[i+1]) {
			return i
		}
	}
	return -1
}

// exact is each period's exact spend, computed with math/big.Rat from the
// prices' texts, and whether each record had a price.
func (w propWorld) exact() []*big.Rat {
	out := make([]*big.Rat, len(w.periods)-1)
	for i := range out {
		out[i] = new(big.Rat)
	}
	for _, rec := range w.records {
		p, ok := w.meters[rec.meter].ratPriceAt(rec.at)
		if !ok {
			continue
		}
		out[w.period(rec.at)].Add(out[w.period(rec.at)], new(big.Rat).Mul(p, new(big.Rat).SetInt64(rec.units)))
	}
	return out
}

// overflows reports whether x, in the scale's units, is at or beyond
// [price.MaxNano].
func (w propWorld) overflows(x *big.Rat) bool {
	n := new(big.Rat).Mul(x, new(big.Rat).SetInt64(pow10(int(w.scale))))
	return n.Cmp(new(big.Rat).SetInt64(price.MaxNano)) >= 0
}

// ceil is the least integer at or above x.
func ceil(x *big.Rat) *big.Int {
	q, m := new(big.Int).DivMod(x.Num(), x.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

// byRecord adds each record's exact spend to its period's [price.Spend]
// in the order given, and rounds each period once.
func (w propWorld) byRecord(order []int) ([]int64, []string, error) {
	totals := make([]price.Spend, len(w.periods)-1)
	for i := range totals {
		totals[i] = price.Zero(w.scale)
	}
	for _, i := range order {
		rec := w.records[i]
		p, err := w.meters[rec.meter].schedule.PriceAt(rec.at)
		if errors.Is(err, price.ErrNoPrice) {
			continue
		}
		if err := totals[w.period(rec.at)].Add(rec.units, p); err != nil && !errors.Is(err, price.ErrOverflow) {
			return nil, nil, err
		}
	}
	return rounded(totals)
}

// byBucket sums each record into its meter's hour bucket first, then adds
// the buckets to their periods in the order given: the sums path.
func (w propWorld) byBucket(r *rand.Rand) ([]int64, []string, error) {
	type key struct {
		meter int
		start time.Time
	}
	units := map[key]int64{}
	for _, rec := range w.records {
		units[key{rec.meter, rec.at.Truncate(propWidth)}] += rec.units
	}
	keys := make([]key, 0, len(units))
	for k := range units {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int { return a.start.Compare(b.start)*4 + a.meter - b.meter })
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	totals := make([]price.Spend, len(w.periods)-1)
	for i := range totals {
		totals[i] = price.Zero(w.scale)
	}
	for _, k := range keys {
		p, err := w.meters[k.meter].schedule.PriceAt(k.start)
		if errors.Is(err, price.ErrNoPrice) {
			continue
		}
		b, err := price.Of(units[k], p, w.scale)
		if err != nil && !errors.Is(err, price.ErrOverflow) {
			return nil, nil, err
		}
		if err := totals[w.period(k.start)].Plus(b); err != nil && !errors.Is(err, price.ErrOverflow) {
			return nil, nil, err
		}
	}
	return rounded(totals)
}

func rounded(totals []price.Spend) ([]int64, []string, error) {
	out, exact := make([]int64, len(totals)), make([]string, len(totals))
	for i, s := range totals {
		out[i], exact[i] = s.Rounded(), s.String()
	}
	return out, exact, nil
}

// checkProperty compares each period's rounded spend with the exact sum
// rounded once, up; it returns the first difference. A period whose exact
// spend is beyond the int64 of the scale's units must be saturated.
func (w propWorld) checkProperty(got []int64, gotExact []string) error {
	for i, x := range w.exact() {
		if w.overflows(x) {
			if gotExact != nil && gotExact[i] != "overflow" {
				return fmt.Errorf("period %d: exact spend %s is beyond int64 at scale %d, but the total reads %s", i, x.FloatString(int(w.scale)), w.scale, gotExact[i])
			}
			continue
		}
		want := ceil(x)
		if !want.IsInt64() || got[i] != want.Int64() {
			return fmt.Errorf("period %d: rounded spend %d, want the exact %s rounded up once, %s", i, got[i], x.FloatString(int(w.scale)), want)
		}
		if gotExact != nil && gotExact[i] != x.FloatString(int(w.scale)) {
			return fmt.Errorf("period %d: exact spend %s, want %s", i, gotExact[i], x.FloatString(int(w.scale)))
		}
	}
	return nil
}

// TestPricedTotalIsTheExactSumRoundedOnceUp draws, per seed, a scale,
// meters whose prices change at random instants, and records at random
// instants (some exactly on a change), and checks that each period's
// priced total, whatever the order the records are added in and whether
// they pass through sums buckets first, is the exact sum (math/big.Rat,
// from the prices' texts) rounded once, up; and that the exact spend
// itself matches to the last decimal.
func TestPricedTotalIsTheExactSumRoundedOnceUp(t *testing.T) {
	periods, saturated := 0, 0
	for seed := range uint64(300) {
		w := newPropWorld(t, seed)
		for _, x := range w.exact() {
			periods++
			if w.overflows(x) {
				saturated++
			}
		}
		r := rand.New(rand.NewPCG(seed, 1))
		order := r.Perm(len(w.records))
		inOrder := make([]int, len(w.records))
		for i := range inOrder {
			inOrder[i] = i
		}
		for name, run := range map[string]func() ([]int64, []string, error){
			"in order":  func() ([]int64, []string, error) { return w.byRecord(inOrder) },
			"shuffled":  func() ([]int64, []string, error) { return w.byRecord(order) },
			"reversed":  func() ([]int64, []string, error) { return w.byRecord(reversed(inOrder)) },
			"by bucket": func() ([]int64, []string, error) { return w.byBucket(r) },
		} {
			got, exact, err := run()
			if err != nil {
				t.Fatalf("seed %d, %s: %v", seed, name, err)
			}
			if err := w.checkProperty(got, exact); err != nil {
				t.Fatalf("seed %d (scale %d, %d meters, %d records), %s: %v", seed, w.scale, len(w.meters), len(w.records), name, err)
			}
		}
	}
	t.Logf("%d of %d periods saturated", saturated, periods)
}

func reversed(s []int) []int {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// TestRoundingPerRecordWouldDrift shows the property can fail: a ledger
// that rounds each record's spend up before adding it drifts above the
// exact sum, and the check above catches it on some seed.
func TestRoundingPerRecordWouldDrift(t *testing.T) {
	caught := 0
	for seed := range uint64(300) {
		w := newPropWorld(t, seed)
		got := make([]int64, len(w.periods)-1)
		for _, rec := range w.records {
			p, err := w.meters[rec.meter].schedule.PriceAt(rec.at)
			if err != nil {
				continue
			}
			s, err := price.Of(rec.units, p, w.scale)
			if err != nil {
				continue // an overflow: the property test covers it
			}
			got[w.period(rec.at)] += s.Rounded() // rounded per record: the drift
		}
		if w.checkProperty(got, nil) != nil {
			caught++
		}
	}
	if caught == 0 {
		t.Fatal("no seed caught a ledger that rounds per record: the property cannot fail")
	}
	t.Logf("%d of 300 seeds caught rounding per record", caught)
}

// TestAPriceChangeNeverRepricesEarlierUsage adds, per seed, a price
// change at a random instant to every meter and checks that the records
// before it keep their exact spend, and those at or after it take the
// new price.
func TestAPriceChangeNeverRepricesEarlierUsage(t *testing.T) {
	for seed := range uint64(200) {
		w := newPropWorld(t, seed)
		r := rand.New(rand.NewPCG(seed, 2))
		change := w.start.Add(time.Duration(r.Int64N(int64(w.periods[len(w.periods)-1].Sub(w.start)))))
		newPrice := price.MustParse(propPriceText(r, int(w.scale)))
		newPrice.From = change
		for _, rec := range w.records {
			m := w.meters[rec.meter]
			last := m.schedule.Prices()[len(m.schedule.Prices())-1]
			if !change.After(last.From) {
				continue // the change would not be the meter's latest
			}
			later, err := price.NewSchedule(append(m.schedule.Prices(), newPrice)...)
			if err != nil {
				t.Fatal(err)
			}
			before, errBefore := m.schedule.PriceAt(rec.at)
			after, errAfter := later.PriceAt(rec.at)
			switch {
			case rec.at.Before(change) && (!before.Equal(after) || (errBefore == nil) != (errAfter == nil)):
				t.Fatalf("seed %d: a record at %s, before the change at %s, was repriced from %s to %s", seed, rec.at, change, before, after)
			case !rec.at.Before(change) && !after.Equal(newPrice):
				t.Fatalf("seed %d: a record at %s, at or after the change at %s, costs %s, want %s", seed, rec.at, change, after, newPrice)
			}
		}
	}
}
