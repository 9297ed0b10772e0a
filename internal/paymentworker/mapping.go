package paymentworker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hookline/hookline/pkg/provider"
)

// ErrBadMapping means a payload mapping is invalid.
var ErrBadMapping = errors.New("paymentworker: bad payload mapping")

// Mapping says where a source's webhook body keeps the fields of a
// charge, each as a JSON pointer (RFC 6901) into the body. Customer,
// Amount and Currency are required; EventID defaults to "/id" and is used
// only when the intake did not name the event; Description is optional
// and may point at nothing or at null.
type Mapping struct {
	EventID     string `json:"event_id,omitempty"`
	Customer    string `json:"customer"`
	Amount      string `json:"amount"`
	Currency    string `json:"currency"`
	Description string `json:"description,omitempty"`
}

// Shipped mappings.
var (
	// HooklineMapping is hookline's own event shape:
	// {"id":..., "data":{"customer":..., "amount":..., "currency":...}}.
	HooklineMapping = Mapping{EventID: "/id", Customer: "/data/customer", Amount: "/data/amount", Currency: "/data/currency", Description: "/data/description"}
	// StripeInvoiceMapping is a Stripe invoice event (invoice.finalized):
	// the invoice's customer, amount_due and currency, described by its
	// number.
	StripeInvoiceMapping = Mapping{EventID: "/id", Customer: "/data/object/customer", Amount: "/data/object/amount_due", Currency: "/data/object/currency", Description: "/data/object/number"}
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
func NewMappings(m map[string]Mapping) (*Mappings, error) {
	sources := make([]string, 0, len(m))
	for s := range m {
		sources = append(sources, s)
	}
	sort.Strings(sources)
	var errs []error
	for _, s := range sources {
		if s == "" {
			errs = append(errs, fmt.Errorf("%w: a source name is empty", ErrBadMapping))
			continue
		}
		if err := m[s].validate(); err != nil {
			errs = append(errs, fmt.Errorf("%w: source %q: %w", ErrBadMapping, s, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	by := make(map[string]Mapping, len(m))
	for s, mp := range m {
		if mp.EventID == "" {
			mp.EventID = "/id"
		}
		by[s] = mp
	}
	return &Mappings{bySource: by}, nil
}

// ParseMappings reads mappings from JSON: an object from source name (or
// "*") to an object of JSON pointers, as in PAYMENT_MAPPINGS:
//
//	{"stripe": {"customer": "/data/object/customer", "amount": "/data/object/amount_due",
//	            "currency": "/data/object/currency", "description": "/data/object/number"}}
//
// Unknown fields are errors, so a misspelt field is not silently ignored.
func ParseMappings(raw []byte) (*Mappings, error) {
	var m map[string]Mapping
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadMapping, err)
	}
	return NewMappings(m)
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

func (m Mapping) validate() error {
	var errs []error
	for _, f := range []struct {
		name, ptr string
		required  bool
	}{
		{"customer", m.Customer, true}, {"amount", m.Amount, true}, {"currency", m.Currency, true},
		{"event_id", m.EventID, false}, {"description", m.Description, false},
	} {
		switch {
		case f.ptr == "" && f.required:
			errs = append(errs, fmt.Errorf("%s: no JSON pointer", f.name))
		case f.ptr != "" && !strings.HasPrefix(f.ptr, "/"):
			errs = append(errs, fmt.Errorf("%s: %q is not a JSON pointer (RFC 6901): it must start with /", f.name, f.ptr))
		case strings.Contains(strings.ReplaceAll(strings.ReplaceAll(f.ptr, "~0", ""), "~1", ""), "~"):
			errs = append(errs, fmt.Errorf("%s: %q has a ~ that is not ~0 or ~1", f.name, f.ptr))
		}
	}
	return errors.Join(errs...)
}

// Apply reads a charge for eventID from body. An empty eventID is read
// from the mapping's EventID pointer. Errors name the field and its
// pointer, never a value from the body.
func (m Mapping) Apply(body []byte, eventID string) (provider.ChargeRequest, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return provider.ChargeRequest{}, errors.New("body is not JSON")
	}
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
		n, isNum := v.(json.Number)
		amount, err := strconv.ParseInt(string(n), 10, 64)
		switch {
		case !isNum:
			errs = append(errs, fmt.Errorf("amount: %s is not a number", m.Amount))
		case err != nil:
			errs = append(errs, fmt.Errorf("amount: %s is not an integer in minor units", m.Amount))
		case amount <= 0:
			errs = append(errs, fmt.Errorf("amount: %s is not positive", m.Amount))
		default:
			req.Amount = amount
		}
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
