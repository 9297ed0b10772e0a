package paymentworker

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hookline/hookline/pkg/webhook"
)

// Effects a mapping may name.
const (
	// EffectContract is the provider-contract HTTP client
	// (docs/provider-contract.md), pointed at the team's own fulfilment
	// or ledger service. A payment service provider's capture means the
	// customer has paid it already, so this is a preset's default.
	EffectContract = "contract"
	// EffectStripe charges the customer through Stripe.
	EffectStripe = "stripe"
)

var effects = []string{EffectContract, EffectStripe}

// Adyen's capture modes ([Mapping.Capture]).
const (
	CaptureImmediate = "immediate"
	CaptureDelayed   = "delayed"
)

var captureModes = []string{CaptureImmediate, CaptureDelayed}

// presetRules are the defaults of each preset, from its provider's docs:
// the events that are payments, the key of one money movement (one
// capture, one partial capture, one sale: never a key that several
// movements of one payment share), and where that movement's amount is.
// A fetched provider's rule reads only the object its API answered
// (/item/...). Customer is always the operator's to say. GitHub, Shopify
// and Braintree have none: their event names are unsigned headers (or,
// for Braintree, in XML), so no default is safe.
var presetRules = map[webhook.Scheme]Mapping{
	// A successful AUTHORISATION with immediate capture: the payment is
	// captured whole, once; its PSP reference is the key.
	webhook.SchemeAdyen: {Amount: "/item/amount/value", Currency: "/item/amount/currency", EffectKey: "/item/pspReference",
		ActWhen: map[string][]string{"/item/eventCode": {"AUTHORISATION"}, "/item/success": {"true"}}},
	// The capture, fetched from PayPal's API before acting: each partial
	// capture of an order is a capture with its own ID.
	webhook.SchemePayPal: {Amount: "/item/amount/value", Currency: "/item/amount/currency_code", AmountFormat: AmountDecimal, EffectKey: "/item/id",
		ActWhen: map[string][]string{"/item/status": {"COMPLETED"}}},
	// Each capture, partial or not, is an action of its own.
	webhook.SchemeCheckout: {Amount: "/item/data/amount", Currency: "/item/data/currency", EffectKey: "/item/data/action_id",
		ActWhen: map[string][]string{"/type": {"payment_captured"}}},
	// The payment, fetched from GoCardless's API (events carry no
	// amount) for a payments.confirmed event: a payment collects once.
	webhook.SchemeGoCardless: {Amount: "/item/amount", Currency: "/item/currency", EffectKey: "/item/id",
		ActWhen: map[string][]string{"/item/status": {"confirmed", "paid_out"}}},
	// A transaction completes once; each renewal is a new transaction.
	webhook.SchemePaddle: {Amount: "/item/data/details/totals/grand_total", Currency: "/item/data/currency_code", AmountFormat: AmountMinorString, EffectKey: "/item/data/id",
		ActWhen: map[string][]string{"/type": {"transaction.completed"}}},
	// payment.captured, not also order.paid of the same payment; Razorpay
	// captures a payment once, from authorized.
	webhook.SchemeRazorpay: {Amount: "/item/payload/payment/entity/amount", Currency: "/item/payload/payment/entity/currency", EffectKey: "/item/payload/payment/entity/id",
		ActWhen: map[string][]string{"/type": {"payment.captured"}}},
	// payment.created or payment.updated once the payment is COMPLETED
	// (completed once, whole); Square sends payment.updated again after
	// that.
	webhook.SchemeSquare: {Amount: "/item/data/object/payment/total_money/amount", Currency: "/item/data/object/payment/total_money/currency", EffectKey: "/item/data/id",
		ActWhen: map[string][]string{"/type": {"payment.created", "payment.updated"}, "/item/data/object/payment/status": {"COMPLETED"}}},
	// The payment, fetched from Mollie's API: paid, never authorized. The
	// fetched object's ID is the pinged one, which the fetch checks.
	webhook.SchemeMollie: {Amount: "/item/amount/value", Currency: "/item/amount/currency", AmountFormat: AmountDecimal, EffectKey: "/item/id",
		ActWhen: map[string][]string{"/item/status": {"paid"}}},
}

// adyenDelayed is Adyen's rule with delayed or manual capture: a
// successful CAPTURE, keyed by its own signed pspReference, so that each
// of several partial captures of one payment is one effect of its own
// amount.
var adyenDelayed = Mapping{EffectKey: "/item/pspReference",
	ActWhen: map[string][]string{"/item/eventCode": {"CAPTURE"}, "/item/success": {"true"}}}

// PresetRule is the default rule of a preset scheme: the events that
// act, the effect key and where the amount is. capture is Adyen's capture
// mode. ok is false for a scheme without one.
func PresetRule(scheme webhook.Scheme, capture string) (Mapping, bool) {
	r, ok := presetRules[scheme]
	if !ok {
		return Mapping{}, false
	}
	r.ActWhen = maps.Clone(r.ActWhen)
	if scheme == webhook.SchemeAdyen && capture == CaptureDelayed {
		r.EffectKey, r.ActWhen = adyenDelayed.EffectKey, maps.Clone(adyenDelayed.ActWhen)
	}
	return r, true
}

// isPreset reports whether the mapping names a provider preset.
func (m Mapping) isPreset() bool {
	s := webhook.Scheme(m.Scheme)
	return m.Scheme != "" && s != webhook.SchemeStandard && s != webhook.SchemeStripe
}

// presetScheme reports whether s is a provider preset's scheme: one whose
// deliveries are queued as a preset's envelope.
func presetScheme(s webhook.Scheme) bool {
	return s != webhook.SchemeStandard && s != webhook.SchemeStripe && slices.Contains(webhook.Schemes(), s)
}

// withDefaults fills what m leaves empty from its preset's rule.
func (m Mapping) withDefaults() Mapping {
	m.EventID = cmp.Or(m.EventID, "/id")
	if !m.isPreset() {
		m.AmountFormat = cmp.Or(m.AmountFormat, AmountMinor)
		return m
	}
	m.Effect = cmp.Or(m.Effect, EffectContract)
	d, ok := PresetRule(webhook.Scheme(m.Scheme), m.Capture)
	if !ok {
		m.AmountFormat = cmp.Or(m.AmountFormat, AmountMinor)
		return m
	}
	if m.Amount == "" || m.Amount == d.Amount {
		// The preset's format goes with the preset's field only.
		m.Amount, m.AmountFormat = d.Amount, cmp.Or(m.AmountFormat, d.AmountFormat)
	}
	m.AmountFormat = cmp.Or(m.AmountFormat, AmountMinor)
	m.Currency = cmp.Or(m.Currency, d.Currency)
	m.EffectKey = cmp.Or(m.EffectKey, d.EffectKey)
	if len(m.ActWhen) == 0 {
		m.ActWhen = d.ActWhen
	}
	return m
}

// adyenSigned are the members of an Adyen item its HMAC covers. Anything
// else, additionalData and the batch's live flag among them, can be
// changed by anyone holding one genuine item.
var adyenSigned = []string{"/item/pspReference", "/item/originalReference", "/item/merchantAccountCode", "/item/merchantReference",
	"/item/amount/value", "/item/amount/currency", "/item/eventCode", "/item/success"}

// envelopeMembers are the members of a preset's queued envelope that the
// receiver derives from what the provider signs.
var envelopeMembers = []string{"/provider", "/id", "/type"}

// fetchedSchemes are the presets whose object the worker fetches from
// the provider's API before acting ([Fetcher]): PayPal signs only a CRC32
// of the body, Mollie's ping is not signed, and GoCardless's events carry
// no amount. The webhook's envelope (/id, /type) and the status the
// worker wrote beside the object (/status) are not the object.
var fetchedSchemes = []webhook.Scheme{webhook.SchemePayPal, webhook.SchemeMollie, webhook.SchemeGoCardless}

// signedPointer reports whether field's pointer ptr reads only what
// scheme's provider signs (or, for a fetched provider, only the object
// the worker fetched from its API). A fetched provider's event_id, which
// names the event and never keys a preset's effect, may read the
// envelope.
func signedPointer(scheme webhook.Scheme, field, ptr string) bool {
	switch {
	case scheme == "" || scheme == webhook.SchemeStandard || scheme == webhook.SchemeStripe:
		return true // the whole body is signed
	case scheme == webhook.SchemeAdyen:
		return slices.Contains(adyenSigned, ptr) || slices.Contains(envelopeMembers, ptr)
	case scheme == webhook.SchemeGitHub || scheme == webhook.SchemeShopify:
		// The event type is an unsigned header; the body is signed.
		return ptr == "/provider" || ptr == "/id" || underItem(ptr)
	case slices.Contains(fetchedSchemes, scheme):
		return underItem(ptr) || field == "event_id" && slices.Contains(envelopeMembers, ptr)
	case scheme == webhook.SchemeBraintree:
		return false
	}
	return slices.Contains(envelopeMembers, ptr) || underItem(ptr)
}

func underItem(ptr string) bool { return ptr == "/item" || strings.HasPrefix(ptr, "/item/") }

// unsignedError says why ptr may not feed field under scheme, and what
// may.
func unsignedError(scheme webhook.Scheme, field, ptr string) error {
	switch {
	case slices.Contains(fetchedSchemes, scheme):
		return fmt.Errorf("%s: %s is not the fetched object: the worker fetches %s's object from its API and acts only on that, since %s; "+
			"read it under /item (its ID /item/id, its status /item/status)", field, ptr, scheme, fetchedWhy[scheme])
	case scheme == webhook.SchemeAdyen:
		return fmt.Errorf("%s: %s is not signed by adyen: only %s and /provider, /id, /type are", field, ptr, strings.Join(adyenSigned, ", "))
	case scheme == webhook.SchemeGitHub || scheme == webhook.SchemeShopify:
		return fmt.Errorf("%s: %s is not signed by %s: its event-type header is not signed: read the body under /item", field, ptr, scheme)
	}
	return fmt.Errorf("%s: %s is not signed by %s: read the event under /item", field, ptr, scheme)
}

// fetchedWhy says why each fetched provider's webhook is not acted on.
var fetchedWhy = map[webhook.Scheme]string{
	webhook.SchemePayPal:     "PayPal signs only a CRC32 of the body, which a forged body can match",
	webhook.SchemeMollie:     "Mollie's ping is not signed",
	webhook.SchemeGoCardless: "GoCardless's events carry no amount",
}

// noDefaultNote explains a missing rule.
func noDefaultNote(scheme webhook.Scheme) string {
	switch scheme {
	case webhook.SchemeGitHub, webhook.SchemeShopify:
		return ": " + string(scheme) + " signs no event type (its header is unsigned), so it has no default; write one on signed body members under /item"
	case "", webhook.SchemeStandard, webhook.SchemeStripe:
		return ": say which event types are payments, such as {\"/type\": [\"payment.requested\"]}"
	}
	return ""
}
