package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// stripeHeader is a parsed Stripe-Signature header. timestamp is kept as sent,
// because the signed content holds that text.
type stripeHeader struct {
	timestamp string
	v1        []string
}

// parseStripeHeader parses "t=<unix>,v1=<hex>[,v1=<hex>...]". Keys other than
// t and v1 (such as v0) are ignored; t must appear exactly once.
func parseStripeHeader(header string) (stripeHeader, error) {
	var out stripeHeader
	seenT := false
	for i, item := range strings.Split(header, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || key == "" {
			return stripeHeader{}, fmt.Errorf("%s header item %d: want key=value: %w", HeaderStripeSignature, i, ErrMalformedHeader)
		}
		switch key {
		case "t":
			if seenT {
				return stripeHeader{}, fmt.Errorf("%s header: repeated t: %w", HeaderStripeSignature, ErrMalformedHeader)
			}
			if _, err := parseUnix(value); err != nil {
				return stripeHeader{}, fmt.Errorf("%s header t: %w", HeaderStripeSignature, err)
			}
			seenT = true
			out.timestamp = value
		case "v1":
			if value == "" {
				return stripeHeader{}, fmt.Errorf("%s header item %d: empty v1: %w", HeaderStripeSignature, i, ErrMalformedHeader)
			}
			out.v1 = append(out.v1, value)
		}
	}
	if !seenT {
		return stripeHeader{}, fmt.Errorf("%s header: no t: %w", HeaderStripeSignature, ErrMalformedHeader)
	}
	if len(out.v1) == 0 {
		return stripeHeader{}, fmt.Errorf("%s header: no v1 signature: %w", HeaderStripeSignature, ErrMissingSignature)
	}
	return out, nil
}

// format is the inverse of parseStripeHeader, less the ignored keys.
func (s stripeHeader) format() string {
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(s.timestamp)
	for _, v := range s.v1 {
		b.WriteString(",v1=")
		b.WriteString(v)
	}
	return b.String()
}

// stripeMAC computes the v1 signature bytes of the timestamp text and body.
func stripeMAC(key []byte, timestamp string, body []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return mac.Sum(nil)
}

// SignStripe returns a Stripe-Signature header value "t=<unix>,v1=<hex>" for
// body at ts, keyed by the secret string as it is.
func SignStripe(secret string, ts time.Time, body []byte) string {
	t := strconv.FormatInt(ts.Unix(), 10)
	return "t=" + t + ",v1=" + hexMAC(secret, t, body)
}

// verifyStripe checks the Stripe-Signature header. The event ID is not in the
// header; the caller takes it from the body once verified.
func verifyStripe(h Headers, body []byte, keys [][]byte, now time.Time, tolerance time.Duration) (Verified, error) {
	header := h.Get(HeaderStripeSignature)
	if strings.TrimSpace(header) == "" {
		return Verified{}, fmt.Errorf("%s header: %w", HeaderStripeSignature, ErrMissingSignature)
	}
	parsed, err := parseStripeHeader(header)
	if err != nil {
		return Verified{}, err
	}
	ts, err := parseUnix(parsed.timestamp)
	if err != nil {
		return Verified{}, fmt.Errorf("%s header t: %w", HeaderStripeSignature, err)
	}
	var candidates [][]byte
	for _, v := range parsed.v1 {
		raw, err := hex.DecodeString(v)
		if err != nil || len(raw) != sha256.Size {
			continue // cannot match; another entry still may
		}
		candidates = append(candidates, raw)
	}
	if len(candidates) == 0 {
		return Verified{}, ErrBadSignature
	}
	if !anyMatch(keys, candidates, func(key []byte) []byte { return stripeMAC(key, parsed.timestamp, body) }) {
		return Verified{}, ErrBadSignature
	}
	if err := checkWindow(ts, now, tolerance); err != nil {
		return Verified{}, err
	}
	return Verified{Timestamp: ts}, nil
}

// hexMAC is the hex v1 signature of timestamp text and body under secret.
func hexMAC(secret, timestamp string, body []byte) string {
	return hex.EncodeToString(stripeMAC([]byte(secret), timestamp, body))
}
