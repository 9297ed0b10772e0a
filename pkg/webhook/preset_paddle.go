package webhook

import (
	"fmt"
	"strings"
	"time"
)

// Paddle Billing signs "ts:body", HMAC-SHA256 keyed by the notification
// destination's secret key, and sends the timestamp and the signature
// together in one header: "Paddle-Signature: ts=<unix>;h1=<hex>". While
// a secret rotates the header may carry several h1 values. The replay
// window applies to ts. The event identity is the body's event_id.
// https://developer.paddle.com/webhooks/signature-verification
var paddlePreset = preset{
	decode: rawKey,
	needs:  []string{FieldSecret},
}

// HeaderPaddleSignature is Paddle's signature header.
const HeaderPaddleSignature = "paddle-signature"

var colon = []byte{':'}

func verifyPaddle(h Headers, body []byte, keys []*macKey, now time.Time, tolerance time.Duration) (Delivery, error) {
	header := strings.TrimSpace(h.Get(HeaderPaddleSignature))
	if header == "" {
		return Delivery{}, fmt.Errorf("%s header: %w", HeaderPaddleSignature, ErrMissingSignature)
	}
	tsText, err := paddleTimestamp(header)
	if err != nil {
		return Delivery{}, err
	}
	ts, err := parseUnix(tsText)
	if err != nil {
		return Delivery{}, fmt.Errorf("%s header ts: %w", HeaderPaddleSignature, err)
	}
	matched := false
	for item := range strings.SplitSeq(header, ";") {
		value, ok := strings.CutPrefix(strings.TrimSpace(item), "h1=")
		if !ok {
			continue
		}
		if sum, ok := decodeSum(value, encHex); ok && matches(keys, sum[:], stringBytes(tsText), colon, body) {
			matched = true
			break
		}
	}
	if !matched {
		return Delivery{}, ErrBadSignature
	}
	if err := checkWindow(ts, now, tolerance); err != nil {
		return Delivery{}, err
	}
	id, typ, occurred, err := bodyFields(body, "event_id", "event_type", "occurred_at")
	if err != nil {
		return Delivery{}, err
	}
	if occurred.IsZero() {
		occurred = ts
	}
	return single(SchemePaddle, id, typ, occurred, body)
}

// paddleTimestamp returns the one ts of a Paddle-Signature header, which
// must also hold an h1.
func paddleTimestamp(header string) (string, error) {
	var ts string
	h1 := false
	for item := range strings.SplitSeq(header, ";") {
		key, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return "", fmt.Errorf("%s header: want key=value items: %w", HeaderPaddleSignature, ErrMalformedHeader)
		}
		switch key {
		case "ts":
			if ts != "" {
				return "", fmt.Errorf("%s header: repeated ts: %w", HeaderPaddleSignature, ErrMalformedHeader)
			}
			ts = value
		case "h1":
			h1 = true
		}
	}
	switch {
	case ts == "":
		return "", fmt.Errorf("%s header: no ts: %w", HeaderPaddleSignature, ErrMalformedHeader)
	case !h1:
		return "", fmt.Errorf("%s header: no h1 signature: %w", HeaderPaddleSignature, ErrMissingSignature)
	}
	return ts, nil
}
