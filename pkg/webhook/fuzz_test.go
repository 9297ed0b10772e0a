package webhook

import (
	"bytes"
	"crypto/hmac"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fuzzKey is the one secret the fuzz targets verify against; a fuzzed header
// that verifies must carry this key's signature.
var fuzzKey = []byte("hookline-fuzz-key-0123456789abcd")

const (
	fuzzID   = "msg_fuzz"
	fuzzTS   = "1800000000"
	fuzzBody = `{"id":"evt_fuzz","type":"t"}`
)

func FuzzParseStandardSignatureHeader(f *testing.F) {
	f.Add("v1," + base64.StdEncoding.EncodeToString(standardMAC(fuzzKey, fuzzID, fuzzTS, []byte(fuzzBody))))
	f.Add(vectorSignature)
	f.Add("v1,a v1a,b  v2,c")
	f.Add("")
	f.Add("v1")
	f.Add(",x")
	f.Fuzz(func(t *testing.T, header string) {
		sigs, err := parseStandardSignatureHeader(header)
		if err == nil {
			// A header that parses round-trips through its formatted form.
			again, err := parseStandardSignatureHeader(formatStandardSignatureHeader(sigs))
			if err != nil {
				t.Fatalf("formatted header does not parse: %v", err)
			}
			if !slices.Equal(sigs, again) {
				t.Fatalf("round trip changed %v into %v", sigs, again)
			}
			for _, s := range sigs {
				if s.version == "" || s.value == "" {
					t.Fatalf("empty part in %+v", s)
				}
			}
		} else if !errors.Is(err, ErrMalformedHeader) && !errors.Is(err, ErrMissingSignature) {
			t.Fatalf("unexpected error %v", err)
		}

		// A verified result implies the header holds the known key's signature.
		h := HeaderMap{HeaderWebhookID: fuzzID, HeaderWebhookTimestamp: fuzzTS, HeaderWebhookSignature: header}
		now := time.Unix(1800000000, 0)
		got, err := verifyStandard(h, []byte(fuzzBody), macKeys(fuzzKey), now, DefaultTolerance)
		if err != nil {
			if KindOf(err) != KindUnauthenticated {
				t.Fatalf("verification failure of kind %v: %v", KindOf(err), err)
			}
			return
		}
		want := standardMAC(fuzzKey, fuzzID, fuzzTS, []byte(fuzzBody))
		found := false
		for _, s := range sigs {
			raw, err := base64.StdEncoding.DecodeString(s.value)
			if s.version == "v1" && err == nil && hmac.Equal(raw, want) {
				found = true
			}
		}
		if !found || got.EventID != fuzzID {
			t.Fatalf("verified %+v without the key's signature in %q", got, header)
		}
	})
}

func FuzzParseStripeHeader(f *testing.F) {
	f.Add("t=" + fuzzTS + ",v1=" + hex.EncodeToString(stripeMAC(fuzzKey, fuzzTS, []byte(fuzzBody))))
	f.Add("t=1,v0=ab,v1=cd,v1=ef")
	f.Add("t=1,t=2,v1=ab")
	f.Add("v1=ab")
	f.Add("t=,v1=")
	f.Add("")
	f.Fuzz(func(t *testing.T, header string) {
		parsed, err := parseStripeHeader(header)
		if err == nil {
			// A header that parses round-trips through its formatted form.
			again, err := parseStripeHeader(parsed.format())
			if err != nil {
				t.Fatalf("formatted header does not parse: %v", err)
			}
			if again.timestamp != parsed.timestamp || !slices.Equal(again.v1, parsed.v1) {
				t.Fatalf("round trip changed %+v into %+v", parsed, again)
			}
			if _, err := strconv.ParseInt(parsed.timestamp, 10, 64); err != nil || len(parsed.v1) == 0 {
				t.Fatalf("accepted %+v", parsed)
			}
		} else if !errors.Is(err, ErrMalformedHeader) && !errors.Is(err, ErrMissingSignature) {
			t.Fatalf("unexpected error %v", err)
		}

		// A verified result implies the header holds the known key's signature
		// over its own timestamp.
		h := HeaderMap{HeaderStripeSignature: header}
		now := time.Unix(1800000000, 0)
		got, err := verifyStripe(h, []byte(fuzzBody), macKeys(fuzzKey), now, DefaultTolerance)
		if err != nil {
			if KindOf(err) != KindUnauthenticated {
				t.Fatalf("verification failure of kind %v: %v", KindOf(err), err)
			}
			return
		}
		want := stripeMAC(fuzzKey, parsed.timestamp, []byte(fuzzBody))
		found := false
		for _, v := range parsed.v1 {
			raw, err := hex.DecodeString(v)
			if err == nil && hmac.Equal(raw, want) {
				found = true
			}
		}
		if !found || got.Timestamp.Sub(now).Abs() > DefaultTolerance {
			t.Fatalf("verified %+v without the key's signature in %q", got, header)
		}
	})
}

func FuzzParseEnvelope(f *testing.F) {
	f.Add([]byte(stripeBody))
	f.Add([]byte(standardBody))
	f.Add([]byte(`{"id":"e","created":"x","timestamp":5,"data":null}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"id":1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		env, err := ParseEnvelope(body)
		again, err2 := ParseEnvelope(body)
		if (err == nil) != (err2 == nil) || env.ID != again.ID || !env.CreatedAt.Equal(again.CreatedAt) {
			t.Fatal("parsing the same body twice differs")
		}
		if err != nil {
			if KindOf(err) != KindInvalid {
				t.Fatalf("error of kind %v: %v", KindOf(err), err)
			}
			// The scanner agrees with encoding/json on what is JSON.
			if json.Valid(body) && strings.Contains(err.Error(), "invalid JSON") {
				t.Fatalf("refused valid JSON %q: %v", body, err)
			}
			return
		}
		if !json.Valid(body) || bytes.TrimSpace(body)[0] != '{' {
			t.Fatalf("accepted a body that is not a JSON object: %q", body)
		}
		if checkEventID(env.ID) != nil {
			t.Fatalf("accepted event id %q", env.ID)
		}
		if env.Data != nil && !json.Valid(env.Data) {
			t.Fatalf("data is not JSON: %q", env.Data)
		}
	})
}

// FuzzVerify fuzzes [Verifier.Verify] as a whole: scheme, clock, every header
// and the body. When sign is set, the request carries a correct signature of
// the fuzzed id, timestamp text and body (before extra, a fuzzed header
// fragment), so the window and the parser are reached, not only the MAC
// check. Properties:
//   - every failure has a request-side kind (401, 400 or 413), never a panic;
//   - a verified request holds the key's signature, lies inside the window
//     (compared as instants) and has a parsed envelope with a usable ID;
//   - a correctly signed, well-formed request inside the window verifies.
func FuzzVerify(f *testing.F) {
	const nowUnix = 1_800_000_000
	f.Add(false, true, fuzzID, fuzzTS, "", []byte(fuzzBody), int64(0))
	f.Add(true, true, fuzzID, fuzzTS, "", []byte(fuzzBody), int64(0))
	f.Add(false, true, fuzzID, "99999999999", "", []byte(fuzzBody), int64(0))
	f.Add(true, true, fuzzID, "99999999999", "", []byte(fuzzBody), int64(0))
	f.Add(false, true, fuzzID, "999999999999", "", []byte(fuzzBody), int64(0))
	f.Add(true, true, fuzzID, "0", "", []byte(fuzzBody), int64(0))
	f.Add(false, true, fuzzID, fuzzTS, "", []byte(fuzzBody), int64(301))
	f.Add(true, true, fuzzID, fuzzTS, ",v1=00", []byte(`{"id":"evt_x"}`), int64(-300))
	f.Add(false, false, "a.b", fuzzTS, "v1,AAAA", []byte(`[]`), int64(0))
	f.Add(true, false, "", "", "t=1,v1=zz", []byte(``), int64(0))
	f.Add(false, true, "msg 1", "+1800000000", " v2,x", []byte(`{"type":1}`), int64(0))
	standardSecret := "whsec_" + base64.StdEncoding.EncodeToString(fuzzKey)
	stripeSecret := string(fuzzKey)
	f.Fuzz(func(t *testing.T, stripe, sign bool, id, tsText, extra string, body []byte, offset int64) {
		now := time.Unix(nowUnix, 0).Add(time.Duration(offset%(1<<20)) * time.Second)
		scheme, secret := SchemeStandard, standardSecret
		if stripe {
			scheme, secret = SchemeStripe, stripeSecret
		}
		v, err := NewVerifier(VerifierConfig{Scheme: scheme, MaxBody: 4 << 10, Now: clockAt(now)})
		if err != nil {
			t.Fatal(err)
		}
		h := HeaderMap{HeaderWebhookID: id, HeaderWebhookTimestamp: tsText}
		var want []byte
		if stripe {
			want = stripeMAC(fuzzKey, tsText, body)
			if sign {
				h[HeaderStripeSignature] = "t=" + tsText + ",v1=" + hex.EncodeToString(want) + extra
			} else {
				h[HeaderStripeSignature] = extra
			}
		} else {
			want = standardMAC(fuzzKey, id, tsText, body)
			if sign {
				h[HeaderWebhookSignature] = "v1," + base64.StdEncoding.EncodeToString(want) + extra
			} else {
				h[HeaderWebhookSignature] = extra
			}
		}

		got, err := v.Verify(h, body, []string{secret})
		if err != nil {
			switch KindOf(err) {
			case KindUnauthenticated, KindInvalid, KindTooLarge:
			default:
				t.Fatalf("failure of kind %v: %v", KindOf(err), err)
			}
		} else {
			if got.Timestamp.Before(now.Add(-DefaultTolerance)) || got.Timestamp.After(now.Add(DefaultTolerance)) {
				t.Fatalf("verified a request signed at %v, now %v", got.Timestamp, now)
			}
			if checkEventID(got.EventID) != nil {
				t.Fatalf("verified event id %q", got.EventID)
			}
			if stripe && got.EventID != got.Envelope.ID || !stripe && got.EventID != id {
				t.Fatalf("event id %q from the wrong place", got.EventID)
			}
			sigText := h.Get(HeaderWebhookSignature) + " " + h.Get(HeaderStripeSignature)
			if !strings.Contains(sigText, base64.StdEncoding.EncodeToString(want)) && !strings.Contains(sigText, hex.EncodeToString(want)) {
				t.Fatalf("verified without the key's signature: %q", sigText)
			}
		}

		// Completeness: a well-formed request signed inside the window passes.
		if !sign || extra != "" || len(body) > 4<<10 {
			return
		}
		ts, perr := parseUnix(tsText)
		if perr != nil || checkWindow(ts, now, DefaultTolerance) != nil {
			return
		}
		if _, perr := parseEnvelope(body, stripe); perr != nil {
			return
		}
		if !stripe && checkHeaderEventID(id) != nil {
			return
		}
		if err != nil {
			t.Fatalf("a correctly signed request at %s (now %v) failed: %v", tsText, now, err)
		}
	})
}
