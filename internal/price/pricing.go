package price

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/sums"
	"github.com/hookline/hookline/pkg/provider"
)

// AnyMeter is the meter name of a usage source's price for every meter it
// counts that has no price of its own: a source whose events name their
// meter by pointer, so that its meters are not known at start.
const AnyMeter = "*"

// Pricing is a deployment's prices: the scale its spend is kept at, and
// each meter's unit and prices, by usage source and meter name, as the
// usage mappings and sums meters name them:
//
//	{"scale": 6, "meters": {
//	  "llm":   {"tokens": {"unit": "tokens", "price": [{"price": "2.5"}, {"price": "2", "from": "2026-04-01T00:00:00Z"}]}},
//	  "calls": {"api":    {"unit": "calls",  "price": "0.000004"}}}}
//
// A nil *Pricing is a deployment without prices: every meter costs
// [One] at scale 0, exactly as before prices existed.
type Pricing struct {
	// Scale is the number of decimals spend is kept to ([Scale]). It
	// must be at least every price's decimals, and is part of every
	// stored spend: changing it changes what stored totals mean.
	Scale Scale `json:"scale"`
	// Meters are the prices by usage source, then meter name (or
	// [AnyMeter]).
	Meters map[string]map[string]MeterPrice `json:"meters"`
}

// MeterPrice is one meter's unit and prices.
type MeterPrice struct {
	// Unit is what the meter counts ("tokens", "calls", "gpu_hours"):
	// the unit of its usage mapping. Its prices are spend units
	// (SPEND_UNIT) per one of it.
	Unit string `json:"unit"`
	// Price is the meter's [Schedule].
	Price Schedule `json:"price"`
}

// pricingJSON is Pricing as written, with each schedule left raw so that
// its errors name their meter.
type pricingJSON struct {
	Scale  *Scale                               `json:"scale"`
	Meters map[string]map[string]meterPriceJSON `json:"meters"`
}

type meterPriceJSON struct {
	Unit  string          `json:"unit"`
	Price json.RawMessage `json:"price"`
}

// ParsePricing reads a deployment's prices ([Pricing]) and validates them
// ([Pricing.Validate]). Empty text is no prices: nil, nil. Unknown
// members are refused, and every problem is reported at once, each a
// [*FieldError] naming the field ("meters.llm.tokens.price[1].from").
func ParsePricing(text string) (*Pricing, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	var raw pricingJSON
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, &FieldError{Field: "prices", Reason: "want {\"scale\": k, \"meters\": {source: {meter: {\"unit\", \"price\"}}}}: " + err.Error()}
	}
	var errs []error
	if raw.Scale == nil {
		errs = append(errs, &FieldError{Field: "scale", Reason: "required: the decimals spend is kept to, at least every price's; it is part of every stored spend"})
	}
	p := &Pricing{Meters: map[string]map[string]MeterPrice{}}
	failed := map[[2]string]bool{} // meters whose prices did not parse
	if raw.Scale != nil {
		p.Scale = *raw.Scale
	}
	for _, src := range slices.Sorted(maps.Keys(raw.Meters)) {
		p.Meters[src] = map[string]MeterPrice{}
		for _, name := range slices.Sorted(maps.Keys(raw.Meters[src])) {
			m := raw.Meters[src][name]
			path := "meters." + src + "." + name
			var s Schedule
			err := error(&FieldError{Field: path + ".price", Reason: "required"})
			if len(m.Price) > 0 {
				s, err = parseSchedule(m.Price, path+".price")
			}
			if err != nil {
				errs = append(errs, err)
				failed[[2]string{src, name}] = true
			}
			p.Meters[src][name] = MeterPrice{Unit: m.Unit, Price: s}
		}
	}
	if err := p.validate(raw.Scale != nil, failed); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// Priced reports whether the deployment has prices.
func (p *Pricing) Priced() bool { return p != nil }

// SpendScale is the scale spend is kept at: 0 without prices.
func (p *Pricing) SpendScale() Scale {
	if p == nil {
		return 0
	}
	return p.Scale
}

// Validate refuses, naming each field, a scale outside 0..[MaxScale], a
// meter without a unit or a price, and a price the scale cannot count
// exactly (more decimals than the scale, or beyond int64 at it). A nil
// Pricing is valid: no prices.
func (p *Pricing) Validate() error { return p.validate(true, nil) }

// validate is Validate, where the scale may not have been given, and the
// meters of failed have already been refused for prices that did not
// parse.
func (p *Pricing) validate(scaleGiven bool, failed map[[2]string]bool) error {
	if p == nil {
		return nil
	}
	var errs []error
	scaleOK := scaleGiven && p.Scale.Check() == nil
	if err := p.Scale.Check(); scaleGiven && err != nil {
		errs = append(errs, err)
	}
	if len(p.Meters) == 0 {
		errs = append(errs, &FieldError{Field: "meters", Reason: "name at least one meter's price, or set no prices at all"})
	}
	for _, src := range slices.Sorted(maps.Keys(p.Meters)) {
		if err := provider.CheckUsageID("source", src); err != nil {
			errs = append(errs, &FieldError{Field: "meters", Value: src, Reason: "a usage source's name: printable ASCII without spaces"})
		}
		for _, name := range slices.Sorted(maps.Keys(p.Meters[src])) {
			m, path := p.Meters[src][name], "meters."+src+"."+name
			if err := provider.CheckUsageID("meter", name); err != nil {
				errs = append(errs, &FieldError{Field: "meters." + src, Value: name, Reason: "a meter's name: printable ASCII without spaces"})
			}
			if err := provider.CheckUsageID("unit", m.Unit); err != nil {
				errs = append(errs, &FieldError{Field: path + ".unit", Value: m.Unit, Reason: "required: what the meter counts, as its usage mapping's unit (printable ASCII without spaces)"})
			}
			switch {
			case failed[[2]string{src, name}]:
			case len(m.Price.prices) == 0:
				errs = append(errs, &FieldError{Field: path + ".price", Reason: "required"})
			case scaleOK:
				if err := m.Price.Check(p.Scale); err != nil {
					errs = append(errs, prefixed(err, path+".price"))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// Meter is one meter spend counts, as the start-up checks see it: a
// usage mapping's meter, or a sums meter.
type Meter struct {
	// Source is the usage source (USAGE_MAPPINGS' key, a sums source's
	// usage_source).
	Source string
	// Name is the meter's name; with Any, the source's events name their
	// meter by pointer, and Name is empty.
	Name string
	Any  bool
	// Unit is what the meter counts as its usage mapping says; empty when
	// nothing does (a sums meter of a provider that sends no records).
	Unit string
	// Money marks a meter already in money (OpenAI's costs): without a
	// price of its own it costs [One].
	Money bool
}

func (m Meter) String() string {
	if m.Any {
		return fmt.Sprintf("every meter of usage source %q", m.Source)
	}
	return fmt.Sprintf("meter %q of usage source %q", m.Name, m.Source)
}

// For is the schedule of m's prices: [One] without prices; else m's own,
// the source's [AnyMeter] price, or [One] for a money meter. A meter
// with none of them is [ErrNoPrice], which [Pricing.CheckMeters] refuses
// at start.
func (p *Pricing) For(m Meter) (Schedule, error) {
	if p == nil {
		return Fixed(One), nil
	}
	if mp, ok := p.Meters[m.Source][m.Name]; ok && !m.Any {
		return mp.Price, nil
	}
	if mp, ok := p.Meters[m.Source][AnyMeter]; ok {
		return mp.Price, nil
	}
	if m.Money {
		return Fixed(One), nil
	}
	return Schedule{}, fmt.Errorf("%w: %s has no price (prices: meters.%s.%s)", ErrNoPrice, m, m.Source, m.Name)
}

// CheckMeters refuses, at start, every meter of meters that a priced
// deployment cannot price, naming it: a meter with no price (only a money
// meter may go without: it costs [One]); a meter whose usage mapping
// counts another unit than its price is per; and a price for a meter that
// no usage mapping or sums meter counts, which is a misspelt or retired
// one. Without prices it checks nothing: each meter's unit is then the
// workloads' own (SPEND_UNIT), as before prices existed.
func (p *Pricing) CheckMeters(meters []Meter) error {
	if p == nil {
		return nil
	}
	var errs []error
	used := map[[2]string]bool{}
	for _, m := range meters {
		name := m.Name
		if _, ok := p.Meters[m.Source][name]; !ok || m.Any {
			name = AnyMeter
		}
		mp, ok := p.Meters[m.Source][name]
		used[[2]string{m.Source, name}] = used[[2]string{m.Source, name}] || ok
		if m.Any { // any of the source's prices may be the one an event's meter names
			for n := range p.Meters[m.Source] {
				used[[2]string{m.Source, n}] = true
			}
		}
		switch {
		case !ok && m.Money:
		case !ok && m.Any:
			errs = append(errs, fmt.Errorf("%w: %s: its events name their meter, so a priced deployment needs meters.%s.%q, the price of any meter it counts",
				ErrNoPrice, m, m.Source, AnyMeter))
		case !ok:
			errs = append(errs, fmt.Errorf("%w: %s: a priced deployment needs meters.%s.%s", ErrNoPrice, m, m.Source, m.Name))
		case m.Unit != "" && mp.Unit != m.Unit:
			errs = append(errs, &FieldError{Field: "meters." + m.Source + "." + name + ".unit", Value: mp.Unit,
				Reason: fmt.Sprintf("the usage mapping counts %s in %q: a price is per unit the meter counts", m, m.Unit)})
		}
	}
	for _, src := range slices.Sorted(maps.Keys(p.Meters)) {
		for _, name := range slices.Sorted(maps.Keys(p.Meters[src])) {
			if !used[[2]string{src, name}] {
				errs = append(errs, &FieldError{Field: "meters." + src, Value: name,
					Reason: "no usage mapping or sums meter counts it: a misspelt or retired meter"})
			}
		}
	}
	return errors.Join(errs...)
}

// CheckBuckets refuses, at start, a price a sums bucket cannot take. A
// bucket counts max(W, P*) units of its meter, one number for its whole
// width, so one price must hold over it: every price change of a meter a
// sums source reconciles must be a bucket start (a multiple of the
// source's width from midnight UTC). And a meter's door names count in
// its buckets, so each priced one must have the meter's own prices.
// Without prices it checks nothing.
func (p *Pricing) CheckBuckets(ss sums.Sources) error {
	if p == nil {
		return nil
	}
	var errs []error
	for _, sname := range slices.Sorted(maps.Keys(ss)) {
		s := ss[sname]
		width := s.Width.D()
		for _, mname := range slices.Sorted(maps.Keys(s.Meters)) {
			names := s.Meters[mname].Names()
			own, err := p.For(Meter{Source: s.UsageSource, Name: names[0]})
			if err != nil {
				continue // CheckMeters names it
			}
			for i, pr := range own.prices {
				if !pr.From.IsZero() && !pr.From.Equal(pr.From.Truncate(width)) {
					errs = append(errs, &FieldError{Field: fmt.Sprintf("meters.%s.%s.price[%d].from", s.UsageSource, names[0], i),
						Value:  pr.From.UTC().Format(time.RFC3339Nano),
						Reason: fmt.Sprintf("sums source %s counts meter %q in buckets of %s: a price must change at a bucket's start", sname, mname, width)})
				}
			}
			for _, door := range names[1:] {
				if other, err := p.For(Meter{Source: s.UsageSource, Name: door}); err == nil && !other.Equal(own) {
					errs = append(errs, &FieldError{Field: "meters." + s.UsageSource + "." + door + ".price", Value: door,
						Reason: fmt.Sprintf("counts in the buckets of meter %q (sums source %s), so it needs that meter's prices", names[0], sname)})
				}
			}
		}
	}
	return errors.Join(errs...)
}
