package webhook

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

// TestWindowFarFuture signs requests with timestamps far ahead of now, where
// now.Sub(ts) saturates at the smallest Duration and its negation overflows.
// Every one must be refused as stale, for both schemes.
func TestWindowFarFuture(t *testing.T) {
	now := time.Unix(1_800_000_000, 0).UTC()
	for _, tc := range []struct {
		name string
		ts   int64
	}{
		{name: "just outside the window", ts: now.Unix() + int64(DefaultTolerance/time.Second) + 1},
		{name: "a century ahead", ts: now.Unix() + 100*365*24*3600},
		{name: "eleven nines (year 5138)", ts: 99999999999},
		{name: "twelve nines (year 33658)", ts: 999999999999},
		{name: "epoch", ts: 0},
	} {
		for _, scheme := range []Scheme{SchemeStandard, SchemeStripe} {
			t.Run(tc.name+"/"+string(scheme), func(t *testing.T) {
				// given a correctly signed request at ts
				body := []byte(`{"id":"evt_future","type":"t"}`)
				secret := standardNew
				if scheme == SchemeStripe {
					secret = stripeNew
				}
				h, err := SignHeaders(scheme, []string{secret}, "msg_future", time.Unix(tc.ts, 0), body)
				if err != nil {
					t.Fatal(err)
				}
				if got := h.Get(HeaderWebhookTimestamp); scheme == SchemeStandard && got != strconv.FormatInt(tc.ts, 10) {
					t.Fatalf("signed timestamp %q", got)
				}
				v, err := NewVerifier(VerifierConfig{Scheme: scheme, Now: clockAt(now)})
				if err != nil {
					t.Fatal(err)
				}
				// when it is verified
				got, err := v.Verify(HeaderMap{
					HeaderWebhookID: h.Get(HeaderWebhookID), HeaderWebhookTimestamp: h.Get(HeaderWebhookTimestamp),
					HeaderWebhookSignature: h.Get(HeaderWebhookSignature), HeaderStripeSignature: h.Get(HeaderStripeSignature),
				}, body, []string{secret})
				// then it is refused: stale, or malformed for a timestamp too long to be a time
				if err == nil {
					t.Fatalf("verified %+v signed at %d, %s from now", got, tc.ts, time.Unix(tc.ts, 0).Sub(now))
				}
				if !errors.Is(err, ErrStaleTimestamp) && !errors.Is(err, ErrMalformedHeader) {
					t.Fatalf("err = %v, want ErrStaleTimestamp or ErrMalformedHeader", err)
				}
			})
		}
	}
}

func TestCheckWindowExtremes(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name string
		ts   time.Time
		ok   bool
	}{
		{name: "now", ts: now, ok: true},
		{name: "edge behind", ts: now.Add(-DefaultTolerance), ok: true},
		{name: "edge ahead", ts: now.Add(DefaultTolerance), ok: true},
		{name: "past edge behind", ts: now.Add(-DefaultTolerance - time.Second)},
		{name: "past edge ahead", ts: now.Add(DefaultTolerance + time.Second)},
		{name: "far future", ts: time.Unix(1<<40, 0)},
		{name: "far past", ts: time.Unix(-(1 << 40), 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkWindow(tc.ts, now, DefaultTolerance)
			if (err == nil) != tc.ok {
				t.Fatalf("checkWindow(%v) = %v, want ok=%v", tc.ts, err, tc.ok)
			}
		})
	}
}
