package webhook

import (
	"errors"
	"strconv"
)

// Errors returned by this package. They are wrapped with context, so test them
// with [errors.Is]. None of them carries a secret or a signature value.
var (
	// ErrMissingSignature means a header needed for verification is absent, or
	// the signature header holds no signature of a version this package checks.
	ErrMissingSignature = errors.New("webhook: missing signature")
	// ErrBadSignature means no signature matched any active secret.
	ErrBadSignature = errors.New("webhook: bad signature")
	// ErrStaleTimestamp means the signed timestamp lies outside the tolerance
	// window, in the past or in the future.
	ErrStaleTimestamp = errors.New("webhook: timestamp outside tolerance")
	// ErrMalformedHeader means a signature, timestamp or id header could not be
	// parsed.
	ErrMalformedHeader = errors.New("webhook: malformed header")
	// ErrMalformedBody means the body is not a JSON object, or a field has the
	// wrong type.
	ErrMalformedBody = errors.New("webhook: malformed body")
	// ErrMissingEventID means the event carries no usable event ID.
	ErrMissingEventID = errors.New("webhook: missing event id")
	// ErrBodyTooLarge means the body is larger than the configured limit.
	ErrBodyTooLarge = errors.New("webhook: body too large")
	// ErrNoSecrets means no secret was configured to verify with.
	ErrNoSecrets = errors.New("webhook: no secrets")
	// ErrBadSecret means a configured secret cannot be used, for example a
	// Standard Webhooks secret that is not valid base64.
	ErrBadSecret = errors.New("webhook: unusable secret")
	// ErrBadConfig means a verifier or source configuration is invalid.
	ErrBadConfig = errors.New("webhook: bad config")
)

// FieldError names the top-level member a body was refused for: given
// twice, or spelled like an envelope member but not exactly. It wraps
// [ErrMalformedBody]. Field is the member's name as sent, at most
// [maxFieldName] bytes of it.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string {
	return "webhook: malformed body: member " + strconv.Quote(e.Field) + ": " + e.Reason
}

// Unwrap makes errors.Is(err, ErrMalformedBody) hold.
func (e *FieldError) Unwrap() error { return ErrMalformedBody }

// maxFieldName bounds the member name a [FieldError] carries.
const maxFieldName = 64

// Kind groups errors by who is at fault, so that a caller maps them to an HTTP
// status in one place.
type Kind int

// Error kinds, from [KindOf].
const (
	// KindNone is the kind of a nil error.
	KindNone Kind = iota
	// KindUnauthenticated: the request could not be verified (401).
	KindUnauthenticated
	// KindInvalid: the request was verified but its body is unusable (400).
	KindInvalid
	// KindTooLarge: the body exceeds the limit (413).
	KindTooLarge
	// KindConfig: our own configuration is wrong (500).
	KindConfig
	// KindOther: not an error of this package (500).
	KindOther
	// KindUnavailable: something we fetch to verify is unavailable
	// (503), so the provider should retry.
	KindUnavailable
)

// String returns a short lower-case name for the kind.
func (k Kind) String() string {
	switch k {
	case KindNone:
		return "none"
	case KindUnauthenticated:
		return "unauthenticated"
	case KindInvalid:
		return "invalid"
	case KindTooLarge:
		return "too_large"
	case KindConfig:
		return "config"
	case KindUnavailable:
		return "unavailable"
	default:
		return "other"
	}
}

// KindOf reports the kind of err.
func KindOf(err error) Kind {
	switch {
	case err == nil:
		return KindNone
	case errors.Is(err, ErrCertUnavailable):
		return KindUnavailable
	case errors.Is(err, ErrMissingSignature), errors.Is(err, ErrBadSignature),
		errors.Is(err, ErrStaleTimestamp), errors.Is(err, ErrMalformedHeader):
		return KindUnauthenticated
	case errors.Is(err, ErrMalformedBody), errors.Is(err, ErrMissingEventID):
		return KindInvalid
	case errors.Is(err, ErrBodyTooLarge):
		return KindTooLarge
	case errors.Is(err, ErrNoSecrets), errors.Is(err, ErrBadSecret), errors.Is(err, ErrBadConfig):
		return KindConfig
	default:
		return KindOther
	}
}

// Reason returns a short stable label for err, fit for a metric dimension or a
// log field: "bad_signature", "stale_timestamp" and so on, "" for nil and
// "other" for errors not from this package.
func Reason(err error) string {
	reasons := []struct {
		err    error
		reason string
	}{
		{ErrMissingSignature, "missing_signature"},
		{ErrBadSignature, "bad_signature"},
		{ErrStaleTimestamp, "stale_timestamp"},
		{ErrMalformedHeader, "malformed_header"},
		{ErrMalformedBody, "malformed_body"},
		{ErrMissingEventID, "missing_event_id"},
		{ErrBodyTooLarge, "body_too_large"},
		{ErrNoSecrets, "no_secrets"},
		{ErrBadSecret, "bad_secret"},
		{ErrBadConfig, "bad_config"},
		{ErrCertUnavailable, "cert_unavailable"},
	}
	if err == nil {
		return ""
	}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return "other"
}
