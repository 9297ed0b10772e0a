package usagein

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/webhook"
)

// ErrBadMapping means a usage mapping is invalid.
var ErrBadMapping = errors.New("usagein: bad usage mapping")

// Formats a usage source may speak.
const (
	// FormatHookline is hookline's own usage.recorded body:
	// {"id":..., "type":"usage.recorded", "data":{"record_id", "workload_ref",
	// "units", "occurred_at"}}, keyed by its record_id.
	FormatHookline = "hookline"
	// FormatCloudEvents is CloudEvents 1.0 in JSON, structured or batch.
	FormatCloudEvents = "cloudevents"
	// FormatStripeAlerts is one Stripe event per request, signed with
	// Stripe-Signature: billing.alert.triggered is an alert
	// ([OutcomeAlert]), keyed by its event ID, which the spend worker
	// compares with the ledger's sums; every other type is not usage.
	FormatStripeAlerts = "stripe-alerts"
)

// Value formats: how a mapping's value is written.
const (
	// ValueDecimal is a JSON number or a decimal string ("12.5"), read
	// exactly and scaled ([ScaleDecimal]).
	ValueDecimal = "decimal"
	// ValueInteger is a JSON integer literal only: no fraction, no
	// exponent, no string (usage.recorded's units).
	ValueInteger = "integer"
	// ValueCount counts each event as one unit, with no value member: a
	// count meter.
	ValueCount = "count"
)

// DefaultUnit is the unit of a mapping that names none, and of the
// workloads' caps unless SPEND_UNIT says otherwise.
const DefaultUnit = "units"

// Mapping is a usage source's rule: which of its events are usage, where
// an event keeps its workload reference, meter, value and time (JSON
// pointers, RFC 6901, into the event), the unit the value is counted in
// and at which integer scale, and the source's time rule. A CloudEvents
// mapping takes the format's defaults for the pointers it leaves out
// ([CloudEventsDefaults]); usage.recorded's members are fixed.
type Mapping struct {
	// Format is [FormatHookline] (the default), [FormatCloudEvents] or
	// [FormatStripeAlerts] or [FormatOpenMeterAlerts], which take no other
	// member.
	Format string `json:"format,omitempty"`
	// Mode is which CloudEvents bodies the source takes: [ModeAny] (the
	// default), [ModeStructured] or [ModeBatch].
	Mode string `json:"mode,omitempty"`
	// UsageTypes are the event types that are usage; every other type is
	// acknowledged and recorded as not usage. Required for CloudEvents.
	UsageTypes []string `json:"usage_types,omitempty"`
	// Workload points at the workload reference (CloudEvents: /subject).
	Workload string `json:"workload,omitempty"`
	// Meter points at the meter's name (CloudEvents: /type); MeterName
	// names one meter for every event instead.
	Meter     string `json:"meter,omitempty"`
	MeterName string `json:"meter_name,omitempty"`
	// Value points at the value (CloudEvents: /data/value), written as
	// ValueFormat says ([ValueDecimal] by default for CloudEvents). A
	// [ValueCount] mapping has no value pointer.
	Value       string `json:"value,omitempty"`
	ValueFormat string `json:"value_format,omitempty"`
	// Scale is the integer the value is multiplied by to count it in
	// Unit: 1000 counts 12.5 as 12500. Default 1.
	Scale int64 `json:"scale,omitempty"`
	// Unit is what the scaled value counts; it must be the unit of the
	// workloads' caps. Required for CloudEvents; usage.recorded counts
	// [DefaultUnit].
	Unit string `json:"unit,omitempty"`
	// Time points at when the usage happened (CloudEvents: /time,
	// optional: a record without it happened when hookline first saw it).
	Time string `json:"time,omitempty"`
	// MaxAge and MaxSkew are the source's [TimeRule], as durations
	// ("840h", "5m"); default [DefaultTimeRule].
	MaxAge  string `json:"max_age,omitempty"`
	MaxSkew string `json:"max_skew,omitempty"`
	// Reconciled says the reconciler's usage export holds this source's
	// records: each webhook record then waits to be confirmed by it, and is
	// paged as unseen when the export lacks it past the horizon. Default
	// true for usage.recorded, false for CloudEvents (no export adapter
	// reads them yet).
	Reconciled *bool `json:"reconciled,omitempty"`

	rule TimeRule
}

// HooklineMapping reads usage.recorded, as every usage source did before
// mappings: units are spend units, counted as written.
var HooklineMapping = mustMapping(Mapping{Format: FormatHookline})

// hooklinePointers are usage.recorded's members, which a hookline mapping
// cannot move.
var hooklinePointers = struct{ id, recordID, workload, value, time string }{
	"/id", "/data/record_id", "/data/workload_ref", "/data/units", "/data/occurred_at"}

// hooklineType is usage.recorded's one usage type.
const hooklineType = provider.UsageEventType

// CloudEventsDefaults are the pointers of a CloudEvents mapping that names
// none: the workload is the event's subject, the meter its type, the
// value a "value" member of its data, the time its time.
var CloudEventsDefaults = Mapping{Workload: "/subject", Meter: "/type", Value: "/data/value", Time: "/time"}

func mustMapping(m Mapping) Mapping {
	m, err := m.normalise()
	if err != nil {
		panic(err) // a shipped mapping is valid; its test says so
	}
	return m
}

// normalise fills in the format's defaults and validates the result.
func (m Mapping) normalise() (Mapping, error) {
	if m.Format == "" {
		m.Format = FormatHookline
	}
	var errs []error
	switch m.Format {
	case FormatHookline:
		errs = m.hooklineDefaults()
	case FormatCloudEvents:
		errs = m.cloudEventsDefaults()
	case FormatStripeAlerts:
		errs = m.alertsDefaults(FormatStripeAlerts, StripeAlertType)
	case FormatOpenMeterAlerts:
		errs = m.alertsDefaults(FormatOpenMeterAlerts, OpenMeterAlertType)
	default:
		return m, fmt.Errorf("format %q: want %s, %s, %s or %s", m.Format, FormatHookline, FormatCloudEvents, FormatStripeAlerts, FormatOpenMeterAlerts)
	}
	m.rule, errs = m.timeRule(errs)
	return m, errors.Join(errs...)
}

// hooklineDefaults fixes usage.recorded's members; only the unit, the
// meter's name and the time rule may be set.
func (m *Mapping) hooklineDefaults() []error {
	var errs []error
	if m.Mode != "" || len(m.UsageTypes) > 0 || m.Workload != "" || m.Meter != "" || m.Value != "" || m.ValueFormat != "" || m.Scale != 0 || m.Time != "" {
		errs = append(errs, errors.New("format hookline reads usage.recorded's own members: only unit, meter_name, max_age, max_skew and reconciled may be set"))
	}
	m.UsageTypes, m.Value, m.ValueFormat, m.Scale = []string{hooklineType}, hooklinePointers.value, ValueInteger, 1
	m.Workload, m.Time = hooklinePointers.workload, hooklinePointers.time
	if m.MeterName == "" {
		m.MeterName = DefaultUnit
	}
	if m.Unit == "" {
		m.Unit = DefaultUnit
	}
	if m.Reconciled == nil {
		m.Reconciled = ptr(true)
	}
	return append(errs, checkName("meter_name", m.MeterName), checkName("unit", m.Unit))
}

// cloudEventsDefaults fills in a CloudEvents mapping's pointers.
func (m *Mapping) cloudEventsDefaults() []error {
	var errs []error
	if m.Mode == "" {
		m.Mode = ModeAny
	}
	if !slices.Contains([]string{ModeAny, ModeStructured, ModeBatch}, m.Mode) {
		errs = append(errs, fmt.Errorf("mode %q: want %s, %s or %s", m.Mode, ModeAny, ModeStructured, ModeBatch))
	}
	if len(m.UsageTypes) == 0 {
		errs = append(errs, errors.New("usage_types: name the event types that are usage"))
	}
	for i, t := range m.UsageTypes {
		if t == "" {
			errs = append(errs, fmt.Errorf("usage_types[%d] is empty", i))
		}
	}
	if m.Unit == "" {
		errs = append(errs, errors.New("unit: name what the value counts (tokens, usd_micros, ...)"))
	}
	m.Workload = cmpOr(m.Workload, CloudEventsDefaults.Workload)
	m.Time = cmpOr(m.Time, CloudEventsDefaults.Time)
	if m.MeterName == "" {
		m.Meter = cmpOr(m.Meter, CloudEventsDefaults.Meter)
	}
	m.ValueFormat = cmpOr(m.ValueFormat, ValueDecimal)
	if m.ValueFormat != ValueCount {
		m.Value = cmpOr(m.Value, CloudEventsDefaults.Value)
	}
	if m.Scale == 0 {
		m.Scale = 1
	}
	if m.Reconciled == nil {
		m.Reconciled = ptr(false)
	}
	return append(errs, m.checkValue(), m.checkPointers(), checkName("unit", m.Unit))
}

// alertsDefaults refuses every member an alerts mapping (Stripe's,
// OpenMeter's) cannot use, naming each: an alert's workload, meter, value
// and scale come from the event and its sums source (SUM_SOURCES), and an
// alert is no record, so it has no unit, time rule or export.
func (m *Mapping) alertsDefaults(format, alertType string) []error {
	var errs []error
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"mode", m.Mode != ""}, {"usage_types", len(m.UsageTypes) > 0}, {"workload", m.Workload != ""},
		{"meter", m.Meter != ""}, {"meter_name", m.MeterName != ""}, {"value", m.Value != ""},
		{"value_format", m.ValueFormat != ""}, {"scale", m.Scale != 0}, {"unit", m.Unit != ""}, {"time", m.Time != ""},
		{"max_age", m.MaxAge != ""}, {"max_skew", m.MaxSkew != ""}, {"reconciled", m.Reconciled != nil},
	} {
		if f.set {
			errs = append(errs, fmt.Errorf("%s: format %s reads %s as the provider writes it, and its sums source (SUM_SOURCES) gives the meter and scale: drop %s",
				f.name, format, alertType, f.name))
		}
	}
	m.Reconciled = ptr(false)
	return errs
}

// IsAlerts reports whether the mapping reads a provider's alerts, which
// count no records and so have no unit.
func (m Mapping) IsAlerts() bool {
	return m.Format == FormatStripeAlerts || m.Format == FormatOpenMeterAlerts
}

// Meters are the meter names the mapping's records carry: its
// meter_name, or, when each event's meter is its type (the CloudEvents
// default), its usage types. anyName is true when a pointer elsewhere
// reads each event's meter, which may then be any name. An alerts
// mapping counts no records, and has none.
func (m Mapping) Meters() (names []string, anyName bool) {
	switch {
	case m.IsAlerts():
		return nil, false
	case m.MeterName != "":
		return []string{m.MeterName}, false
	case m.Meter == CloudEventsDefaults.Meter:
		return slices.Clone(m.UsageTypes), false
	}
	return nil, true
}

// Explicit reports whether source has a mapping of its own in
// USAGE_MAPPINGS, rather than reading usage.recorded by default.
func (ms *Mappings) Explicit(source string) bool {
	if ms == nil {
		return false
	}
	_, ok := ms.bySource[source]
	return ok
}

// checkValue refuses a value rule that cannot read a value.
func (m Mapping) checkValue() error {
	switch {
	case !slices.Contains([]string{ValueDecimal, ValueInteger, ValueCount}, m.ValueFormat):
		return fmt.Errorf("value_format %q: want %s, %s or %s", m.ValueFormat, ValueDecimal, ValueInteger, ValueCount)
	case m.ValueFormat == ValueCount && (m.Value != "" || m.Scale != 1):
		return errors.New("value_format count counts one per event: drop value and scale")
	case m.Scale < 1 || m.Scale > MaxScale:
		return fmt.Errorf("scale %d outside 1..%d", m.Scale, MaxScale)
	case m.Meter != "" && m.MeterName != "":
		return errors.New("give meter (a pointer) or meter_name (one name), not both")
	}
	return nil
}

// checkPointers refuses a pointer that is not one (RFC 6901).
func (m Mapping) checkPointers() error {
	var errs []error
	for _, p := range []struct{ name, ptr string }{{"workload", m.Workload}, {"meter", m.Meter}, {"value", m.Value}, {"time", m.Time}} {
		switch {
		case p.ptr == "":
		case !strings.HasPrefix(p.ptr, "/"):
			errs = append(errs, fmt.Errorf("%s: %q is not a JSON pointer (RFC 6901): it must start with /", p.name, p.ptr))
		case strings.Contains(strings.ReplaceAll(strings.ReplaceAll(p.ptr, "~0", ""), "~1", ""), "~"):
			errs = append(errs, fmt.Errorf("%s: %q has a ~ that is not ~0 or ~1", p.name, p.ptr))
		}
	}
	return errors.Join(errs...)
}

// timeRule reads MaxAge and MaxSkew.
func (m Mapping) timeRule(errs []error) (TimeRule, []error) {
	rule := DefaultTimeRule
	for _, d := range []struct {
		name, text string
		into       *time.Duration
	}{{"max_age", m.MaxAge, &rule.MaxAge}, {"max_skew", m.MaxSkew, &rule.MaxSkew}} {
		if d.text == "" {
			continue
		}
		v, err := time.ParseDuration(d.text)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: want a duration such as \"840h\"", d.name, d.text))
			continue
		}
		*d.into = v
	}
	if err := rule.Validate(); err != nil {
		errs = append(errs, err)
	}
	return rule, errs
}

// Rule is the mapping's time rule.
func (m Mapping) Rule() TimeRule { return m.rule }

// IsReconciled reports whether the reconciler's export holds the source's
// records ([Mapping.Reconciled]).
func (m Mapping) IsReconciled() bool { return m.Reconciled != nil && *m.Reconciled }

// checkName refuses a unit or meter name that is not an identifier.
func checkName(field, name string) error {
	if err := provider.CheckUsageID(field, name); err != nil {
		fe, _ := provider.AsFieldError(err)
		return fmt.Errorf("%s %q: %s", field, name, fe.Reason)
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func ptr[T any](v T) *T { return &v }

// Mappings holds each usage source's [Mapping]; a source without one reads
// usage.recorded ([HooklineMapping]).
type Mappings struct {
	bySource map[string]Mapping
}

// ParseMappings reads USAGE_MAPPINGS: an object from source name to
// mapping, such as
//
//	{"meters": {"format": "cloudevents", "usage_types": ["com.example.tokens"],
//	            "value": "/data/tokens", "scale": 1000, "unit": "milli_tokens", "max_age": "840h"}}
//
// Unknown members are refused, so that a misspelt one is not silently
// ignored; every problem is reported at once, naming the source and the
// field.
func ParseMappings(raw []byte) (*Mappings, error) {
	var m map[string]Mapping
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadMapping, err)
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	ms := &Mappings{bySource: map[string]Mapping{}}
	var errs []error
	for _, name := range names {
		norm, err := m[name].normalise()
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: source %q: %w", ErrBadMapping, name, err))
		}
		ms.bySource[name] = norm
	}
	return ms, errors.Join(errs...)
}

// For returns the mapping of source.
func (ms *Mappings) For(source string) Mapping {
	if ms != nil {
		if m, ok := ms.bySource[source]; ok {
			return m
		}
	}
	return HooklineMapping
}

// UsageQueue is the queue the spend worker reads; a source that feeds it
// is a usage source.
const UsageQueue = "usage"

// CheckSources refuses, at start, what would make a usage source's records
// wrong: a mapping for a source that is not a usage source, a CloudEvents
// source not signed with Standard Webhooks (the scheme producers tee
// their events with), a Stripe alerts source not signed with
// Stripe-Signature, and a source whose unit differs from the unit of the
// workloads' caps (workloadUnit: USD costs against a token cap). A Stripe
// alerts source counts no records, so it has no unit.
func (ms *Mappings) CheckSources(sources []webhook.SourceSpec, workloadUnit string) error {
	usage := map[string]webhook.SourceSpec{}
	for _, s := range sources {
		if s.Queue == UsageQueue {
			usage[s.Name] = s
		}
	}
	var errs []error
	if ms != nil {
		for name, m := range ms.bySource {
			s, ok := usage[name]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%w: source %q: no usage source of that name in HOOKLINE_SOURCES (queue %q)", ErrBadMapping, name, UsageQueue))
			case m.Format == FormatCloudEvents && s.Scheme != webhook.SchemeStandard:
				errs = append(errs, fmt.Errorf("%w: source %q: scheme: a CloudEvents source is signed with %s, not %s", ErrBadMapping, name, webhook.SchemeStandard, s.Scheme))
			case m.Format == FormatStripeAlerts && s.Scheme != webhook.SchemeStripe:
				errs = append(errs, fmt.Errorf("%w: source %q: scheme: a Stripe alerts source is signed with %s, not %s", ErrBadMapping, name, webhook.SchemeStripe, s.Scheme))
			case m.Format == FormatOpenMeterAlerts && s.Scheme != webhook.SchemeStandard:
				errs = append(errs, fmt.Errorf("%w: source %q: scheme: an OpenMeter alerts source is signed with %s (Svix), not %s", ErrBadMapping, name, webhook.SchemeStandard, s.Scheme))
			}
		}
	}
	for _, s := range sources {
		if m := ms.For(s.Name); s.Queue == UsageQueue && !m.IsAlerts() && m.Unit != workloadUnit {
			errs = append(errs, fmt.Errorf("%w: source %q: unit: %q differs from the workloads' unit %q (SPEND_UNIT): its records would be counted against caps of another unit", ErrBadMapping, s.Name, m.Unit, workloadUnit))
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}
