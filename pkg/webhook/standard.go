package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// standardSecretPrefix marks a Standard Webhooks secret; the rest is base64.
const standardSecretPrefix = "whsec_"

// standardVersion is the only signature version checked: HMAC-SHA256.
const standardVersion = "v1"

// standardSignature is one "version,value" entry of a webhook-signature header.
type standardSignature struct {
	version string
	value   string
}

// parseStandardSignatureHeader splits a webhook-signature header into its
// space-separated "version,value" entries. It does not decode the values:
// versions this package does not know may encode them differently.
func parseStandardSignatureHeader(header string) ([]standardSignature, error) {
	fields := strings.Fields(header)
	if len(fields) == 0 {
		return nil, fmt.Errorf("%s header: %w", HeaderWebhookSignature, ErrMissingSignature)
	}
	sigs := make([]standardSignature, 0, len(fields))
	for i, f := range fields {
		version, value, ok := strings.Cut(f, ",")
		if !ok || version == "" || value == "" {
			return nil, fmt.Errorf("%s header entry %d: want version,signature: %w", HeaderWebhookSignature, i, ErrMalformedHeader)
		}
		sigs = append(sigs, standardSignature{version: version, value: value})
	}
	return sigs, nil
}

// formatStandardSignatureHeader is the inverse of parseStandardSignatureHeader.
func formatStandardSignatureHeader(sigs []standardSignature) string {
	var b strings.Builder
	for i, s := range sigs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s.version)
		b.WriteByte(',')
		b.WriteString(s.value)
	}
	return b.String()
}

// decodeStandardSecret returns the HMAC key of a Standard Webhooks secret: the
// base64 text after the optional "whsec_" prefix.
func decodeStandardSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, standardSecretPrefix))
	if err != nil || len(key) == 0 {
		// The decoder's error is dropped: it would point into the secret.
		return nil, fmt.Errorf("want base64 after %q: %w", standardSecretPrefix, ErrBadSecret)
	}
	return key, nil
}

// standardMAC computes the v1 signature bytes of id, timestamp text and body.
func standardMAC(key []byte, id, timestamp string, body []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return mac.Sum(nil)
}

// SignStandard returns the Standard Webhooks signature "v1,<base64>" of body
// for the message id and timestamp, keyed by secret ("whsec_" and base64; the
// prefix is optional). Send id and ts as the webhook-id and webhook-timestamp
// headers and the result, or several joined by spaces, as webhook-signature.
func SignStandard(secret, id string, ts time.Time, body []byte) (string, error) {
	if err := checkHeaderEventID(id); err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	key, err := decodeStandardSecret(secret)
	if err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	sum := standardMAC(key, id, strconv.FormatInt(ts.Unix(), 10), body)
	return standardVersion + "," + base64.StdEncoding.EncodeToString(sum), nil
}

// verifyStandard checks the Standard Webhooks headers and signature. keys are
// the decoded secrets.
func verifyStandard(h Headers, body []byte, keys [][]byte, now time.Time, tolerance time.Duration) (Verified, error) {
	sigHeader := h.Get(HeaderWebhookSignature)
	if strings.TrimSpace(sigHeader) == "" {
		return Verified{}, fmt.Errorf("%s header: %w", HeaderWebhookSignature, ErrMissingSignature)
	}
	id := h.Get(HeaderWebhookID)
	if id == "" {
		return Verified{}, fmt.Errorf("%s header: %w", HeaderWebhookID, ErrMissingSignature)
	}
	tsText := h.Get(HeaderWebhookTimestamp)
	if tsText == "" {
		return Verified{}, fmt.Errorf("%s header: %w", HeaderWebhookTimestamp, ErrMissingSignature)
	}
	if err := checkHeaderEventID(id); err != nil {
		return Verified{}, err
	}
	ts, err := parseUnix(tsText)
	if err != nil {
		return Verified{}, fmt.Errorf("%s header: %w", HeaderWebhookTimestamp, err)
	}
	sigs, err := parseStandardSignatureHeader(sigHeader)
	if err != nil {
		return Verified{}, err
	}

	var candidates [][]byte
	sawV1 := false
	for _, s := range sigs {
		if s.version != standardVersion {
			continue // other versions, such as v1a, are not ours to check
		}
		sawV1 = true
		raw, err := base64.StdEncoding.DecodeString(s.value)
		if err != nil || len(raw) != sha256.Size {
			continue // cannot match; another entry still may
		}
		candidates = append(candidates, raw)
	}
	if !sawV1 {
		return Verified{}, fmt.Errorf("%s header: no %s signature: %w", HeaderWebhookSignature, standardVersion, ErrMissingSignature)
	}
	if len(candidates) == 0 {
		return Verified{}, ErrBadSignature
	}
	if !anyMatch(keys, candidates, func(key []byte) []byte { return standardMAC(key, id, tsText, body) }) {
		return Verified{}, ErrBadSignature
	}
	if err := checkWindow(ts, now, tolerance); err != nil {
		return Verified{}, err
	}
	return Verified{EventID: id, Timestamp: ts}, nil
}

// anyMatch reports whether the MAC of any key equals any candidate. Every
// comparison is constant-time.
func anyMatch(keys, candidates [][]byte, mac func(key []byte) []byte) bool {
	for _, key := range keys {
		want := mac(key)
		for _, c := range candidates {
			if hmac.Equal(want, c) {
				return true
			}
		}
	}
	return false
}

// maxUnixDigits bounds a timestamp's length: ten digits reach the year 2286,
// and nothing longer can lie inside any replay window.
const maxUnixDigits = 10

// parseUnix parses a decimal count of Unix seconds: 1 to [maxUnixDigits]
// digits, no sign.
func parseUnix(text string) (time.Time, error) {
	if text == "" || len(text) > maxUnixDigits {
		return time.Time{}, fmt.Errorf("want unix seconds: %w", ErrMalformedHeader)
	}
	for i := 0; i < len(text); i++ {
		if text[i] < '0' || text[i] > '9' {
			return time.Time{}, fmt.Errorf("want unix seconds: %w", ErrMalformedHeader)
		}
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("want unix seconds: %w", ErrMalformedHeader)
	}
	return time.Unix(n, 0).UTC(), nil
}

// checkWindow reports ErrStaleTimestamp when ts is more than tolerance away
// from now, either way. It compares instants, not their difference: a
// Duration saturates about 292 years out, and negating the saturated minimum
// overflows back to a negative value that would pass.
func checkWindow(ts, now time.Time, tolerance time.Duration) error {
	if ts.Before(now.Add(-tolerance)) {
		return fmt.Errorf("signed %s ago, tolerance %s: %w", now.Sub(ts).Truncate(time.Second), tolerance, ErrStaleTimestamp)
	}
	if ts.After(now.Add(tolerance)) {
		return fmt.Errorf("signed %s ahead, tolerance %s: %w", ts.Sub(now).Truncate(time.Second), tolerance, ErrStaleTimestamp)
	}
	return nil
}
