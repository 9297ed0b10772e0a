package webhook

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Provider presets: each is a [Scheme] that knows what one provider signs,
// where its event identity lives, how it batches, and what acknowledgement
// it expects. See docs/providers.md for the table.
const (
	SchemeAdyen      Scheme = "adyen"
	SchemePayPal     Scheme = "paypal"
	SchemeSquare     Scheme = "square"
	SchemeCheckout   Scheme = "checkout"
	SchemeBraintree  Scheme = "braintree"
	SchemeGoCardless Scheme = "gocardless"
	SchemePaddle     Scheme = "paddle"
	SchemeRazorpay   Scheme = "razorpay"
	SchemeMollie     Scheme = "mollie"
	SchemeGitHub     Scheme = "github"
	SchemeShopify    Scheme = "shopify"
)

// preset is what the verifier needs to know about one provider.
type preset struct {
	// decode turns one configured secret into its MAC key; nil for a
	// preset that needs no secret.
	decode func(secret string) (*macKey, error)
	// needs names the source fields the preset cannot work without.
	needs []string
	// ack is the body of the answer once every item is durable; empty
	// for the receiver's own JSON.
	ack Ack
}

// Fields a preset may need, named as in HOOKLINE_SOURCES.
const (
	FieldSecret    = "secret_env or secret_id"
	FieldSignedURL = "signed_url"
	FieldWebhookID = "webhook_id"
	FieldCertHosts = "cert_hosts"
)

// presets is the registry of named provider presets. The two original
// schemes are not in it: [Verifier.Verify] handles them as before.
var presets = map[Scheme]preset{
	SchemeGitHub:     githubPreset,
	SchemeShopify:    shopifyPreset,
	SchemePaddle:     paddlePreset,
	SchemeRazorpay:   razorpayPreset,
	SchemeSquare:     squarePreset,
	SchemeCheckout:   checkoutPreset,
	SchemeGoCardless: gocardlessPreset,
	SchemeAdyen:      adyenPreset,
	SchemeBraintree:  braintreePreset,
	SchemeMollie:     molliePreset,
	SchemePayPal:     paypalPreset,
}

// Schemes returns every supported scheme, sorted.
func Schemes() []Scheme {
	out := []Scheme{SchemeStandard, SchemeStripe}
	for s := range presets {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// schemeList is the supported schemes for a message.
func schemeList() string {
	names := make([]string, 0, len(presets)+2)
	for _, s := range Schemes() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

// NeedsSecret reports whether the scheme verifies with a shared secret.
// PayPal (certificates) and Mollie (unsigned) do not.
func (s Scheme) NeedsSecret() bool {
	p, ok := presets[s]
	return !ok || slices.Contains(p.needs, FieldSecret)
}

// Item is one event of a verified delivery.
type Item struct {
	// EventID is the provider's identity for the event, the intake key.
	EventID string
	// Type is the provider's name for the kind of event, or "".
	Type string
	// Timestamp is when the provider says the event happened or was
	// signed; zero when it does not say.
	Timestamp time.Time
	// TimeSigned means Timestamp was read from the signed bytes and
	// held to no replay window (Checkout.com, Square, GoCardless,
	// Braintree, Razorpay): a replay of the same bytes carries it, so
	// it bounds how old a replayed delivery can be.
	TimeSigned bool
	// DigestID means EventID is "sha256:" and the hex SHA-256 of the
	// signed body, because the provider names the event only in a
	// header no signature covers (GitHub, Shopify, Razorpay). The same
	// ID is then the same signed bytes, whatever the unsigned parts of
	// Payload (that header's ID, an event type from a header) say.
	DigestID bool
	// LegacyEventID is that unsigned header's ID, the identity builds
	// before the digest stored the event under; "" when there is none
	// or it is not a usable ID. For Braintree it is EventID itself,
	// under which builds before stored another form of the same
	// message. It decides nothing but the look-up of such a record
	// (see [Item.LegacyPayload]).
	LegacyEventID string
	// legacy rebuilds the payload of the legacy identity.
	legacy legacyEnvelope
	// Payload is what goes on the queue: the raw body for the Standard
	// Webhooks and Stripe schemes, a JSON [ItemEnvelope] for a preset.
	Payload []byte
	// Untrusted means nothing vouches for the item (Mollie; PayPal, whose
	// signature covers only a CRC32 of the body): the worker must fetch
	// the object from the provider before acting on it.
	Untrusted bool
}

// ItemError is one batch item refused on its own.
type ItemError struct {
	// Index is the item's position in the batch.
	Index int
	// Err says why; it wraps the package's sentinels.
	Err error
}

// Ack is the answer a provider expects once every item is durable.
type Ack struct {
	Status      int
	ContentType string
	Body        string
}

// Delivery is a verified request: its items, the batch items refused on
// their own, and the acknowledgement the provider expects.
type Delivery struct {
	Items   []Item
	Refused []ItemError
	// Ack is zero for the receiver's own JSON answer.
	Ack Ack
}

// VerifyDelivery verifies one request of any scheme and splits it into
// items. body must be the raw bytes as received. For the Standard
// Webhooks and Stripe schemes the delivery is the one event [Verifier.Verify]
// returns, with the body as its payload. For a batch preset an item that
// fails alone is in Refused; the error is non-nil only when the request
// as a whole is refused or no item survives.
func (v *Verifier) VerifyDelivery(h Headers, body []byte, secrets []string) (Delivery, error) {
	p, ok := presets[v.scheme]
	if !ok {
		got, err := v.Verify(h, body, secrets)
		if err != nil {
			return Delivery{}, err
		}
		ts := got.Envelope.CreatedAt
		if ts.IsZero() {
			ts = got.Timestamp
		}
		return Delivery{Items: []Item{{EventID: got.EventID, Type: got.Envelope.Type, Timestamp: ts, Payload: body}}}, nil
	}
	if int64(len(body)) > v.maxBody {
		return Delivery{}, fmt.Errorf("%d bytes, limit %d: %w", len(body), v.maxBody, ErrBodyTooLarge)
	}
	var buf [4]*macKey
	var keys []*macKey
	if p.decode != nil {
		var err error
		if keys, err = v.presetKeys(p, secrets, buf[:0]); err != nil {
			return Delivery{}, err
		}
	}
	d, err := v.verifyPreset(h, body, keys, v.now())
	if err != nil {
		return Delivery{}, err
	}
	if len(d.Items) == 0 {
		if len(d.Refused) > 0 {
			return Delivery{}, d.Refused[0].Err
		}
		return Delivery{}, fmt.Errorf("no events in the body: %w", ErrMalformedBody)
	}
	d.Ack = p.ack
	return d, nil
}

// verifyPreset checks a request of the verifier's preset and splits it
// into items. It calls each preset directly, not through a function
// value, so that the keys and headers stay on the stack.
func (v *Verifier) verifyPreset(h Headers, body []byte, keys []*macKey, now time.Time) (Delivery, error) {
	switch v.scheme {
	case SchemeGitHub:
		return verifyGitHub(h, body, keys)
	case SchemeShopify:
		return verifyShopify(h, body, keys)
	case SchemeRazorpay:
		return verifyRazorpay(h, body, keys)
	case SchemeCheckout:
		return verifyCheckout(h, body, keys)
	case SchemeSquare:
		return verifySquare(h, body, keys, v.opts.SignedURL)
	case SchemePaddle:
		return verifyPaddle(h, body, keys, now, v.tolerance)
	case SchemeGoCardless:
		return verifyGoCardless(h, body, keys)
	case SchemeAdyen:
		return verifyAdyen(body, keys)
	case SchemeBraintree:
		return verifyBraintree(body, keys)
	case SchemeMollie:
		return verifyMollie(body, now)
	case SchemePayPal:
		return v.verifyPayPal(h, body, now)
	}
	return Delivery{}, fmt.Errorf("scheme %q: %w", v.scheme, ErrBadConfig)
}

// presetKeys appends the cached keys of secrets to dst.
func (v *Verifier) presetKeys(p preset, secrets []string, dst []*macKey) ([]*macKey, error) {
	if len(secrets) == 0 {
		return nil, ErrNoSecrets
	}
	for i, s := range secrets {
		if s == "" {
			return nil, fmt.Errorf("secret %d: empty: %w", i, ErrBadSecret)
		}
		k, err := v.keys.lookupKey(s, p.decode)
		if err != nil {
			return nil, fmt.Errorf("secret %d: %w", i, err)
		}
		dst = append(dst, k)
	}
	return dst, nil
}

// checkPresetSecrets reports a configured secret the preset cannot use.
func checkPresetSecrets(s Scheme, secrets []string) error {
	p, ok := presets[s]
	if !ok || p.decode == nil {
		return nil
	}
	if len(secrets) == 0 {
		return ErrNoSecrets
	}
	for i, sec := range secrets {
		if sec == "" {
			return fmt.Errorf("secret %d: empty: %w", i, ErrBadSecret)
		}
		if _, err := p.decode(sec); err != nil {
			return fmt.Errorf("secret %d: %w", i, err)
		}
	}
	return nil
}

// PresetOptions are the per-source settings some presets need beyond a
// secret.
type PresetOptions struct {
	// SignedURL is the notification URL the provider signs (Square): the
	// URL as configured at the provider, which a proxy or a custom domain
	// may not pass on.
	SignedURL string
	// WebhookID is the webhook's ID at the provider (PayPal), part of the
	// signed message.
	WebhookID string
	// CertHosts are the hosts a signing certificate may be fetched from
	// (PayPal), host or host:port each.
	CertHosts []string
}

// missingFields names the fields scheme needs that opts and hasSecret
// leave unset.
func missingFields(s Scheme, opts PresetOptions, hasSecret bool) []string {
	p, ok := presets[s]
	if !ok {
		return nil
	}
	var missing []string
	for _, f := range p.needs {
		switch {
		case f == FieldSecret && !hasSecret,
			f == FieldSignedURL && opts.SignedURL == "",
			f == FieldWebhookID && opts.WebhookID == "",
			f == FieldCertHosts && len(opts.CertHosts) == 0:
			missing = append(missing, f)
		}
	}
	return missing
}

// checkOptions reports the preset options that are set but malformed.
func checkOptions(opts PresetOptions) []string {
	var problems []string
	if u := opts.SignedURL; u != "" && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		problems = append(problems, fmt.Sprintf("%s %q: want an http(s) URL as configured at the provider", FieldSignedURL, u))
	}
	if id := opts.WebhookID; id != "" && checkEventID(id) != nil {
		problems = append(problems, FieldWebhookID+": want 1 to 255 printable ASCII bytes")
	}
	for i, h := range opts.CertHosts {
		if h == "" || strings.ContainsAny(h, "/ *?#@") {
			problems = append(problems, fmt.Sprintf("%s[%d] %q: want a host name, or host:port", FieldCertHosts, i, h))
		}
	}
	return problems
}
