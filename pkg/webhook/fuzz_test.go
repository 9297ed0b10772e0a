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
		got, err := verifyStandard(h, []byte(fuzzBody), [][]byte{fuzzKey}, now, DefaultTolerance)
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
		got, err := verifyStripe(h, []byte(fuzzBody), [][]byte{fuzzKey}, now, DefaultTolerance)
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
