package usagein_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/provider"
)

// The fixtures of testdata/cloudevents are also read by the CloudEvents
// SDK in the ceoracle module, which says which the spec allows.

type ceCases struct {
	Valid    []string          `json:"valid"`
	Invalid  map[string]string `json:"invalid"`
	Stricter map[string]string `json:"stricter"`
}

func loadCECases(t *testing.T) ceCases {
	t.Helper()
	b, err := os.ReadFile("testdata/cloudevents/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var c ceCases
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// readEvents reads each event of a structured or batch fixture.
func readEvents(t *testing.T, name string) ([]usagein.CloudEvent, error) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata/cloudevents", name))
	if err != nil {
		t.Fatal(err)
	}
	return usagein.ReadCloudEvents(b)
}

func TestReadCloudEventTakesWhatTheSpecAllows(t *testing.T) {
	for _, name := range loadCECases(t).Valid {
		t.Run(name, func(t *testing.T) {
			evs, err := readEvents(t, name)
			if err != nil || len(evs) == 0 {
				t.Fatalf("refused: %v", err)
			}
			for _, ev := range evs {
				if ev.ID == "" || ev.Source == "" || ev.Type == "" {
					t.Fatalf("attributes not read: %+v", ev)
				}
			}
		})
	}
}

func TestReadCloudEventRefusesNamingTheMember(t *testing.T) {
	c := loadCECases(t)
	all := map[string]string{}
	for name, field := range c.Invalid {
		all[name] = field
	}
	for name, field := range c.Stricter {
		all[name] = field
	}
	for name, field := range all {
		t.Run(name, func(t *testing.T) {
			_, err := readEvents(t, name)
			fe, ok := provider.AsFieldError(err)
			if !ok || fe.Field != field || fe.Reason == "" {
				t.Fatalf("err = %v, want a refusal naming %s", err, field)
			}
		})
	}
}

func TestReadCloudEventTreatsNullAsUnset(t *testing.T) {
	evs, err := readEvents(t, "no_time_null_subject.json")
	if err != nil {
		t.Fatal(err)
	}
	if ev := evs[0]; ev.Subject != "" || !ev.Time.IsZero() {
		t.Fatalf("subject %q time %s, want both unset", ev.Subject, ev.Time)
	}
}

func TestCloudEventKey(t *testing.T) {
	// The same id under two sources is two events; under one source on
	// two hookline sources, two keys; the length prefix keeps the
	// parts apart; and the key is bounded however long the source.
	keys := map[string]bool{}
	for _, k := range []string{
		usagein.CloudEventKey("meters", "/a", "1"),
		usagein.CloudEventKey("meters", "/b", "1"),
		usagein.CloudEventKey("other", "/a", "1"),
		usagein.CloudEventKey("meters", "/a:1", ""),
		usagein.CloudEventKey("meters", "/a", ":1"),
	} {
		if keys[k] {
			t.Fatalf("key %s given twice", k)
		}
		keys[k] = true
	}
	long := usagein.CloudEventKey("meters", "https://example.com/"+strings.Repeat("é", 5000), "id with spaces\n")
	if len(long) != 67 || !strings.HasPrefix(long, usagein.CloudEventKeyPrefix) || provider.CheckUsageID("k", long) != nil {
		t.Fatalf("key %q: want ce_ and 64 hex digits", long)
	}
	// The key is a published derivation: an export adapter computes it
	// too, so it must never change.
	// It is "ce_" and the SHA-256 of "ce:meters:8:chat-app:00001".
	if got := usagein.CloudEventKey("meters", "chat-app", "00001"); got != "ce_b63c12b6ee0a446fb2380d48eec125e48328842d62159553a9bc766b8631f2e0" {
		t.Fatalf("key of (meters, chat-app, 00001) = %s", got)
	}
}
