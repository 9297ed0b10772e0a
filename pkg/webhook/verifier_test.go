package webhook

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Standard Webhooks published test vector, as used by the reference
// libraries' tests.
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var (
	// signedAt is when test requests are signed; the verifier's clock is
	// signedAt plus a case's offset.
	signedAt = time.Unix(1_800_000_000, 0).UTC()

	standardNew   = "whsec_" + base64.StdEncoding.EncodeToString([]byte("hookline-test-secret-new-0000001"))
	standardOld   = "whsec_" + base64.StdEncoding.EncodeToString([]byte("hookline-test-secret-old-0000002"))
	standardOther = "whsec_" + base64.StdEncoding.EncodeToString([]byte("hookline-test-secret-other-00003"))

	stripeNew   = "whsec_stripe_new_0123456789abcdef"
	stripeOld   = "whsec_stripe_old_0123456789abcdef"
	stripeOther = "whsec_stripe_other_0123456789abc"
)

const standardBody = `{"type":"usage.recorded","timestamp":"2026-11-30T03:17:00Z","data":{"units":12}}`

const stripeBody = `{"id":"evt_123","object":"event","created":1800000000,"type":"payment_intent.succeeded","data":{"object":{"id":"pi_1"}}}`

func clockAt(t time.Time) func() time.Time { return func() time.Time { return t } }

func mustSignStandard(t *testing.T, secret, id string, ts time.Time, body string) string {
	t.Helper()
	sig, err := SignStandard(secret, id, ts, []byte(body))
	if err != nil {
		t.Fatalf("SignStandard: %v", err)
	}
	return sig
}

// flip returns s with the byte at i changed to another byte of the same class
// (digit, letter or other), so that only the value differs.
func flip(s string, i int) string {
	b := []byte(s)
	switch c := b[i]; {
	case c >= '0' && c <= '8', c >= 'a' && c <= 'y', c >= 'A' && c <= 'Y':
		b[i] = c + 1
	case c == '9':
		b[i] = '0'
	case c == 'z':
		b[i] = 'a'
	case c == 'Z':
		b[i] = 'A'
	default:
		b[i] ^= 0x01
	}
	return string(b)
}

func TestStandardSpecVector(t *testing.T) {
	ts := time.Unix(vectorTimestamp, 0)

	t.Run("signing reproduces the published signature", func(t *testing.T) {
		// given the published secret, id, timestamp and payload
		// when they are signed
		got, err := SignStandard(vectorSecret, vectorID, ts, []byte(vectorBody))
		// then the signature is the published one
		if err != nil {
			t.Fatalf("SignStandard: %v", err)
		}
		if got != vectorSignature {
			t.Fatalf("signature = %q, want %q", got, vectorSignature)
		}
	})

	for _, secret := range []string{vectorSecret, strings.TrimPrefix(vectorSecret, "whsec_")} {
		t.Run("verifying the published headers with secret prefix "+strconv.FormatBool(strings.HasPrefix(secret, "whsec_")), func(t *testing.T) {
			// given the published headers, checked at the published time
			v, err := NewVerifier(VerifierConfig{Scheme: SchemeStandard, Now: clockAt(ts)})
			if err != nil {
				t.Fatal(err)
			}
			h := HeaderMap{
				"webhook-id":        vectorID,
				"webhook-timestamp": strconv.Itoa(vectorTimestamp),
				"webhook-signature": vectorSignature,
			}
			// when verified
			got, err := v.Verify(h, []byte(vectorBody), []string{secret})
			// then the header id is the event identity
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got.EventID != vectorID || !got.Timestamp.Equal(ts) {
				t.Fatalf("got %+v, want id %s at %v", got, vectorID, ts)
			}
		})
	}
}

func TestVerifyStandard(t *testing.T) {
	const id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
	valid := mustSignStandard(t, standardNew, id, signedAt, standardBody)
	validOld := mustSignStandard(t, standardOld, id, signedAt, standardBody)
	other := mustSignStandard(t, standardOther, id, signedAt, standardBody)
	ts := strconv.FormatInt(signedAt.Unix(), 10)

	tests := []struct {
		name    string
		headers HeaderMap
		body    string
		secrets []string
		now     time.Duration // clock offset from signedAt
		wantErr error
	}{
		{name: "valid", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": valid}},
		{name: "header names in any case", headers: HeaderMap{"Webhook-Id": id, "WEBHOOK-TIMESTAMP": ts, "webhook-Signature": valid}},
		{name: "tampered body byte", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": valid},
			body: flip(standardBody, 40), wantErr: ErrBadSignature},
		{name: "body with a byte appended", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": valid},
			body: standardBody + " ", wantErr: ErrBadSignature},
		{name: "body truncated", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": valid},
			body: standardBody[:len(standardBody)-1], wantErr: ErrBadSignature},
		{name: "tampered id byte", headers: HeaderMap{"webhook-id": flip(id, 5), "webhook-timestamp": ts, "webhook-signature": valid},
			wantErr: ErrBadSignature},
		{name: "tampered timestamp digit", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": flip(ts, len(ts)-1), "webhook-signature": valid},
			wantErr: ErrBadSignature},
		{name: "tampered signature byte", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": flip(valid, 10)},
			wantErr: ErrBadSignature},
		{name: "signature not base64", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": "v1,@@@@"},
			wantErr: ErrBadSignature},
		{name: "wrong secret", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": other},
			wantErr: ErrBadSignature},
		{name: "second secret valid", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": validOld}},
		{name: "several signatures one valid", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts,
			"webhook-signature": other + " " + flip(valid, 10) + "  " + valid}},
		{name: "unknown versions ignored beside a valid v1", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts,
			"webhook-signature": "v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg== v2,abc " + valid}},
		{name: "unknown version carrying the right value is ignored", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts,
			"webhook-signature": "v2," + strings.TrimPrefix(valid, "v1,")}, wantErr: ErrMissingSignature},
		{name: "stale in the past", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": valid},
			now: DefaultTolerance + time.Second, wantErr: ErrStaleTimestamp},
		{name: "at the past edge of the window", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": valid},
			now: DefaultTolerance},
		{name: "stale in the future", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": valid},
			now: -DefaultTolerance - time.Second, wantErr: ErrStaleTimestamp},
		{name: "at the future edge of the window", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": valid},
			now: -DefaultTolerance},
		{name: "timestamp not a number", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": "yesterday", "webhook-signature": valid},
			wantErr: ErrMalformedHeader},
		{name: "timestamp with a sign", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": "+" + ts, "webhook-signature": valid},
			wantErr: ErrMalformedHeader},
		{name: "timestamp in milliseconds is too far", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts + "000", "webhook-signature": valid},
			wantErr: ErrMalformedHeader},
		{name: "signature entry without a version", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts,
			"webhook-signature": strings.TrimPrefix(valid, "v1,")}, wantErr: ErrMalformedHeader},
		{name: "signature entry with an empty value", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": "v1,"},
			wantErr: ErrMalformedHeader},
		{name: "id with the delimiter", headers: HeaderMap{"webhook-id": "msg.1", "webhook-timestamp": ts, "webhook-signature": valid},
			wantErr: ErrMalformedHeader},
		{name: "id with a space", headers: HeaderMap{"webhook-id": "msg 1", "webhook-timestamp": ts, "webhook-signature": valid},
			wantErr: ErrMalformedHeader},
		{name: "missing id header", headers: HeaderMap{"webhook-timestamp": ts, "webhook-signature": valid}, wantErr: ErrMissingSignature},
		{name: "missing timestamp header", headers: HeaderMap{"webhook-id": id, "webhook-signature": valid}, wantErr: ErrMissingSignature},
		{name: "missing signature header", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts}, wantErr: ErrMissingSignature},
		{name: "blank signature header", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": "   "},
			wantErr: ErrMissingSignature},
		{name: "no secrets", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": valid},
			secrets: []string{}, wantErr: ErrNoSecrets},
		{name: "secret not base64", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": valid},
			secrets: []string{"whsec_not base64!"}, wantErr: ErrBadSecret},
		{name: "body too large", headers: HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": valid},
			body: "{" + strings.Repeat(" ", int(DefaultMaxBody)) + "}", wantErr: ErrBodyTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given a verifier whose clock is offset from the signing time
			v, err := NewVerifier(VerifierConfig{Scheme: SchemeStandard, Now: clockAt(signedAt.Add(tc.now))})
			if err != nil {
				t.Fatal(err)
			}
			body := tc.body
			if body == "" {
				body = standardBody
			}
			secrets := tc.secrets
			if secrets == nil {
				secrets = []string{standardNew, standardOld}
			}
			// when the request is verified
			got, err := v.Verify(tc.headers, []byte(body), secrets)
			// then it passes or fails with the expected sentinel
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify error = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if got.EventID != "" || !got.Timestamp.IsZero() || got.Envelope.Data != nil {
					t.Fatalf("a failed verification returned %+v", got)
				}
				return
			}
			if got.EventID != id || !got.Timestamp.Equal(signedAt) || got.Envelope.Type != "usage.recorded" {
				t.Fatalf("got %+v, want id %s at %v with type usage.recorded", got, id, signedAt)
			}
		})
	}
}

func TestVerifyStandardBodyChecks(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantErr error
	}{
		{name: "body without an id is fine: the header is the identity", body: `{"type":"x"}`},
		{name: "body not JSON", body: `{"type":`, wantErr: ErrMalformedBody},
		{name: "body a JSON array", body: `[1,2]`, wantErr: ErrMalformedBody},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given a correctly signed request with this body
			h, err := SignHeaders(SchemeStandard, []string{standardNew}, "msg_1", signedAt, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			v, err := NewVerifier(VerifierConfig{Scheme: SchemeStandard, Now: clockAt(signedAt)})
			if err != nil {
				t.Fatal(err)
			}
			// when verified through net/http headers
			got, err := v.Verify(h, []byte(tc.body), []string{standardNew})
			// then only the body decides the outcome
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify error = %v, want %v", err, tc.wantErr)
			}
			if err == nil && got.EventID != "msg_1" {
				t.Fatalf("EventID = %q, want msg_1", got.EventID)
			}
		})
	}
}

func TestVerifyStripe(t *testing.T) {
	valid := SignStripe(stripeNew, signedAt, []byte(stripeBody))
	ts, v1, _ := strings.Cut(strings.TrimPrefix(valid, "t="), ",v1=")
	validOld := SignStripe(stripeOld, signedAt, []byte(stripeBody))
	other := SignStripe(stripeOther, signedAt, []byte(stripeBody))
	_, otherV1, _ := strings.Cut(other, ",v1=")
	mk := func(items ...string) HeaderMap { return HeaderMap{"stripe-signature": strings.Join(items, ",")} }

	tests := []struct {
		name    string
		headers HeaderMap
		body    string
		secrets []string
		now     time.Duration
		wantErr error
		wantID  string
	}{
		{name: "valid", headers: HeaderMap{"stripe-signature": valid}},
		{name: "canonical header name", headers: HeaderMap{"Stripe-Signature": valid}},
		{name: "v0 and unknown keys ignored", headers: mk("t="+ts, "v0="+otherV1, "v1="+v1, "x=1")},
		{name: "spaces around items", headers: mk("t="+ts, " v1="+v1+" ")},
		{name: "several v1 one valid", headers: mk("t="+ts, "v1="+otherV1, "v1=zz", "v1="+v1)},
		{name: "second secret valid", headers: HeaderMap{"stripe-signature": validOld}},
		{name: "wrong secret", headers: HeaderMap{"stripe-signature": other}, wantErr: ErrBadSignature},
		{name: "tampered body byte", headers: HeaderMap{"stripe-signature": valid}, body: flip(stripeBody, 30), wantErr: ErrBadSignature},
		{name: "body with a byte appended", headers: HeaderMap{"stripe-signature": valid}, body: stripeBody + "\n", wantErr: ErrBadSignature},
		{name: "tampered timestamp digit", headers: mk("t="+flip(ts, len(ts)-1), "v1="+v1), wantErr: ErrBadSignature},
		{name: "tampered signature byte", headers: mk("t="+ts, "v1="+flip(v1, 7)), wantErr: ErrBadSignature},
		{name: "upper-case hex still matches", headers: mk("t="+ts, "v1="+strings.ToUpper(v1))},
		{name: "signature not hex", headers: mk("t="+ts, "v1=xyz"), wantErr: ErrBadSignature},
		{name: "stale in the past", headers: HeaderMap{"stripe-signature": valid}, now: DefaultTolerance + time.Second, wantErr: ErrStaleTimestamp},
		{name: "stale in the future", headers: HeaderMap{"stripe-signature": valid}, now: -DefaultTolerance - time.Second, wantErr: ErrStaleTimestamp},
		{name: "inside the window", headers: HeaderMap{"stripe-signature": valid}, now: DefaultTolerance},
		{name: "no t", headers: mk("v1=" + v1), wantErr: ErrMalformedHeader},
		{name: "repeated t", headers: mk("t="+ts, "t="+ts, "v1="+v1), wantErr: ErrMalformedHeader},
		{name: "t not a number", headers: mk("t=now", "v1="+v1), wantErr: ErrMalformedHeader},
		{name: "item without =", headers: mk("t="+ts, v1), wantErr: ErrMalformedHeader},
		{name: "empty item", headers: mk("t="+ts, "", "v1="+v1), wantErr: ErrMalformedHeader},
		{name: "no v1", headers: mk("t="+ts, "v0="+v1), wantErr: ErrMissingSignature},
		{name: "missing header", headers: HeaderMap{}, wantErr: ErrMissingSignature},
		{name: "no secrets", headers: HeaderMap{"stripe-signature": valid}, secrets: []string{}, wantErr: ErrNoSecrets},
		{name: "empty secret", headers: HeaderMap{"stripe-signature": valid}, secrets: []string{""}, wantErr: ErrBadSecret},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given a stripe verifier whose clock is offset from the signing time
			v, err := NewVerifier(VerifierConfig{Scheme: SchemeStripe, Now: clockAt(signedAt.Add(tc.now))})
			if err != nil {
				t.Fatal(err)
			}
			body := tc.body
			if body == "" {
				body = stripeBody
			}
			secrets := tc.secrets
			if secrets == nil {
				secrets = []string{stripeNew, stripeOld}
			}
			// when verified
			got, err := v.Verify(tc.headers, []byte(body), secrets)
			// then it passes with the body's event id, or fails with the sentinel
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify error = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if got.EventID != "evt_123" || !got.Timestamp.Equal(signedAt) {
				t.Fatalf("got %+v, want evt_123 at %v", got, signedAt)
			}
			if want := time.Unix(1800000000, 0).UTC(); !got.Envelope.CreatedAt.Equal(want) {
				t.Fatalf("CreatedAt = %v, want %v", got.Envelope.CreatedAt, want)
			}
		})
	}
}

func TestVerifyStripeBodyChecks(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantErr error
	}{
		{name: "body without id", body: `{"type":"charge.succeeded"}`, wantErr: ErrMissingEventID},
		{name: "id not a string", body: `{"id":42}`, wantErr: ErrMalformedBody},
		{name: "id with a control byte", body: `{"id":"evt\u0001"}`, wantErr: ErrMalformedBody},
		{name: "body not JSON", body: `id=evt_1`, wantErr: ErrMalformedBody},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given a correctly signed stripe request with this body
			v, err := NewVerifier(VerifierConfig{Scheme: SchemeStripe, Now: clockAt(signedAt)})
			if err != nil {
				t.Fatal(err)
			}
			h := HeaderMap{"stripe-signature": SignStripe(stripeNew, signedAt, []byte(tc.body))}
			// when verified
			_, err = v.Verify(h, []byte(tc.body), []string{stripeNew})
			// then the body problem is reported, after the signature passed
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Verify error = %v, want %v", err, tc.wantErr)
			}
			if KindOf(err) != KindInvalid {
				t.Fatalf("KindOf = %v, want invalid", KindOf(err))
			}
		})
	}
}

func TestSignHeadersVerifiesWithEverySecret(t *testing.T) {
	tests := []struct {
		name    string
		scheme  Scheme
		secrets []string
		body    string
	}{
		{name: "standard webhooks", scheme: SchemeStandard, secrets: []string{standardNew, standardOld}, body: standardBody},
		{name: "stripe", scheme: SchemeStripe, secrets: []string{stripeNew, stripeOld}, body: stripeBody},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given headers signed with two secrets
			h, err := SignHeaders(tc.scheme, tc.secrets, "msg_7", signedAt, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			v, err := NewVerifier(VerifierConfig{Scheme: tc.scheme, Now: clockAt(signedAt)})
			if err != nil {
				t.Fatal(err)
			}
			// when a receiver holds only one of them
			for _, s := range tc.secrets {
				if _, err := v.Verify(h, []byte(tc.body), []string{s}); err != nil {
					t.Errorf("Verify with one secret: %v", err)
				}
			}
			// then each verifies, and a third does not
			other := standardOther
			if tc.scheme == SchemeStripe {
				other = stripeOther
			}
			if _, err := v.Verify(h, []byte(tc.body), []string{other}); !errors.Is(err, ErrBadSignature) {
				t.Errorf("Verify with another secret: %v, want bad signature", err)
			}
		})
	}
}

func TestSignErrors(t *testing.T) {
	tests := []struct {
		name    string
		sign    func() error
		wantErr error
	}{
		{name: "standard id with the delimiter", sign: func() error {
			_, err := SignStandard(standardNew, "a.b", signedAt, nil)
			return err
		}, wantErr: ErrMalformedHeader},
		{name: "standard secret not base64", sign: func() error {
			_, err := SignStandard("whsec_%%%", "msg_1", signedAt, nil)
			return err
		}, wantErr: ErrBadSecret},
		{name: "headers without secrets", sign: func() error {
			_, err := SignHeaders(SchemeStripe, nil, "", signedAt, nil)
			return err
		}, wantErr: ErrNoSecrets},
		{name: "headers for an unknown scheme", sign: func() error {
			_, err := SignHeaders("github", []string{"s"}, "", signedAt, nil)
			return err
		}, wantErr: ErrBadConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given bad signing input, when signed, then the sentinel is reported
			if err := tc.sign(); !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestErrorsNeverCarrySecretsOrSignatures(t *testing.T) {
	// given failing requests that hold secrets and signatures
	const id = "msg_1"
	std := mustSignStandard(t, standardNew, id, signedAt, standardBody)
	stripe := SignStripe(stripeNew, signedAt, []byte(stripeBody))
	ts := strconv.FormatInt(signedAt.Unix(), 10)
	cases := []struct {
		scheme  Scheme
		h       Headers
		secrets []string
		now     time.Time
	}{
		{SchemeStandard, HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": std}, []string{standardOther}, signedAt},
		{SchemeStandard, HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": std}, []string{standardNew}, signedAt.Add(time.Hour)},
		{SchemeStandard, HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": std}, []string{"whsec_" + std}, signedAt},
		{SchemeStandard, HeaderMap{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": strings.TrimPrefix(std, "v1,")}, []string{standardNew}, signedAt},
		{SchemeStripe, HeaderMap{"stripe-signature": stripe}, []string{stripeOther}, signedAt},
		{SchemeStripe, HeaderMap{"stripe-signature": stripe + "," + stripeNew}, []string{stripeNew}, signedAt},
	}
	for i, c := range cases {
		v, err := NewVerifier(VerifierConfig{Scheme: c.scheme, Now: clockAt(c.now)})
		if err != nil {
			t.Fatal(err)
		}
		// when verified
		body := standardBody
		if c.scheme == SchemeStripe {
			body = stripeBody
		}
		_, err = v.Verify(c.h, []byte(body), c.secrets)
		// then the error text holds none of them
		if err == nil {
			t.Fatalf("case %d: verified, want an error", i)
		}
		msg := err.Error()
		for _, secret := range []string{standardNew, standardOther, stripeNew, stripeOther, std[3:13], stripe[13:30], "whsec_" + std[3:13]} {
			if strings.Contains(msg, secret) || strings.Contains(msg, strings.TrimPrefix(secret, "whsec_")) {
				t.Errorf("case %d: error %q contains secret or signature material", i, msg)
			}
		}
	}
}

func TestKindAndReason(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantKind   Kind
		wantReason string
	}{
		{name: "nil", err: nil, wantKind: KindNone, wantReason: ""},
		{name: "bad signature wrapped", err: errors.Join(errors.New("ctx"), ErrBadSignature), wantKind: KindUnauthenticated, wantReason: "bad_signature"},
		{name: "missing signature", err: ErrMissingSignature, wantKind: KindUnauthenticated, wantReason: "missing_signature"},
		{name: "stale", err: ErrStaleTimestamp, wantKind: KindUnauthenticated, wantReason: "stale_timestamp"},
		{name: "malformed header", err: ErrMalformedHeader, wantKind: KindUnauthenticated, wantReason: "malformed_header"},
		{name: "malformed body", err: ErrMalformedBody, wantKind: KindInvalid, wantReason: "malformed_body"},
		{name: "missing event id", err: ErrMissingEventID, wantKind: KindInvalid, wantReason: "missing_event_id"},
		{name: "too large", err: ErrBodyTooLarge, wantKind: KindTooLarge, wantReason: "body_too_large"},
		{name: "no secrets", err: ErrNoSecrets, wantKind: KindConfig, wantReason: "no_secrets"},
		{name: "bad secret", err: ErrBadSecret, wantKind: KindConfig, wantReason: "bad_secret"},
		{name: "bad config", err: ErrBadConfig, wantKind: KindConfig, wantReason: "bad_config"},
		{name: "foreign error", err: errors.New("dynamodb: throttled"), wantKind: KindOther, wantReason: "other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given an error, when classified, then kind and reason match
			if got := KindOf(tc.err); got != tc.wantKind {
				t.Errorf("KindOf = %v, want %v", got, tc.wantKind)
			}
			if got := Reason(tc.err); got != tc.wantReason {
				t.Errorf("Reason = %q, want %q", got, tc.wantReason)
			}
		})
	}
}

func TestVerifierConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     VerifierConfig
		wantErr bool
	}{
		{name: "standard with defaults", cfg: VerifierConfig{Scheme: SchemeStandard}},
		{name: "stripe with limits", cfg: VerifierConfig{Scheme: SchemeStripe, Tolerance: time.Minute, MaxBody: 1024}},
		{name: "unknown scheme", cfg: VerifierConfig{Scheme: "gitlab"}, wantErr: true},
		{name: "square without its signed URL", cfg: VerifierConfig{Scheme: SchemeSquare}, wantErr: true},
		{name: "square with its signed URL", cfg: VerifierConfig{Scheme: SchemeSquare, Options: PresetOptions{SignedURL: "https://hooks.example.com/webhooks/square"}}},
		{name: "paypal without webhook ID or hosts", cfg: VerifierConfig{Scheme: SchemePayPal}, wantErr: true},
		{name: "paypal with a bad host", cfg: VerifierConfig{Scheme: SchemePayPal, Options: PresetOptions{WebhookID: "1JE4291016473214C", CertHosts: []string{"https://api.paypal.com/"}}}, wantErr: true},
		{name: "github needs nothing more", cfg: VerifierConfig{Scheme: SchemeGitHub}},
		{name: "negative tolerance", cfg: VerifierConfig{Scheme: SchemeStripe, Tolerance: -time.Second}, wantErr: true},
		{name: "body limit too big", cfg: VerifierConfig{Scheme: SchemeStripe, MaxBody: MaxBodyLimit + 1}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given a config, when a verifier is built, then bad ones are refused
			v, err := NewVerifier(tc.cfg)
			if (err != nil) != tc.wantErr {
				t.Fatalf("NewVerifier error = %v, wantErr %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, ErrBadConfig) {
				t.Fatalf("error %v is not ErrBadConfig", err)
			}
			if err == nil && (v.Scheme() != tc.cfg.Scheme || v.MaxBody() <= 0) {
				t.Fatalf("verifier has scheme %q, max body %d", v.Scheme(), v.MaxBody())
			}
		})
	}
}

func TestCustomTolerance(t *testing.T) {
	// given a verifier with a one-minute window
	v, err := NewVerifier(VerifierConfig{Scheme: SchemeStripe, Tolerance: time.Minute, Now: clockAt(signedAt.Add(61 * time.Second))})
	if err != nil {
		t.Fatal(err)
	}
	// when a request signed 61 s ago arrives
	h := HeaderMap{"stripe-signature": SignStripe(stripeNew, signedAt, []byte(stripeBody))}
	_, err = v.Verify(h, []byte(stripeBody), []string{stripeNew})
	// then it is stale
	if !errors.Is(err, ErrStaleTimestamp) {
		t.Fatalf("Verify error = %v, want stale", err)
	}
}

func TestHeaderMap(t *testing.T) {
	tests := []struct {
		name string
		m    HeaderMap
		get  string
		want string
	}{
		{name: "lower-case key", m: HeaderMap{"webhook-id": "a"}, get: "Webhook-Id", want: "a"},
		{name: "mixed-case key", m: HeaderMap{"Webhook-ID": "b"}, get: "webhook-id", want: "b"},
		{name: "absent", m: HeaderMap{"x": "c"}, get: "webhook-id", want: ""},
		{name: "nil map", m: nil, get: "webhook-id", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given a map, when a header is looked up, then case is ignored
			if got := tc.m.Get(tc.get); got != tc.want {
				t.Fatalf("Get(%q) = %q, want %q", tc.get, got, tc.want)
			}
		})
	}
	// http.Header satisfies Headers as it is.
	h := http.Header{}
	h.Set("webhook-id", "d")
	var hs Headers = h
	if hs.Get("WEBHOOK-ID") != "d" {
		t.Fatal("http.Header lookup failed")
	}
}
