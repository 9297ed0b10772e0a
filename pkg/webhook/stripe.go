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

// eachStripeItem calls fn with the key and value of each comma-separated
// "key=value" item of a Stripe-Signature header, until fn returns false. It
// allocates nothing, and reports an item that is not "key=value".
func eachStripeItem(header string, fn func(key, value string) bool) error {
	rest := header
	for i := 0; ; i++ {
		item, more, found := strings.Cut(rest, ",")
		key, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || key == "" {
			return fmt.Errorf("%s header item %d: want key=value: %w", HeaderStripeSignature, i, ErrMalformedHeader)
		}
		if !fn(key, value) || !found {
			return nil
		}
		rest = more
	}
}

// checkStripeHeader checks a Stripe-Signature header's form,
// "t=<unix>,v1=<hex>[,v1=<hex>...]", and returns its timestamp text and the
// number of v1 signatures. Keys other than t and v1 (such as v0) are
// ignored; t must appear exactly once. It allocates nothing unless the
// header is malformed.
func checkStripeHeader(header string) (timestamp string, v1 int, err error) {
	seenT := false
	var bad error
	err = eachStripeItem(header, func(key, value string) bool {
		switch key {
		case "t":
			if seenT {
				bad = fmt.Errorf("%s header: repeated t: %w", HeaderStripeSignature, ErrMalformedHeader)
				return false
			}
			if _, err := parseUnix(value); err != nil {
				bad = fmt.Errorf("%s header t: %w", HeaderStripeSignature, err)
				return false
			}
			seenT, timestamp = true, value
		case "v1":
			if value == "" {
				bad = fmt.Errorf("%s header: empty v1: %w", HeaderStripeSignature, ErrMalformedHeader)
				return false
			}
			v1++
		}
		return true
	})
	switch {
	case err != nil:
		return "", 0, err
	case bad != nil:
		return "", 0, bad
	case !seenT:
		return "", 0, fmt.Errorf("%s header: no t: %w", HeaderStripeSignature, ErrMalformedHeader)
	case v1 == 0:
		return "", 0, fmt.Errorf("%s header: no v1 signature: %w", HeaderStripeSignature, ErrMissingSignature)
	}
	return timestamp, v1, nil
}

// parseStripeHeader parses a Stripe-Signature header as [checkStripeHeader]
// reads it, keeping every v1 value.
func parseStripeHeader(header string) (stripeHeader, error) {
	ts, _, err := checkStripeHeader(header)
	if err != nil {
		return stripeHeader{}, err
	}
	out := stripeHeader{timestamp: ts}
	eachStripeItem(header, func(key, value string) bool {
		if key == "v1" {
			out.v1 = append(out.v1, value)
		}
		return true
	})
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

// verifyStripe checks the Stripe-Signature header against keys, the active
// secrets newest first. The event ID is not in the header; the caller takes
// it from the body once verified.
func verifyStripe(h Headers, body []byte, keys []*macKey, now time.Time, tolerance time.Duration) (Verified, error) {
	header := h.Get(HeaderStripeSignature)
	if strings.TrimSpace(header) == "" {
		return Verified{}, fmt.Errorf("%s header: %w", HeaderStripeSignature, ErrMissingSignature)
	}
	tsText, _, err := checkStripeHeader(header)
	if err != nil {
		return Verified{}, err
	}
	ts, err := parseUnix(tsText)
	if err != nil {
		return Verified{}, fmt.Errorf("%s header t: %w", HeaderStripeSignature, err)
	}
	candidates := 0
	eachStripeItem(header, func(key, value string) bool {
		if key == "v1" && len(value) == 2*sha256.Size {
			var raw [sha256.Size]byte
			if _, err := hex.Decode(raw[:], stringBytes(value)); err == nil {
				candidates++
			}
		}
		return true
	})
	if candidates == 0 {
		return Verified{}, ErrBadSignature
	}
	matched := false
	for _, k := range keys {
		st := k.get()
		want := st.stripe(tsText, body)
		eachStripeItem(header, func(key, value string) bool {
			if key != "v1" || len(value) != 2*sha256.Size {
				return true
			}
			var raw [sha256.Size]byte
			if _, err := hex.Decode(raw[:], stringBytes(value)); err == nil && hmac.Equal(want, raw[:]) {
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
	return Verified{Timestamp: ts}, nil
}

// hexMAC is the hex v1 signature of timestamp text and body under secret.
func hexMAC(secret, timestamp string, body []byte) string {
	return hex.EncodeToString(stripeMAC([]byte(secret), timestamp, body))
}
