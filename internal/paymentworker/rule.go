package paymentworker

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hookline/hookline/pkg/webhook"
)

// maxEffectKey bounds an effect key, which becomes part of the
// idempotency key.
const maxEffectKey = 200

// decide applies the mapping's rule to a message body: whether the event
// acts, its effect key, and its charge. p carries the source and the
// intake's event ID. An event that does not act comes back with
// NotAnEffect set and no error.
func (m Mapping) decide(body []byte, p Payment) (Payment, error) {
	doc, err := decodeBody(body)
	if err != nil {
		return p, err
	}
	if err := m.checkProvider(doc); err != nil {
		return p, err
	}
	if reason, acts := m.acts(doc); !acts {
		p.NotAnEffect = reason
		return p, nil
	}
	req, err := m.charge(doc, p.EventID)
	if err != nil {
		return p, err
	}
	p.EventID = req.EventID
	if p.EffectKey, err = m.effectKey(doc, p.EventID); err != nil {
		return p, err
	}
	p.Charge, p.Effect = req, m.Effect
	if err := p.Charge.Validate(); err != nil {
		return p, err
	}
	p.LegacyKeys, p.UnsignedLegacyKeys, p.LegacySharedKeys = m.legacyKeys(doc, p)
	p.Unstamped = slices.Contains(unstamped, webhook.Scheme(m.Scheme))
	return p, nil
}

// checkProvider refuses a message that its source's mapping was not
// written for: a preset's envelope under a mapping that does not name
// that preset (its pointers would not be checked against what the
// provider signs), or a mapping for a preset on anything else.
func (m Mapping) checkProvider(doc any) error {
	from := envelopeProvider(doc)
	switch {
	case m.isPreset() && from != m.Scheme:
		return fmt.Errorf("the mapping is for scheme %s, and the message is not a %s event", m.Scheme, m.Scheme)
	case !m.isPreset() && from != "":
		return fmt.Errorf("the message is a %s event: its source's mapping must say \"scheme\": %q", from, from)
	}
	return nil
}

// envelopeProvider is the preset that queued doc ([webhook.ItemEnvelope]),
// or "".
func envelopeProvider(doc any) string {
	obj, ok := doc.(map[string]any)
	if !ok {
		return ""
	}
	name, _ := obj["provider"].(string)
	if _, hasItem := obj["item"]; !hasItem || !slices.Contains(webhook.Schemes(), webhook.Scheme(name)) {
		return ""
	}
	return name
}

// acts reports whether every act_when pointer holds one of its values,
// and if not, why.
func (m Mapping) acts(doc any) (string, bool) {
	for ptr, want := range m.ActWhen {
		v, ok := resolve(doc, ptr)
		got, text := valueText(v)
		if !ok || !text || !slices.Contains(want, got) {
			return fmt.Sprintf("%s is %s, not %s", ptr, shown(v, ok, got, text), strings.Join(want, " or ")), false
		}
	}
	return "", true
}

// valueText is a scalar JSON value as act_when compares it: a string as
// it is, a number or boolean as its JSON text.
func valueText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return string(x), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// shown is a value for a reason, bounded.
func shown(v any, present bool, text string, scalar bool) string {
	switch {
	case !present:
		return "absent"
	case v == nil:
		return "null"
	case !scalar:
		return "not a string, number or boolean"
	case len(text) > 64:
		return strconv.Quote(text[:64]) + "..."
	}
	return strconv.Quote(text)
}

// effectKey reads the effect key, or returns eventID when the mapping
// keys by event.
func (m Mapping) effectKey(doc any, eventID string) (string, error) {
	if m.EffectKey == "" {
		return eventID, nil
	}
	v, ok := resolve(doc, m.EffectKey)
	key, scalar := valueText(v)
	switch {
	case !ok || v == nil:
		return "", fmt.Errorf("effect_key: %s is missing", m.EffectKey)
	case !scalar || key == "":
		return "", fmt.Errorf("effect_key: %s is not a non-empty string or number", m.EffectKey)
	case len(key) > maxEffectKey || strings.IndexFunc(key, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0:
		return "", fmt.Errorf("effect_key: %s is not 1 to %d printable ASCII characters", m.EffectKey, maxEffectKey)
	}
	return key, nil
}

// legacyKeys are the keys earlier builds claimed this payment under:
// those read from what the provider signs ([Payment.LegacyKeys]), those
// read from an unsigned header ([Payment.UnsignedLegacyKeys]), and those
// an earlier build gave a whole payment ([Payment.LegacySharedKeys]).
//
// The build before effect keys keyed each event by the source and the
// intake's event ID; per preset it also acted on other events of the
// same payment (Mollie's authorized beside paid, Adyen's AUTHORISATION
// of a payment captured later), so a completed record under one of those
// is of this event or of the whole payment. A header-identity preset
// (Razorpay, GitHub, Shopify) was keyed by its unsigned header ID, which
// may name another delivery.
//
// The build before one key per money movement keyed an Adyen delayed
// capture by the payment's originalReference, the authorisation's
// pspReference, which immediate capture keys its payment by too: a
// record there may be of another capture of the payment.
func (m Mapping) legacyKeys(doc any, p Payment) (signed, unsigned, shared []string) {
	keys := []string{p.EventID}
	switch webhook.Scheme(m.Scheme) {
	case webhook.SchemeMollie:
		keys = append(keys, p.EffectKey+":paid", p.EffectKey+":authorized")
	case webhook.SchemeAdyen:
		payment := p.EffectKey
		if m.Capture == CaptureDelayed {
			payment = stringAt(doc, "/item/originalReference")
			shared = p.scoped([]string{payment})
		}
		if payment != "" {
			keys = append(keys, "AUTHORISATION:"+payment+":true")
		}
	case webhook.SchemeRazorpay, webhook.SchemeGitHub, webhook.SchemeShopify:
		unsigned = p.scoped([]string{stringAt(doc, "/header_id")})
	}
	return p.scoped(keys), unsigned, shared
}

// scoped are keys as the registry holds them: each of ids under the
// payment's source, without empty IDs, repeats or the payment's own key.
func (p Payment) scoped(ids []string) []string {
	var out []string
	for _, id := range ids {
		key := p.Source + ":" + id
		if id != "" && key != p.Key() && !slices.Contains(out, key) {
			out = append(out, key)
		}
	}
	return out
}

// stringAt is the string ptr points at in doc, or "".
func stringAt(doc any, ptr string) string {
	v, _ := resolve(doc, ptr)
	s, _ := v.(string)
	return s
}

// unstamped are the presets whose deliveries carry no signed time:
// nothing but a key bounds a replay of one. Every other scheme either
// enforces a replay window on a signed time (Stripe, Standard Webhooks,
// Paddle, PayPal) or has a signed time the receiver refuses to act on
// past the intake's retention.
var unstamped = []webhook.Scheme{webhook.SchemeAdyen, webhook.SchemeGitHub, webhook.SchemeShopify, webhook.SchemeMollie}

// errNoCharger is a mapping whose effect the worker has no client for.
var errNoCharger = errors.New("paymentworker: no client for the effect")
