package webhook

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseSources(t *testing.T) {
	// given the documented example with a second, stripe source
	text := `[
	  {"name":"payments","scheme":"standard-webhooks","secret_env":"HOOKLINE_PAYMENTS_SECRETS","queue":"payments","max_body":262144,"tolerance":"300s"},
	  {"name":"usage","scheme":"stripe","secret_id":"arn:aws:secretsmanager:eu-west-1:123456789012:secret:hookline/usage","queue":"usage"}
	]`
	// when parsed
	specs, err := ParseSources(text)
	// then both sources come back with defaults left zero
	if err != nil {
		t.Fatalf("ParseSources: %v", err)
	}
	want := []SourceSpec{
		{Name: "payments", Scheme: SchemeStandard, SecretEnv: "HOOKLINE_PAYMENTS_SECRETS", Queue: "payments", MaxBody: 262144, Tolerance: 300 * time.Second},
		{Name: "usage", Scheme: SchemeStripe, SecretID: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:hookline/usage", Queue: "usage"},
	}
	if !reflect.DeepEqual(specs, want) {
		t.Fatalf("got %+v\nwant %+v", specs, want)
	}
}

func TestParseSourcesErrors(t *testing.T) {
	tests := []struct {
		name      string
		text      string
		wantParts []string // every one must appear: all problems are reported at once
		notParts  []string
	}{
		{name: "not JSON", text: `[{`, wantParts: []string{"invalid JSON"}},
		{name: "not an array", text: `{"name":"x"}`, wantParts: []string{"JSON type object"}},
		{name: "empty list", text: `[]`, wantParts: []string{"none configured"}},
		{name: "text after the array", text: `[] []`, wantParts: []string{"text after"}},
		{name: "secret placed in the JSON", text: `[{"name":"p","scheme":"stripe","secret_env":"S","queue":"q","secrets":"whsec_leakme"}]`,
			wantParts: []string{`unknown field "secrets"`}, notParts: []string{"leakme"}},
		{name: "every problem of every source at once",
			text: `[{"name":"Bad Name","scheme":"gitlab","queue":"","max_body":-1,"tolerance":"soon"},
			        {"name":"ok","scheme":"stripe","secret_env":"A","secret_id":"b","queue":"q"},
			        {"name":"ok","scheme":"stripe","secret_env":"1BAD","queue":"q","tolerance":"-5s","max_body":99999999}]`,
			wantParts: []string{
				`sources[0] "Bad Name": name`, `sources[0] "Bad Name": scheme "gitlab" unknown`, `sources[0] "Bad Name": want secret_env or secret_id`,
				`sources[0] "Bad Name": queue is empty`, `sources[0] "Bad Name": max_body -1`, `sources[0] "Bad Name": tolerance "soon"`,
				`sources[1] "ok": want only one of`,
				`sources[2] "ok": name also used by sources[1]`, `sources[2] "ok": secret_env "1BAD"`, `sources[2] "ok": tolerance "-5s"`,
				`sources[2] "ok": max_body 99999999`,
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given bad source text, when parsed
			specs, err := ParseSources(tc.text)
			// then nothing is returned and every problem is named
			if err == nil || specs != nil {
				t.Fatalf("ParseSources = %v, %v; want an error", specs, err)
			}
			if !errors.Is(err, ErrBadConfig) {
				t.Fatalf("error %v is not ErrBadConfig", err)
			}
			for _, p := range tc.wantParts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error lacks %q:\n%v", p, err)
				}
			}
			for _, p := range tc.notParts {
				if strings.Contains(err.Error(), p) {
					t.Errorf("error contains %q:\n%v", p, err)
				}
			}
		})
	}
}

func TestSourceSpecSource(t *testing.T) {
	spec := SourceSpec{Name: "payments", Scheme: SchemeStandard, SecretEnv: "X", Queue: "payments"}
	tests := []struct {
		name      string
		secrets   []string
		queueURL  string
		wantErr   error
		notInText string
	}{
		{name: "valid", secrets: SplitSecrets(standardNew + ", " + standardOld), queueURL: "http://127.0.0.1:4566/000000000000/payments"},
		{name: "no secrets", secrets: SplitSecrets(" , "), queueURL: "q", wantErr: ErrNoSecrets},
		{name: "second secret unusable, named by position only", secrets: []string{standardNew, "whsec_@@not-base64@@"}, queueURL: "q",
			wantErr: ErrBadSecret, notInText: "not-base64"},
		{name: "no queue", secrets: []string{standardNew}, wantErr: ErrBadConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given a spec and resolved secrets, when joined
			src, err := spec.Source(tc.secrets, tc.queueURL)
			// then the source validates, or the problem is named safely
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Source error = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if tc.notInText != "" && strings.Contains(err.Error(), tc.notInText) {
					t.Fatalf("error %q leaks the secret", err)
				}
				return
			}
			v, err := src.Verifier(clockAt(signedAt))
			if err != nil {
				t.Fatal(err)
			}
			h, err := SignHeaders(src.Scheme, src.Secrets[1:], "msg_1", signedAt, []byte(standardBody))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := v.Verify(h, []byte(standardBody), src.Secrets); err != nil {
				t.Fatalf("Verify with the rotated-out secret: %v", err)
			}
		})
	}
}

func TestSourceValidate(t *testing.T) {
	tests := []struct {
		name      string
		src       Source
		wantParts []string
	}{
		{name: "valid", src: Source{Name: "usage", Scheme: SchemeStripe, Secrets: []string{stripeNew}, QueueURL: "q"}},
		{name: "all wrong at once", src: Source{Name: "", Scheme: "x", Tolerance: -1, MaxBody: -1},
			wantParts: []string{"name", "scheme", "tolerance", "max body", "queue url"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given a source, when validated, then every problem is named
			err := tc.src.Validate()
			if (err != nil) != (len(tc.wantParts) > 0) {
				t.Fatalf("Validate = %v", err)
			}
			for _, p := range tc.wantParts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error lacks %q: %v", p, err)
				}
			}
		})
	}
}

func TestSplitSecrets(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  []string
	}{
		{name: "one", value: "a", want: []string{"a"}},
		{name: "several with spaces", value: " a , b,c ", want: []string{"a", "b", "c"}},
		{name: "blank entries dropped", value: ",a,,", want: []string{"a"}},
		{name: "empty", value: "", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given a list, when split, then entries come back in order
			if got := SplitSecrets(tc.value); !slices.Equal(got, tc.want) {
				t.Fatalf("SplitSecrets(%q) = %q, want %q", tc.value, got, tc.want)
			}
		})
	}
}
