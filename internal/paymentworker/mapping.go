package paymentworker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/webhook"
)

// ErrBadMapping means a payload mapping is invalid.
var ErrBadMapping = errors.New("paymentworker: bad payload mapping")

// Mapping is a source's effect rule: which of its events act, the key
// that makes one effect per money movement, and where its body keeps the fields
// of a charge, each as a JSON pointer (RFC 6901) into the body (for a
// preset, the queued envelope: "/item/..." is the provider's event, or
// for a fetched provider the object fetched from its API).
//
// Customer, Amount and Currency are required; EventID defaults to "/id"
// and is used only when the intake did not name the event; Description
// is optional and may point at nothing or at null. A mapping that names
// a preset [Mapping.Scheme] takes that provider's defaults ([PresetRule])
// for every field it leaves empty, and may point only at what that
// provider signs.
type Mapping struct {
	// Scheme is the source's scheme as in HOOKLINE_SOURCES ("adyen",
	// "stripe", ...); empty for a body of hookline's or a generic shape.
	Scheme      string `json:"scheme,omitempty"`
	EventID     string `json:"event_id,omitempty"`
	Customer    string `json:"customer"`
	Amount      string `json:"amount"`
	Currency    string `json:"currency"`
	Description string `json:"description,omitempty"`
	// ActWhen says which events act: every pointer must hold one of its
	// values (a string as it is, a number or boolean as its JSON text).
	// Any other event is acknowledged as not an effect.
	ActWhen map[string][]string `json:"act_when,omitempty"`
	// EffectKey points at the key of the one effect per money movement,
	// such as a capture's ID; empty means the event ID. Every event that acts
	// with the same key has one effect.
	EffectKey string `json:"effect_key,omitempty"`
	// AmountFormat is [AmountMinor] (the default), [AmountMinorString] or
	// [AmountDecimal].
	AmountFormat string `json:"amount_format,omitempty"`
	// Capture is Adyen's capture mode: "immediate" (the default: a
	// successful AUTHORISATION is the payment) or "delayed" (each
	// successful CAPTURE is, whole or partial, keyed by its own
	// pspReference).
	Capture string `json:"capture,omitempty"`
	// Effect names the effect that acts ([EffectContract] or
	// [EffectStripe]); empty means the worker's own for a generic source
	// and [EffectContract] for a preset, which never charges through
	// Stripe unless it says so.
	Effect string `json:"effect,omitempty"`
}

// Shipped mappings.
var (
	// HooklineMapping is hookline's own event shape, acting on
	// payment.requested: {"id":..., "type":"payment.requested",
	// "data":{"customer":..., "amount":..., "currency":...}}.
	HooklineMapping = Mapping{EventID: "/id", Customer: "/data/customer", Amount: "/data/amount", Currency: "/data/currency", Description: "/data/description",
		AmountFormat: AmountMinor, ActWhen: map[string][]string{"/type": {"payment.requested"}}}
	// StripeInvoiceMapping is a Stripe invoice: it acts on
	// invoice.finalized, once per invoice (an invoice.paid or
	// invoice.updated of the same invoice is no second effect), charging
	// the invoice's customer its amount_due, described by its number.
	StripeInvoiceMapping = Mapping{Scheme: "stripe", EventID: "/id", Customer: "/data/object/customer", Amount: "/data/object/amount_due", Currency: "/data/object/currency", Description: "/data/object/number",
		AmountFormat: AmountMinor, ActWhen: map[string][]string{"/type": {"invoice.finalized"}}, EffectKey: "/data/object/id"}
)

// DefaultSource is the key of [Mappings] that applies to every source not
// named.
const DefaultSource = "*"

// Mappings holds each source's [Mapping]. A source without its own uses
// the one under [DefaultSource], else [HooklineMapping].
type Mappings struct {
	bySource map[string]Mapping
}

// DefaultMappings maps every source with [HooklineMapping].
func DefaultMappings() *Mappings { return &Mappings{bySource: map[string]Mapping{}} }

// NewMappings validates m (source name -> mapping) and returns it as
// Mappings. Errors name the source and the field, every one at once.
func NewMappings(m map[string]Mapping) (*Mappings, error) { return newMappings(m, nil) }

// newMappings is [NewMappings], told the preset scheme of each source
// known to be a preset's, so that a mapping of one that names no scheme
// is told how to name it.
func newMappings(m map[string]Mapping, presets map[string]webhook.Scheme) (*Mappings, error) {
	var errs []error
	for _, s := range slices.Sorted(maps.Keys(m)) {
		if s == "" {
			errs = append(errs, fmt.Errorf("%w: a source name is empty", ErrBadMapping))
			continue
		}
		err := m[s].upgradeError(s, presets[s])
		if err == nil {
			err = m[s].withDefaults().validate()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: source %q: %w", ErrBadMapping, s, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	by := make(map[string]Mapping, len(m))
	for s, mp := range m {
		by[s] = mp.withDefaults()
	}
	return &Mappings{bySource: by}, nil
}

// ParseMappings reads mappings from JSON: an object from source name (or
// "*") to an object of JSON pointers, as in PAYMENT_MAPPINGS:
//
//	{"stripe": {"scheme": "stripe", "customer": "/data/object/customer", "amount": "/data/object/amount_due",
//	            "currency": "/data/object/currency", "description": "/data/object/number",
//	            "act_when": {"/type": ["invoice.finalized"]}, "effect_key": "/data/object/id"},
//	 "shop-adyen": {"scheme": "adyen", "customer": "/item/merchantReference"}}
//
// Unknown fields are errors, so a misspelt field is not silently ignored.
func ParseMappings(raw []byte) (*Mappings, error) { return ParseMappingsFor(raw, nil) }

// ParseMappingsFor is [ParseMappings] for the sources of
// HOOKLINE_SOURCES: a mapping of a preset source that names no scheme,
// as the build before effect rules wrote them, is refused with its fix
// (name the preset: `"scheme": "mollie"`), and every payments source is
// then checked as [Mappings.CheckSources] does.
func ParseMappingsFor(raw []byte, sources []webhook.SourceSpec) (*Mappings, error) {
	var m map[string]Mapping
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadMapping, err)
	}
	presets := map[string]webhook.Scheme{}
	for _, src := range sources {
		if src.Queue == PaymentsQueue && presetScheme(src.Scheme) {
			presets[src.Name] = src.Scheme
		}
	}
	ms, err := newMappings(m, presets)
	if err != nil {
		return nil, err
	}
	if err := ms.CheckSources(sources); err != nil {
		return nil, err
	}
	return ms, nil
}

// upgradeError refuses a mapping that names no scheme and says nothing
// of which events act, as the build before effect rules wrote every
// mapping, when it was written for a preset: its source is a preset's
// (preset, when the sources are known), is named after one, or its
// pointers read a preset's item. It says how to fix it, not the generic
// act_when example, and what would still be refused once it is fixed.
func (m Mapping) upgradeError(source string, preset webhook.Scheme) error {
	if m.Scheme != "" || len(m.ActWhen) != 0 {
		return nil
	}
	what := "the source's scheme is " + string(preset)
	if preset == "" && presetScheme(webhook.Scheme(source)) {
		preset, what = webhook.Scheme(source), "the source is named for the "+source+" preset"
	}
	const doc = "(docs/providers.md, \"Upgrading from an earlier build\")"
	switch {
	case preset != "":
		err := fmt.Errorf("scheme: the mapping names no preset, as an earlier build's did, and %s: name the preset: `\"scheme\": %q`, "+
			"which brings its act_when and effect_key %s", what, preset, doc)
		fixed := m
		fixed.Scheme = string(preset)
		if ferr := fixed.withDefaults().validate(); ferr != nil {
			return fmt.Errorf("%w; with it: %w", err, ferr)
		}
		return err
	case m.readsItem():
		return fmt.Errorf("scheme: the mapping reads a preset's item (/item/...) and names no preset, as an earlier build's did: "+
			"name the preset: `\"scheme\": \"<the source's scheme>\"`, which brings its act_when and effect_key %s", doc)
	}
	return nil
}

// readsItem reports whether any of m's pointers reads a preset's item.
func (m Mapping) readsItem() bool {
	return slices.ContainsFunc([]string{m.Customer, m.Amount, m.Currency, m.Description, m.EventID, m.EffectKey}, underItem)
}

// For returns the mapping of source.
func (ms *Mappings) For(source string) Mapping {
	if ms != nil {
		if m, ok := ms.bySource[source]; ok {
			return m
		}
		if m, ok := ms.bySource[DefaultSource]; ok {
			return m
		}
	}
	return HooklineMapping
}

// PaymentsQueue is the queue the payment worker reads.
const PaymentsQueue = "payments"

// CheckSources reports every source of the payments queue whose mapping
// was not written for its scheme: a preset's items are read only by a
// mapping that names that preset (its defaults, and its signed fields),
// and a generic body never by a preset's mapping. A preset source with
// no mapping at all (none of its own, no "*") is not refused: its
// events are dead-lettered, visible and redrivable once one is added.
func (ms *Mappings) CheckSources(sources []webhook.SourceSpec) error {
	var errs []error
	for _, src := range sources {
		if src.Queue != PaymentsQueue || !ms.configured(src.Name) {
			continue
		}
		m := ms.For(src.Name)
		generic := src.Scheme == webhook.SchemeStandard || src.Scheme == webhook.SchemeStripe
		switch {
		case generic && m.isPreset():
			errs = append(errs, fmt.Errorf("%w: source %q: scheme: the mapping is for %s, the source is %s", ErrBadMapping, src.Name, m.Scheme, src.Scheme))
		case !generic && m.Scheme != string(src.Scheme):
			errs = append(errs, fmt.Errorf("%w: source %q: scheme: the source is %s and has no mapping that says \"scheme\": %q, so none of its events can act: "+
				"name the preset: `\"scheme\": %q` (docs/providers.md)", ErrBadMapping, src.Name, src.Scheme, src.Scheme, src.Scheme))
		}
	}
	return errors.Join(errs...)
}

// configured reports whether source has a mapping of its own or under
// [DefaultSource].
func (ms *Mappings) configured(source string) bool {
	if ms == nil {
		return false
	}
	_, own := ms.bySource[source]
	_, all := ms.bySource[DefaultSource]
	return own || all
}

// effectsNeeded lists each source whose mapping names an effect, by
// source.
func (ms *Mappings) effectsNeeded() map[string]string {
	out := map[string]string{}
	if ms != nil {
		for s, m := range ms.bySource {
			if m.Effect != "" {
				out[s] = m.Effect
			}
		}
	}
	return out
}

func (m Mapping) validate() error {
	var errs []error
	if m.Scheme == string(webhook.SchemeBraintree) {
		return errors.New("scheme braintree: its notification is XML inside bt_payload, out of a JSON pointer's reach, so a braintree source cannot be mapped to a payment")
	}
	if m.Scheme != "" && !slices.Contains(webhook.Schemes(), webhook.Scheme(m.Scheme)) {
		errs = append(errs, fmt.Errorf("scheme: %q is not a scheme", m.Scheme))
	}
	fields := []struct {
		name, ptr string
		required  bool
	}{
		{"customer", m.Customer, true}, {"amount", m.Amount, true}, {"currency", m.Currency, true},
		{"event_id", m.EventID, false}, {"description", m.Description, false}, {"effect_key", m.EffectKey, m.isPreset()},
	}
	for _, ptr := range slices.Sorted(maps.Keys(m.ActWhen)) {
		fields = append(fields, struct {
			name, ptr string
			required  bool
		}{"act_when", ptr, true})
	}
	for _, f := range fields {
		if err := checkPointer(f.ptr, f.required); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.name, err))
		} else if f.ptr != "" && !signedPointer(webhook.Scheme(m.Scheme), f.name, f.ptr) {
			errs = append(errs, unsignedError(webhook.Scheme(m.Scheme), f.name, f.ptr))
		}
	}
	errs = append(errs, m.validateRule()...)
	return errors.Join(errs...)
}

// validateRule checks the settings that are not pointers.
func (m Mapping) validateRule() []error {
	var errs []error
	if len(m.ActWhen) == 0 {
		errs = append(errs, fmt.Errorf("act_when: no rule says which events act%s", noDefaultNote(webhook.Scheme(m.Scheme))))
	}
	for ptr, values := range m.ActWhen {
		if len(values) == 0 || slices.Contains(values, "") {
			errs = append(errs, fmt.Errorf("act_when: %s: want one or more non-empty values", ptr))
		}
	}
	if m.AmountFormat != "" && !slices.Contains(amountFormats, m.AmountFormat) {
		errs = append(errs, fmt.Errorf("amount_format: %q is not one of %s", m.AmountFormat, strings.Join(amountFormats, ", ")))
	}
	if m.Capture != "" && (m.Scheme != string(webhook.SchemeAdyen) || !slices.Contains(captureModes, m.Capture)) {
		errs = append(errs, fmt.Errorf("capture: %q: only an adyen mapping has a capture mode, one of %s", m.Capture, strings.Join(captureModes, ", ")))
	}
	if m.Effect != "" && !slices.Contains(effects, m.Effect) {
		errs = append(errs, fmt.Errorf("effect: %q is not one of %s", m.Effect, strings.Join(effects, ", ")))
	}
	return errs
}

// checkPointer reports a JSON pointer that is not one.
func checkPointer(ptr string, required bool) error {
	switch {
	case ptr == "" && required:
		return errors.New("no JSON pointer")
	case ptr != "" && !strings.HasPrefix(ptr, "/"):
		return fmt.Errorf("%q is not a JSON pointer (RFC 6901): it must start with /", ptr)
	case strings.Contains(strings.ReplaceAll(strings.ReplaceAll(ptr, "~0", ""), "~1", ""), "~"):
		return fmt.Errorf("%q has a ~ that is not ~0 or ~1", ptr)
	}
	return nil
}

// Apply reads a charge for eventID from body. An empty eventID is read
// from the mapping's EventID pointer. Errors name the field and its
// pointer, never a value from the body. It does not ask whether the
// event acts; [ParseMessageWith] does.
func (m Mapping) Apply(body []byte, eventID string) (provider.ChargeRequest, error) {
	doc, err := decodeBody(body)
	if err != nil {
		return provider.ChargeRequest{}, err
	}
	return m.charge(doc, eventID)
}

// decodeBody decodes a JSON body with numbers kept as written.
func decodeBody(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, errors.New("body is not JSON")
	}
	return doc, nil
}

// charge reads the charge's fields from a decoded body.
func (m Mapping) charge(doc any, eventID string) (provider.ChargeRequest, error) {
	var errs []error
	field := func(name, ptr string, required bool) string {
		v, ok := resolve(doc, ptr)
		switch s, isString := v.(string); {
		case ptr == "" || (!ok || v == nil) && !required:
			return ""
		case !ok || v == nil:
			errs = append(errs, fmt.Errorf("%s: %s is missing", name, ptr))
		case !isString:
			errs = append(errs, fmt.Errorf("%s: %s is not a string", name, ptr))
		case s == "" && required:
			errs = append(errs, fmt.Errorf("%s: %s is empty", name, ptr))
		default:
			return s
		}
		return ""
	}
	if eventID == "" {
		eventID = field("event_id", m.EventID, true)
	}
	req := provider.ChargeRequest{
		EventID:     eventID,
		Customer:    field("customer", m.Customer, true),
		Currency:    field("currency", m.Currency, true),
		Description: field("description", m.Description, false),
	}
	switch v, ok := resolve(doc, m.Amount); {
	case !ok || v == nil:
		errs = append(errs, fmt.Errorf("amount: %s is missing", m.Amount))
	default:
		amount, err := amountOf(v, m.AmountFormat, req.Currency, m.Scheme)
		if err != nil {
			errs = append(errs, fmt.Errorf("amount: %s %w", m.Amount, err))
		}
		req.Amount = amount
	}
	return req, errors.Join(errs...)
}

// resolve follows a JSON pointer (RFC 6901) into a document decoded with
// UseNumber. ok is false when a step does not exist.
func resolve(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch node := cur.(type) {
		case map[string]any:
			v, ok := node[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(node) || (len(tok) > 1 && tok[0] == '0') {
				return nil, false
			}
			cur = node[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
