package webhook

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Scheme names a signature scheme.
type Scheme string

// Supported schemes.
const (
	// SchemeStandard is the Standard Webhooks specification.
	SchemeStandard Scheme = "standard-webhooks"
	// SchemeStripe is the Stripe-Signature header scheme.
	SchemeStripe Scheme = "stripe"
)

// Valid reports whether s is a supported scheme: one of the two generic
// schemes or a provider preset.
func (s Scheme) Valid() bool {
	_, preset := presets[s]
	return s == SchemeStandard || s == SchemeStripe || preset
}

// Defaults applied when a configuration leaves a field zero.
const (
	// DefaultTolerance is the replay window either side of now.
	DefaultTolerance = 300 * time.Second
	// DefaultMaxBody is the body size limit in bytes.
	DefaultMaxBody int64 = 256 << 10
	// MaxBodyLimit is the largest body limit accepted: the Lambda request
	// payload limit.
	MaxBodyLimit int64 = 6 << 20
)

// VerifierConfig configures a [Verifier].
type VerifierConfig struct {
	// Scheme is the signature scheme to check. Required.
	Scheme Scheme
	// Tolerance is how far the signed timestamp may lie from now, in either
	// direction. Zero means [DefaultTolerance].
	Tolerance time.Duration
	// MaxBody is the largest accepted body in bytes. Zero means
	// [DefaultMaxBody].
	MaxBody int64
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
	// Options are what some presets need beyond a secret.
	Options PresetOptions
	// Certs fetches and checks signing certificates (PayPal). Nil builds
	// one for the pinned Options.CertHosts with the system roots.
	Certs *CertFetcher
	// OwnReader means the caller reads a verified Standard Webhooks body
	// with a reader of its own (a usage format such as a CloudEvents
	// batch, which is an array): Verify then leaves [Verified.Envelope]
	// zero rather than parse the body as an envelope.
	OwnReader bool
}

// Validate reports every problem with the configuration at once.
func (c VerifierConfig) Validate() error {
	var problems []string
	if !c.Scheme.Valid() {
		problems = append(problems, fmt.Sprintf("scheme %q unknown, want one of %s", c.Scheme, schemeList()))
	}
	for _, f := range missingFields(c.Scheme, c.Options, true) {
		problems = append(problems, fmt.Sprintf("scheme %q needs %s", c.Scheme, f))
	}
	problems = append(problems, checkOptions(c.Options)...)
	if c.Tolerance < 0 {
		problems = append(problems, "tolerance is negative")
	}
	if c.MaxBody < 0 || c.MaxBody > MaxBodyLimit {
		problems = append(problems, fmt.Sprintf("max body %d outside 0..%d", c.MaxBody, MaxBodyLimit))
	}
	if len(problems) > 0 {
		return fmt.Errorf("verifier: %s: %w", strings.Join(problems, "; "), ErrBadConfig)
	}
	return nil
}

// Verified is what a successful verification yields.
type Verified struct {
	// EventID is the provider's identity for the event: the webhook-id header
	// for Standard Webhooks, the body's id for Stripe.
	EventID string
	// Timestamp is the signed delivery time from the headers.
	Timestamp time.Time
	// Envelope is the parsed body. Its ID may be empty for Standard Webhooks,
	// whose identity is the header.
	Envelope Envelope
}

// Verifier checks signed webhooks of one scheme. It is safe for concurrent
// use.
type Verifier struct {
	scheme    Scheme
	tolerance time.Duration
	maxBody   int64
	now       func() time.Time
	keys      keyCache
	opts      PresetOptions
	certs     *CertFetcher
	ownReader bool
}

// NewVerifier returns a Verifier for cfg.
func NewVerifier(cfg VerifierConfig) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	v := &Verifier{scheme: cfg.Scheme, tolerance: cfg.Tolerance, maxBody: cfg.MaxBody, now: cfg.Now, opts: cfg.Options, certs: cfg.Certs,
		ownReader: cfg.OwnReader}
	if v.tolerance == 0 {
		v.tolerance = DefaultTolerance
	}
	if v.maxBody == 0 {
		v.maxBody = DefaultMaxBody
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.scheme == SchemePayPal && v.certs == nil {
		v.certs = NewCertFetcher(CertFetcherConfig{Hosts: cfg.Options.CertHosts})
	}
	return v, nil
}

// Scheme returns the scheme the verifier checks.
func (v *Verifier) Scheme() Scheme { return v.scheme }

// MaxBody returns the body size limit in bytes, so that a caller reading a
// stream can stop early.
func (v *Verifier) MaxBody() int64 { return v.maxBody }

// Verify checks the signature of body against secrets, the active secrets
// newest first, then the timestamp window, and only then parses body as a JSON
// [Envelope]. body must be the raw bytes as received.
func (v *Verifier) Verify(h Headers, body []byte, secrets []string) (Verified, error) {
	if _, ok := presets[v.scheme]; ok {
		return Verified{}, fmt.Errorf("scheme %q: use VerifyDelivery: %w", v.scheme, ErrBadConfig)
	}
	if int64(len(body)) > v.maxBody {
		return Verified{}, fmt.Errorf("%d bytes, limit %d: %w", len(body), v.maxBody, ErrBodyTooLarge)
	}
	var buf [4]*macKey
	keys, err := v.macKeys(secrets, buf[:0])
	if err != nil {
		return Verified{}, err
	}
	now := v.now()
	var got Verified
	switch v.scheme {
	case SchemeStandard:
		got, err = verifyStandard(h, body, keys, now, v.tolerance)
	default:
		got, err = verifyStripe(h, body, keys, now, v.tolerance)
	}
	if err != nil {
		return Verified{}, err
	}
	// Verified: now the body may be parsed.
	if v.ownReader && v.scheme == SchemeStandard {
		return got, nil
	}
	needID := v.scheme == SchemeStripe
	env, err := parseEnvelope(body, needID)
	if err != nil {
		return Verified{}, err
	}
	got.Envelope = env
	if needID {
		got.EventID = env.ID
	}
	return got, nil
}

// macKeys appends the cached keys of secrets to dst.
func (v *Verifier) macKeys(secrets []string, dst []*macKey) ([]*macKey, error) {
	if len(secrets) == 0 {
		return nil, ErrNoSecrets
	}
	decode := stripeSecretKey
	if v.scheme == SchemeStandard {
		decode = decodeStandardSecret
	}
	for i, s := range secrets {
		if s == "" {
			return nil, fmt.Errorf("secret %d: empty: %w", i, ErrBadSecret)
		}
		k, err := v.keys.lookup(s, decode)
		if err != nil {
			return nil, fmt.Errorf("secret %d: %w", i, err)
		}
		dst = append(dst, k)
	}
	return dst, nil
}

// stripeSecretKey is a Stripe secret's HMAC key: the secret as it is.
func stripeSecretKey(s string) ([]byte, error) { return []byte(s), nil }

// secretKeys turns configured secrets into HMAC keys for scheme.
func secretKeys(scheme Scheme, secrets []string) ([][]byte, error) {
	if len(secrets) == 0 {
		return nil, ErrNoSecrets
	}
	keys := make([][]byte, len(secrets))
	for i, s := range secrets {
		if s == "" {
			return nil, fmt.Errorf("secret %d: empty: %w", i, ErrBadSecret)
		}
		if scheme == SchemeStandard {
			key, err := decodeStandardSecret(s)
			if err != nil {
				return nil, fmt.Errorf("secret %d: %w", i, err)
			}
			keys[i] = key
			continue
		}
		keys[i] = []byte(s)
	}
	return keys, nil
}

// SignHeaders returns the headers a provider of scheme would send with body at
// ts, signed with every secret. id is the webhook-id for Standard Webhooks and
// is ignored for Stripe, whose event ID travels in the body.
func SignHeaders(scheme Scheme, secrets []string, id string, ts time.Time, body []byte) (http.Header, error) {
	if len(secrets) == 0 {
		return nil, ErrNoSecrets
	}
	h := http.Header{}
	switch scheme {
	case SchemeStandard:
		sigs := make([]string, 0, len(secrets))
		for i, s := range secrets {
			sig, err := SignStandard(s, id, ts, body)
			if err != nil {
				return nil, fmt.Errorf("secret %d: %w", i, err)
			}
			sigs = append(sigs, sig)
		}
		h.Set(HeaderWebhookID, id)
		h.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts.Unix(), 10))
		h.Set(HeaderWebhookSignature, strings.Join(sigs, " "))
	case SchemeStripe:
		value := SignStripe(secrets[0], ts, body)
		t := strconv.FormatInt(ts.Unix(), 10)
		for _, s := range secrets[1:] {
			value += ",v1=" + hexMAC(s, t, body)
		}
		h.Set(HeaderStripeSignature, value)
	default:
		return nil, fmt.Errorf("scheme %q unknown: %w", scheme, ErrBadConfig)
	}
	return h, nil
}
