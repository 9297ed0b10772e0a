package ceoracle

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/provider"
)

// fixtures is the directory of CloudEvents fixtures the main module's
// tests read too (internal/usagein/testdata/cloudevents).
const fixtures = "../testdata/cloudevents"

// cases is cases.json: the fixtures valid for the spec, those invalid for
// it (with the member hookline names), and those the spec's SDK takes but
// hookline refuses on purpose.
type cases struct {
	Valid    []string          `json:"valid"`
	Invalid  map[string]string `json:"invalid"`
	Stricter map[string]string `json:"stricter"`
}

func loadCases(t *testing.T) cases {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c cases
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// sdkRead reads body with the SDK: one event or a batch, each validated.
func sdkRead(body []byte) ([]cloudevents.Event, error) {
	var evs []cloudevents.Event
	if len(body) > 0 && body[0] == '[' {
		if err := json.Unmarshal(body, &evs); err != nil {
			return nil, err
		}
	} else {
		var ev cloudevents.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
	for _, ev := range evs {
		if err := ev.Validate(); err != nil {
			return nil, err
		}
	}
	return evs, nil
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameAttributes fails unless hookline read the SDK's attributes.
func sameAttributes(t *testing.T, sdk cloudevents.Event, ours usagein.CloudEvent) {
	t.Helper()
	if sdk.ID() != ours.ID || sdk.Source() != ours.Source || sdk.Type() != ours.Type || sdk.Subject() != ours.Subject ||
		!sdk.Time().Equal(ours.Time) {
		t.Fatalf("SDK read %s %s %s %q %s; hookline %s %s %s %q %s", sdk.ID(), sdk.Source(), sdk.Type(), sdk.Subject(), sdk.Time(),
			ours.ID, ours.Source, ours.Type, ours.Subject, ours.Time)
	}
}

func TestValidEventsReadAsTheSDKReadsThem(t *testing.T) {
	for _, name := range loadCases(t).Valid {
		t.Run(name, func(t *testing.T) {
			// Given an event the spec allows, when the SDK and hookline
			// read it, then both take it, with the same attributes
			body := read(t, name)
			sdk, err := sdkRead(body)
			if err != nil {
				t.Fatalf("SDK refuses a valid fixture: %v", err)
			}
			ours, err := usagein.ReadCloudEvents(body)
			if err != nil {
				t.Fatalf("hookline refuses what the SDK takes: %v", err)
			}
			if len(sdk) != len(ours) {
				t.Fatalf("SDK read %d events, hookline %d", len(sdk), len(ours))
			}
			for i := range sdk {
				sameAttributes(t, sdk[i], ours[i])
			}
		})
	}
}

func TestInvalidEventsAreRefusedByBoth(t *testing.T) {
	for name, field := range loadCases(t).Invalid {
		t.Run(name, func(t *testing.T) {
			body := read(t, name)
			if _, err := sdkRead(body); err == nil {
				t.Fatal("the SDK takes a fixture marked invalid")
			}
			_, err := usagein.ReadCloudEvents(body)
			if fe, ok := provider.AsFieldError(err); !ok || fe.Field != field {
				t.Fatalf("hookline: %v, want a refusal naming %s", err, field)
			}
		})
	}
}

// TestHooklineIsStricterOnPurpose: the SDK reads a member given twice as
// its last value, reads specversion 0.3 as that version, and no longer
// bounds an extension's name; hookline refuses each, naming the member.
func TestHooklineIsStricterOnPurpose(t *testing.T) {
	for name, field := range loadCases(t).Stricter {
		t.Run(name, func(t *testing.T) {
			body := read(t, name)
			if _, err := sdkRead(body); err != nil {
				t.Fatalf("the SDK refuses it too (%v): move it to invalid", err)
			}
			_, err := usagein.ReadCloudEvents(body)
			if fe, ok := provider.AsFieldError(err); !ok || fe.Field != field {
				t.Fatalf("hookline: %v, want a refusal naming %s", err, field)
			}
		})
	}
}

func TestEventsTheSDKWritesAreRead(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 123000000, time.UTC)
	build := func(mut func(*cloudevents.Event)) cloudevents.Event {
		ev := cloudevents.New()
		ev.SetID("evt-sdk-1")
		ev.SetSource("https://meter.example.com/a path/ü")
		ev.SetType("com.example.tokens")
		ev.SetSubject("img-resize")
		ev.SetTime(at)
		ev.SetExtension("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
		if err := ev.SetData("application/json", map[string]any{"value": 12.5}); err != nil {
			t.Fatal(err)
		}
		if mut != nil {
			mut(&ev)
		}
		return ev
	}
	tests := []struct {
		name string
		ev   cloudevents.Event
	}{
		{"json data and an extension", build(nil)},
		{"no time, no subject", build(func(e *cloudevents.Event) { e.SetTime(time.Time{}); e.SetSubject("") })},
		{"binary data", build(func(e *cloudevents.Event) { _ = e.SetData("application/octet-stream", []byte{0, 1, 2}) })},
		{"integer and boolean extensions", build(func(e *cloudevents.Event) {
			e.SetExtension("retries", 3)
			e.SetExtension("sampled", true)
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given an event the SDK built and wrote, when hookline reads
			// it (alone and in a batch), then it reads the SDK's attributes
			if err := tc.ev.Validate(); err != nil {
				t.Fatal(err)
			}
			one, err := json.Marshal(tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			batch, err := json.Marshal([]cloudevents.Event{tc.ev, tc.ev})
			if err != nil {
				t.Fatal(err)
			}
			for _, body := range [][]byte{one, batch} {
				ours, err := usagein.ReadCloudEvents(body)
				if err != nil {
					t.Fatalf("hookline refuses what the SDK wrote: %v\n%s", err, body)
				}
				for _, ev := range ours {
					sameAttributes(t, tc.ev, ev)
				}
			}
		})
	}
}
