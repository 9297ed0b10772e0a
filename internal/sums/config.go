package sums

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults applied by [ParseSources] to zero fields.
const (
	DefaultWidth    = time.Hour
	DefaultSettle   = 35 * 24 * time.Hour
	DefaultLag      = 2 * time.Minute
	DefaultInterval = 5 * time.Minute
	DefaultRecent   = 48 * time.Hour
	// MinBudget is the least default [Source.Budget], whatever the
	// interval.
	MinBudget = time.Minute
	// DefaultQuietEvery is the default [Source.QuietEvery]: at the
	// default interval, a quiet workload is read at least once an hour.
	DefaultQuietEvery = 12
)

// Duration is a time.Duration written as Go's duration text ("1h",
// "840h") in JSON.
type Duration time.Duration

// D is d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalJSON reads "1h30m".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration such as \"1h\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes d as duration text.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.D().String()) }

// Sources are the configured sums sources by name.
type Sources map[string]Source

// ParseSources reads SUM_SOURCES: an object from sums source name to
// [Source]. It refuses, naming the source and field, every problem at
// once: an unknown provider or field, a meter that does not add up across
// buckets (Stripe "last", a pre-aggregated meter), a width that does not
// divide a day or that the provider does not serve, and two sources
// claiming one usage source's meter. A meter of a provider with
// endpoints (OpenAI) must name a known endpoint and the fields that
// count, with positive integer weights, and a money meter its currency.
// Empty text is no sources.
func ParseSources(text string) (Sources, error) {
	if strings.TrimSpace(text) == "" {
		return Sources{}, nil
	}
	var raw map[string]Source
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSource, err)
	}
	out := Sources{}
	var errs []error
	claimed := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		s, serrs := raw[name].normalise(name)
		errs = append(errs, serrs...)
		for _, mname := range slices.Sorted(maps.Keys(s.Meters)) {
			for _, meter := range s.Meters[mname].Names() {
				k := s.UsageSource + "\x00" + meter
				if other, ok := claimed[k]; ok {
					errs = append(errs, fmt.Errorf("%w: %s: meter %q of usage source %q is already reconciled by %s",
						ErrBadSource, name, meter, s.UsageSource, other))
				}
				claimed[k] = name + " (meter " + mname + ")"
			}
		}
		out[name] = s
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func (s Source) normalise(name string) (Source, []error) {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrBadSource, name, fmt.Sprintf(format, a...)))
	}
	s.Name = name
	if name == "" || strings.ContainsAny(name, "#/ ") {
		bad("name must be non-empty, without '#', '/' or spaces")
	}
	p, known := Providers[s.Provider]
	if !known {
		bad("provider %q is not one of %v", s.Provider, slices.Sorted(maps.Keys(Providers)))
	}
	if s.UsageSource == "" {
		bad("usage_source is required: the door's source whose records the sums cover")
	}
	if s.Account == "" || strings.Contains(s.Account, "#") {
		bad("account is required (and has no '#'): it scopes every key")
	}
	if s.Start.IsZero() {
		bad("start is required: nothing before it is counted")
	}
	errs = append(errs, s.normaliseWidths(name, p, known)...)
	s.Settle = Duration(orDefault(s.Settle.D(), DefaultSettle))
	s.Lag = Duration(orDefault(s.Lag.D(), DefaultLag))
	s.Interval = Duration(orDefault(s.Interval.D(), DefaultInterval))
	s.Recent = Duration(orDefault(s.Recent.D(), DefaultRecent))
	s.Budget = Duration(orDefault(s.Budget.D(), max(s.Interval.D()/2, MinBudget)))
	if s.QuietEvery == 0 {
		s.QuietEvery = DefaultQuietEvery
	}
	if s.Settle.D() < 0 || s.Lag.D() < 0 || s.Interval.D() < 0 || s.Recent.D() < 0 || s.Budget.D() < 0 {
		bad("settle, lag, interval, recent and budget must not be negative")
	}
	if s.QuietEvery < 1 {
		bad("quiet_every %d must be at least 1", s.QuietEvery)
	}
	if w := s.Widths[0].Width.D(); w > 0 && !s.Start.Equal(s.Start.Truncate(w)) {
		bad("start %s is not aligned to the width %s", s.Start.Format(time.RFC3339), w)
	}
	if s.Webhooks == nil {
		s.Webhooks = &[]bool{!p.PollOnly}[0]
	}
	if s.AliasPrefix == "" {
		s.AliasPrefix = p.AliasPrefix
	}
	if len(s.Meters) == 0 {
		bad("meters: at least one meter is required")
	}
	meters := map[string]Meter{}
	for mname, m := range s.Meters {
		m.Name = mname
		if p.Endpoints != nil && m.Aggregation == "" {
			m.Aggregation = AggregationSum
		}
		errs = append(errs, m.check(name, p, s.widthsOnly())...)
		if m.Scale == 0 {
			m.Scale = 1
		}
		meters[mname] = m
	}
	s.Meters = meters
	for id, a := range s.Alerts {
		if _, ok := meters[a.Meter]; !ok {
			bad("alert %s: meter %q is not one of the source's meters", id, a.Meter)
		}
		if a.Created.IsZero() {
			bad("alert %s: created is required", id)
		}
	}
	return s, errs
}

// normaliseWidths fills the source's [Source.Widths] from its Width (or
// the default), or checks the history it states, and sets Width to the
// width now. Every width must be at least a minute, divide a day and be
// one the provider serves; a later width must differ from the one before
// it and hold from a stated From after the previous one and after start,
// aligned to both widths, so that no bucket straddles it.
func (s *Source) normaliseWidths(name string, p Provider, known bool) []error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s %s", ErrBadSource, name, field, fmt.Sprintf(format, a...)))
	}
	s.Start = s.Start.UTC()
	switch {
	case len(s.Widths) == 0:
		s.Widths = []WidthFrom{{Width: Duration(orDefault(s.Width.D(), DefaultWidth))}}
	case s.Width != 0:
		bad("width", "and widths are both set: set one: widths states the width's history, its last entry the width now")
	}
	for i := range s.Widths {
		e := &s.Widths[i]
		field := "width"
		if len(s.Widths) > 1 || s.Width == 0 {
			field = fmt.Sprintf("widths[%d].width", i)
		}
		at := strings.TrimSuffix(field, ".width")
		if w := e.Width.D(); w < time.Minute || (24*time.Hour)%w != 0 {
			bad(field, "%s must be at least a minute and divide a day", w)
		} else if known && !widthAllowed(p.Widths, w) {
			bad(field, "%s is not one %s serves: %v", w, s.Provider, p.Widths)
		}
		e.From = e.From.UTC()
		if i == 0 {
			if !e.From.IsZero() && !e.From.Equal(s.Start) {
				bad(at+".from", "must be left out: the first width holds from start")
			}
			e.From = time.Time{}
			continue
		}
		prev := s.Widths[i-1]
		switch {
		case e.From.IsZero():
			bad(at+".from", "is required: the instant the width %s takes over from %s", e.Width.D(), prev.Width.D())
		case !e.From.After(maxTime(prev.From, s.Start)):
			bad(at+".from", "%s must be after start and after the previous width's from", e.From.Format(time.RFC3339))
		case e.Width == prev.Width:
			bad(field, "%s is the width before it: state only changes", e.Width.D())
		case !aligned(e.From, e.Width.D()) || !aligned(e.From, prev.Width.D()):
			bad(at+".from", "%s is not aligned to both %s and %s (in UTC): a bucket would straddle it",
				e.From.Format(time.RFC3339), prev.Width.D(), e.Width.D())
		}
	}
	s.Width = s.Widths[len(s.Widths)-1].Width
	return errs
}

// widthsOnly are the source's widths, each once, in order.
func (s Source) widthsOnly() []time.Duration {
	var out []time.Duration
	for _, e := range s.Widths {
		if !slices.Contains(out, e.Width.D()) {
			out = append(out, e.Width.D())
		}
	}
	return out
}

func aligned(t time.Time, w time.Duration) bool { return w <= 0 || t.Equal(t.Truncate(w)) }

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// check reports every problem of the meter of source, whose provider is
// p and widths, in order, widths.
func (m Meter) check(source string, p Provider, widths []time.Duration) []error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: meter %q: %s", ErrBadSource, source, m.Name, fmt.Sprintf(format, a...)))
	}
	if m.Name == "" || strings.Contains(m.Name, "#") {
		bad("name must be non-empty, without '#'")
	}
	for _, n := range m.DoorNames {
		if n == "" || n == m.Name {
			bad("door_names: %q must be non-empty and differ from the meter's name", n)
		}
	}
	if p.Endpoints != nil {
		m.checkEndpoint(p, widths, bad)
	} else {
		m.checkProviderMeter(bad)
	}
	switch m.Aggregation {
	case AggregationSum, AggregationCount:
	case AggregationLast:
		bad("aggregation %q does not add up across buckets: refused", m.Aggregation)
	default:
		bad("aggregation %q is not sum or count", m.Aggregation)
	}
	if m.PreAggregated {
		bad("a pre-aggregated meter (event_time_window) counts only a window's last event: it does not add up across buckets")
	}
	if m.Scale < 0 || m.Scale > 1_000_000_000_000 {
		bad("scale %d outside 1..10^12", m.Scale)
	}
	if m.Tolerance < 0 {
		bad("tolerance must not be negative")
	}
	return errs
}

// checkProviderMeter checks a meter of a provider that names its meters
// (Stripe): a provider meter, and nothing of an endpoint's.
func (m Meter) checkProviderMeter(bad func(string, ...any)) {
	if m.ProviderMeter == "" {
		bad("provider_meter is required")
	}
	if m.Endpoint != "" || m.Field != "" || len(m.Fields) > 0 || m.Currency != "" {
		bad("endpoint, field, fields and currency are for a provider whose meters name an endpoint")
	}
}

// checkEndpoint checks a meter of a provider whose meters name an
// endpoint and its fields (OpenAI): a known endpoint served at each of
// widths, one field or integer weights of known fields, and a currency
// for money.
func (m Meter) checkEndpoint(p Provider, widths []time.Duration, bad func(string, ...any)) {
	if m.ProviderMeter != "" {
		bad("provider_meter is not used: the meter names its endpoint and fields")
	}
	if m.Aggregation == AggregationCount {
		bad("aggregation count is not used: the meter sums its fields")
	}
	ep, ok := p.Endpoints[m.Endpoint]
	if !ok {
		bad("endpoint %q is not one of %v", m.Endpoint, slices.Sorted(maps.Keys(p.Endpoints)))
		return
	}
	for _, width := range widths {
		if !widthAllowed(ep.Widths, width) {
			bad("endpoint %s serves buckets of %v only, not the source's width %s", m.Endpoint, ep.Widths, width)
		}
	}
	switch {
	case m.Field == "" && len(m.Fields) == 0:
		bad("names no field: set field (one of %v) or fields with integer weights", ep.Fields)
	case m.Field != "" && len(m.Fields) > 0:
		bad("sets both field and fields: set one")
	case ep.Money && len(m.Fields) > 0:
		bad("endpoint %s is money: set field %q, without weights", m.Endpoint, ep.Fields[0])
	}
	for _, f := range slices.Sorted(maps.Keys(m.Weights())) {
		if !slices.Contains(ep.Fields, f) {
			bad("field %q is not one of endpoint %s's: %v", f, m.Endpoint, ep.Fields)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(m.Fields)) {
		if n, err := strconv.ParseInt(m.Fields[f].String(), 10, 64); err != nil || n < 1 || n > MaxWeight {
			bad("weight %s of field %q is not an integer in 1..%d", m.Fields[f], f, MaxWeight)
		}
	}
	m.checkCurrency(ep, bad)
}

// MaxWeight bounds a field's weight ([Meter.Fields]).
const MaxWeight = 1_000_000

// checkCurrency requires a currency of a money meter, and refuses one
// elsewhere.
func (m Meter) checkCurrency(ep Endpoint, bad func(string, ...any)) {
	switch {
	case ep.Money && (len(m.Currency) != 3 || strings.ToLower(m.Currency) != m.Currency):
		bad("currency %q must be a lower-case ISO 4217 code such as \"usd\": a money meter counts one currency", m.Currency)
	case !ep.Money && m.Currency != "":
		bad("currency is for a money meter; endpoint %s counts no money", m.Endpoint)
	}
}

// Door is what the door counts of one usage source, as its usage mapping
// (USAGE_MAPPINGS) says: what [Sources.CheckDoor] checks a sums source
// against.
type Door struct {
	// Mapping says where the rest comes from, in errors: `meters "api"`.
	Mapping string
	// Alerts means the source reads a provider's alerts and counts no
	// records.
	Alerts bool
	// Meters are the meter names the source's records carry; AnyMeter
	// means each event's meter is read from the event and may be any.
	Meters   []string
	AnyMeter bool
	// Scale multiplies the source's values into ledger units.
	Scale int64
	// Export names the reconciler's export when it also reads the
	// source's records without their source and meter (hookline's own
	// GET /v1/usage); "" when none does. The ledger cannot put such a
	// record in its bucket: found before its webhook, it is counted
	// outside the bucket, and again in the provider's sum.
	Export string
}

// CheckDoor refuses, naming the source and the field, every sums source
// that cannot be reconciled with what the door counts, door(name) being
// the usage source name's [Door]: a usage_source that counts no records
// (an alerts source); a meter that webhooks feed ([Source.HasWebhooks])
// but that the usage source never counts; a meter counted at another
// scale than the door's, whose W and P would be of different units; and
// a meter of records that the export also reads without their meter,
// which would count them twice. Every problem is reported at once.
func (ss Sources) CheckDoor(door func(usageSource string) Door) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(ss)) {
		s := ss[name]
		d := door(s.UsageSource)
		if d.Alerts {
			errs = append(errs, fmt.Errorf("%w: %s: usage_source: %q reads a provider's alerts and counts no records", ErrBadSource, name, s.UsageSource))
			continue
		}
		for _, mname := range slices.Sorted(maps.Keys(s.Meters)) {
			m := s.Meters[mname]
			bad := func(format string, a ...any) {
				errs = append(errs, fmt.Errorf("%w: %s: meter %q: %s", ErrBadSource, name, mname, fmt.Sprintf(format, a...)))
			}
			counted := d.AnyMeter || slices.ContainsFunc(m.Names(), func(n string) bool { return slices.Contains(d.Meters, n) })
			switch {
			case !counted && s.HasWebhooks():
				bad("usage source %q counts no records of that meter (USAGE_MAPPINGS: %s)", s.UsageSource, d.Mapping)
			case !counted:
			case m.Scale != d.Scale:
				bad("scale %d differs from the scale %d of usage source %q (USAGE_MAPPINGS): webhook and provider would count in different units",
					m.Scale, d.Scale, s.UsageSource)
			case d.Export != "":
				bad("%s also reads usage source %q (USAGE_EXPORT_SOURCE), without meters: its records would be counted twice", d.Export, s.UsageSource)
			}
		}
	}
	return errors.Join(errs...)
}

// For finds the sums source and meter that cover a webhook record of
// usage source src and meter, if one does: meter is the meter's name or
// one of its [Meter.DoorNames].
func (ss Sources) For(src, meter string) (Source, Meter, bool) {
	for _, s := range ss {
		if s.UsageSource != src {
			continue
		}
		if m, ok := s.Meters[meter]; ok {
			return s, m, true
		}
		for _, m := range s.Meters {
			if slices.Contains(m.DoorNames, meter) {
				return s, m, true
			}
		}
	}
	return Source{}, Meter{}, false
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
