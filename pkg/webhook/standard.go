package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
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

// eachStandardSignature calls fn with the version and value of each
// space-separated "version,value" entry of a webhook-signature header, in
// order, until fn returns false. It does not decode the values: versions
// this package does not know may encode them differently. It allocates
// nothing, and reports an entry that is not "version,value".
func eachStandardSignature(header string, fn func(version, value string) bool) error {
	rest := header
	for i := 0; ; i++ {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest == "" {
			if i == 0 {
				return fmt.Errorf("%s header: %w", HeaderWebhookSignature, ErrMissingSignature)
			}
			return nil
		}
		end := strings.IndexFunc(rest, unicode.IsSpace)
		if end < 0 {
			end = len(rest)
		}
		field := rest[:end]
		rest = rest[end:]
		version, value, ok := strings.Cut(field, ",")
		if !ok || version == "" || value == "" {
			return fmt.Errorf("%s header entry %d: want version,signature: %w", HeaderWebhookSignature, i, ErrMalformedHeader)
		}
		if !fn(version, value) {
			return nil
		}
	}
}

// parseStandardSignatureHeader splits a webhook-signature header into its
// entries, as [eachStandardSignature] reads them.
func parseStandardSignatureHeader(header string) ([]standardSignature, error) {
	var sigs []standardSignature
	err := eachStandardSignature(header, func(version, value string) bool {
		sigs = append(sigs, standardSignature{version: version, value: value})
		return true
	})
	if err != nil {
		return nil, err
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

// verifyStandard checks the Standard Webhooks headers (or Svix's names for
// them, [standardHeaders]) and signature against keys, the active secrets
// newest first. The whole header is checked for
// form before any MAC is computed.
func verifyStandard(h Headers, body []byte, keys []*macKey, now time.Time, tolerance time.Duration) (Verified, error) {
	id, tsText, sigHeader, err := standardHeaders(h)
	if err != nil {
		return Verified{}, err
	}
	if strings.TrimSpace(sigHeader) == "" {
		return Verified{}, fmt.Errorf("%s header: %w", HeaderWebhookSignature, ErrMissingSignature)
	}
	if id == "" {
		return Verified{}, fmt.Errorf("%s header: %w", HeaderWebhookID, ErrMissingSignature)
	}
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
	sawV1, candidates := false, 0
	if err := eachStandardSignature(sigHeader, func(version, value string) bool {
		if version == standardVersion {
			sawV1 = true
			if _, ok := decodeStandardMAC(value); ok {
				candidates++
			}
		}
		return true
	}); err != nil {
		return Verified{}, err
	}
	if !sawV1 {
		return Verified{}, fmt.Errorf("%s header: no %s signature: %w", HeaderWebhookSignature, standardVersion, ErrMissingSignature)
	}
	if candidates == 0 {
		return Verified{}, ErrBadSignature
	}
	matched := false
	for _, k := range keys {
		st := k.get()
		want := st.standard(id, tsText, body)
		eachStandardSignature(sigHeader, func(version, value string) bool {
			if version != standardVersion {
				return true
			}
			if raw, ok := decodeStandardMAC(value); ok && hmac.Equal(want, raw[:]) {
				matched = true
			}
			return !matched
		})
		k.put(st)
		if matched {
			break
		}
	}
	if !matched {
		return Verified{}, ErrBadSignature
	}
	if err := checkWindow(ts, now, tolerance); err != nil {
		return Verified{}, err
	}
	return Verified{EventID: id, Timestamp: ts}, nil
}

// standardMACLen is the length of a v1 signature: base64, with padding, of
// a SHA-256 sum.
var standardMACLen = base64.StdEncoding.EncodedLen(sha256.Size)

// decodeStandardMAC decodes a v1 signature value, without allocating; ok is
// false for anything that is not one SHA-256 sum.
func decodeStandardMAC(value string) (sum [sha256.Size]byte, ok bool) {
	if len(value) != standardMACLen {
		return sum, false
	}
	var raw [sha256.Size + 1]byte // DecodedLen of standardMACLen
	n, err := base64.StdEncoding.Decode(raw[:], stringBytes(value))
	if err != nil || n != sha256.Size {
		return sum, false
	}
	copy(sum[:], raw[:n])
	return sum, true
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
