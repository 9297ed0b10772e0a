package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseEnvelopeFixtures(t *testing.T) {
	tests := []struct {
		name        string
		file        string
		wantErr     error
		wantID      string
		wantType    string
		wantCreated time.Time
	}{
		{name: "stripe event", file: "stripe_event.json", wantID: "evt_3QpL9b2eZvKYlo2C0m1xKq7a",
			wantType: "payment_intent.succeeded", wantCreated: time.Unix(1795000000, 0).UTC()},
		{name: "standard webhooks event has no id in the body", file: "standard_event.json", wantErr: ErrMissingEventID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given a provider-shaped fixture
			body, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			// when parsed twice
			first, err1 := ParseEnvelope(body)
			second, err2 := ParseEnvelope(body)
			// then the result is as expected, and the same both times
			if !errors.Is(err1, tc.wantErr) || (tc.wantErr == nil) != (err1 == nil) {
				t.Fatalf("ParseEnvelope error = %v, want %v", err1, tc.wantErr)
			}
			if (err1 == nil) != (err2 == nil) || first.ID != second.ID || string(first.Data) != string(second.Data) {
				t.Fatal("second parse differs from the first")
			}
			if err1 != nil {
				return
			}
			if first.ID != tc.wantID || first.Type != tc.wantType || !first.CreatedAt.Equal(tc.wantCreated) {
				t.Fatalf("got %+v", first)
			}
			if !json.Valid(first.Data) {
				t.Fatalf("Data is not valid JSON: %s", first.Data)
			}
		})
	}
}

func TestStandardFixtureThroughVerify(t *testing.T) {
	// given the standard-webhooks fixture, signed
	body, err := os.ReadFile(filepath.Join("testdata", "standard_event.json"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := SignHeaders(SchemeStandard, []string{standardNew}, "msg_usage_1", signedAt, body)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVerifier(VerifierConfig{Scheme: SchemeStandard, Now: clockAt(signedAt)})
	if err != nil {
		t.Fatal(err)
	}
	// when verified
	got, err := v.Verify(h, body, []string{standardNew})
	// then the header id is the identity and the body's timestamp is the event time
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	want := time.Date(2026, 11, 30, 3, 17, 0, 250e6, time.UTC)
	if got.EventID != "msg_usage_1" || got.Envelope.Type != "usage.recorded" || !got.Envelope.CreatedAt.Equal(want) {
		t.Fatalf("got %+v", got)
	}
}

func TestParseEnvelope(t *testing.T) {
	tests := []struct {
		name        string
		body        string
		wantErr     error
		wantCreated time.Time
		wantData    string
	}{
		{name: "created in unix seconds", body: `{"id":"e1","created":1700000000}`, wantCreated: time.Unix(1700000000, 0).UTC()},
		{name: "timestamp in RFC 3339", body: `{"id":"e1","timestamp":"2026-01-02T03:04:05+01:00"}`, wantCreated: time.Date(2026, 1, 2, 2, 4, 5, 0, time.UTC)},
		{name: "created_at in RFC 3339", body: `{"id":"e1","created_at":"2026-01-02T03:04:05Z"}`, wantCreated: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		{name: "created wins over timestamp", body: `{"id":"e1","created":1700000000,"timestamp":"2026-01-02T03:04:05Z"}`, wantCreated: time.Unix(1700000000, 0).UTC()},
		{name: "unparsable time is zero", body: `{"id":"e1","timestamp":"yesterday","created":"soon"}`},
		{name: "fractional created is zero", body: `{"id":"e1","created":1.5}`},
		{name: "no time is zero", body: `{"id":"e1"}`},
		{name: "data kept as sent", body: `{"id":"e1","data": {"a" : 1}}`, wantData: `{"a" : 1}`},
		{name: "leading whitespace", body: " \n{\"id\":\"e1\"}"},
		{name: "missing id", body: `{"type":"x"}`, wantErr: ErrMissingEventID},
		{name: "empty id", body: `{"id":""}`, wantErr: ErrMissingEventID},
		{name: "id too long", body: `{"id":"` + longID() + `"}`, wantErr: ErrMalformedBody},
		{name: "id a number", body: `{"id":1}`, wantErr: ErrMalformedBody},
		{name: "type a number", body: `{"id":"e1","type":1}`, wantErr: ErrMalformedBody},
		{name: "not JSON", body: `{"id":"e1"`, wantErr: ErrMalformedBody},
		{name: "trailing garbage", body: `{"id":"e1"} x`, wantErr: ErrMalformedBody},
		{name: "array", body: `[{"id":"e1"}]`, wantErr: ErrMalformedBody},
		{name: "null", body: `null`, wantErr: ErrMalformedBody},
		{name: "empty", body: ``, wantErr: ErrMalformedBody},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given a body, when parsed
			got, err := ParseEnvelope([]byte(tc.body))
			// then the outcome and the fields are as expected
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("ParseEnvelope error = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if got.ID != "e1" || !got.CreatedAt.Equal(tc.wantCreated) || string(got.Data) != tc.wantData {
				t.Fatalf("got %+v, want created %v data %q", got, tc.wantCreated, tc.wantData)
			}
		})
	}
}

func longID() string {
	b := make([]byte, maxEventIDLen+1)
	for i := range b {
		b[i] = 'a'
	}
	return string(b)
}

func TestEnvelopeRefusesADuplicateAmongManyMembers(t *testing.T) {
	// Given an envelope of 20 members whose last repeats the 18th
	var b strings.Builder
	b.WriteString(`{"id":"evt_1"`)
	for i := range 19 {
		fmt.Fprintf(&b, `,"m%02d":%d`, i, i)
	}
	b.WriteString(`,"m17":"again"}`)
	// When it is parsed, then the member is named
	_, err := ParseEnvelope([]byte(b.String()))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "m17" || !errors.Is(err, ErrMalformedBody) {
		t.Fatalf("err = %v, want a FieldError naming m17", err)
	}
	// And a long repeated name is named by its first 64 bytes
	long := strings.Repeat("k", 100)
	_, err = ParseEnvelope([]byte(`{"id":"evt_1","` + long + `":1,"` + long + `":2}`))
	if !errors.As(err, &fe) || fe.Field != long[:64]+"..." {
		t.Fatalf("err = %v, want the name cut at 64 bytes", err)
	}
	// And an escaped spelling of a member is the member
	_, err = ParseEnvelope([]byte(`{"id":"evt_1","\u0069d":"evt_2"}`))
	if !errors.As(err, &fe) || fe.Field != "id" || !strings.Contains(err.Error(), "given twice") {
		t.Fatalf("err = %v, want id given twice", err)
	}
	// And the Kelvin sign is not a k, nor U+017F an s, for an exact reader
	_, err = ParseEnvelope([]byte(`{"id":"evt_1","time\u017ftamp":"2026-12-01T00:00:00Z"}`))
	if !errors.As(err, &fe) || !strings.Contains(fe.Reason, `"timestamp"`) {
		t.Fatalf("err = %v, want the timestamp spelling refused", err)
	}
}
