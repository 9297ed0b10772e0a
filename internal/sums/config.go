package sums

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Defaults applied by [ParseSources] to zero fields.
const (
	DefaultWidth    = time.Hour
	DefaultSettle   = 35 * 24 * time.Hour
	DefaultLag      = 2 * time.Minute
	DefaultInterval = 5 * time.Minute
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
// divide a day, and two sources claiming one usage source's meter. Empty
// text is no sources.
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
		for meter := range s.Meters {
			k := s.UsageSource + "\x00" + meter
			if other, ok := claimed[k]; ok {
				errs = append(errs, fmt.Errorf("%w: %s: meter %q of usage source %q is already reconciled by %s",
					ErrBadSource, name, meter, s.UsageSource, other))
			}
			claimed[k] = name
		}
		out[name] = s
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Providers known to [ParseSources].
var Providers = []string{"stripe"}

func (s Source) normalise(name string) (Source, []error) {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrBadSource, name, fmt.Sprintf(format, a...)))
	}
	s.Name = name
	if name == "" || strings.ContainsAny(name, "#/ ") {
		bad("name must be non-empty, without '#', '/' or spaces")
	}
	if !slices.Contains(Providers, s.Provider) {
		bad("provider %q is not one of %v", s.Provider, Providers)
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
	s.Width = Duration(orDefault(s.Width.D(), DefaultWidth))
	s.Settle = Duration(orDefault(s.Settle.D(), DefaultSettle))
	s.Lag = Duration(orDefault(s.Lag.D(), DefaultLag))
	s.Interval = Duration(orDefault(s.Interval.D(), DefaultInterval))
	if w := s.Width.D(); w < time.Minute || (24*time.Hour)%w != 0 {
		bad("width %s must be at least a minute and divide a day", w)
	}
	if s.Settle.D() < 0 || s.Lag.D() < 0 || s.Interval.D() < 0 {
		bad("settle, lag and interval must not be negative")
	}
	if s.Start = s.Start.UTC(); !s.Start.Equal(s.Start.Truncate(s.Width.D())) {
		bad("start %s is not aligned to the width %s", s.Start.Format(time.RFC3339), s.Width.D())
	}
	if s.Provider == "stripe" && s.AliasPrefix == "" {
		s.AliasPrefix = "cus_"
	}
	if len(s.Meters) == 0 {
		bad("meters: at least one meter is required")
	}
	meters := map[string]Meter{}
	for mname, m := range s.Meters {
		m.Name = mname
		errs = append(errs, m.check(name)...)
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

func (m Meter) check(source string) []error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: meter %q: %s", ErrBadSource, source, m.Name, fmt.Sprintf(format, a...)))
	}
	if m.Name == "" || strings.Contains(m.Name, "#") {
		bad("name must be non-empty, without '#'")
	}
	if m.ProviderMeter == "" {
		bad("provider_meter is required")
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

// For finds the sums source and meter that cover a webhook record of
// usage source src and meter, if one does.
func (ss Sources) For(src, meter string) (Source, Meter, bool) {
	for _, s := range ss {
		if s.UsageSource != src {
			continue
		}
		if m, ok := s.Meters[meter]; ok {
			return s, m, true
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
