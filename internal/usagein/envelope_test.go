package usagein_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/provider"
)

func TestEnvelopeCarriesWhatTheDoorRead(t *testing.T) {
	m := parseMappings(t, tokensMapping).For("meters")
	b, err := readAs(t, m, tokenEvent("e1", "com.example.tokens", `"tokens":"12.5"`, ""))
	if err != nil {
		t.Fatal(err)
	}
	rec := b.Items[0].Record
	body := m.Envelope("meters", rec)
	// Given the envelope of a record, when the worker reads it a day after
	// the door saw it (a redrive), then it reads the door's record
	msg, err := usagein.DecodeMessage(body, seen)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Record != rec || msg.Source != "meters" || msg.Rule != m.Rule() || msg.Reconciled || msg.Legacy || !msg.Seen.Equal(seen) {
		t.Fatalf("message %+v\nwant record %+v", msg, rec)
	}
	// and the same record always makes the same bytes, so that a retry
	// is a duplicate at the intake.
	if again := m.Envelope("meters", rec); string(again) != string(body) {
		t.Fatalf("envelope not deterministic:\n%s\n%s", body, again)
	}
}

func TestEnvelopeWithoutTimeHappenedWhenSeen(t *testing.T) {
	m := parseMappings(t, tokensMapping).For("meters")
	body := m.Envelope("meters", usagein.Record{Outcome: usagein.OutcomeUsage, Type: "t", RecordID: "ce_x", WorkloadRef: "w",
		Meter: "t", Unit: "milli_tokens", Units: 3})
	msg, err := usagein.DecodeMessage(body, seen)
	if err != nil || !msg.OccurredAt.Equal(seen) {
		t.Fatalf("occurred %s, %v; want the time it was seen", msg.OccurredAt, err)
	}
}

// TestDecodeMessageReadsTheEarlierBuildsMessages starts with a message as
// builds before envelopes queued it: the usage.recorded body itself.
func TestDecodeMessageReadsTheEarlierBuildsMessages(t *testing.T) {
	at := seen.Add(-time.Hour).Format(time.RFC3339)
	old := `{"id":"evt_usage_ur_1","type":"usage.recorded","data":{"record_id":"ur_1","workload_ref":"img-resize","units":400,"occurred_at":"` + at + `"}}`
	msg, err := usagein.DecodeMessage([]byte(old), seen)
	if err != nil {
		t.Fatal(err)
	}
	if !msg.Legacy || msg.RecordID != "ur_1" || msg.WorkloadRef != "img-resize" || msg.Units != 400 || msg.Outcome != usagein.OutcomeUsage ||
		!msg.Reconciled || msg.Rule != usagein.DefaultTimeRule {
		t.Fatalf("message %+v", msg)
	}
	// It is held to the earlier build's rule: 72 hours.
	if _, err := usagein.DecodeMessage([]byte(old), seen.Add(80*time.Hour)); err == nil {
		t.Fatal("an old message past 72 h accepted")
	}
}

func TestDecodeMessageRefusesWhatTheLedgerCannotCount(t *testing.T) {
	good := `{"usage":1,"source":"meters","format":"cloudevents","outcome":"usage","type":"t","record_id":"ce_x","workload_ref":"w",` +
		`"meter":"t","unit":"u","units":5,"occurred_at":"` + seen.Add(-time.Minute).Format(time.RFC3339) + `","max_age":"72h0m0s","max_skew":"5m0s","reconciled":false}`
	if _, err := usagein.DecodeMessage([]byte(good), seen); err != nil {
		t.Fatalf("good envelope refused: %v", err)
	}
	tests := []struct{ name, from, to, field string }{
		{"another version", `"usage":1`, `"usage":2`, "usage"},
		{"an unknown outcome", `"outcome":"usage"`, `"outcome":"maybe"`, "outcome"},
		{"zero units as usage", `"units":5`, `"units":0`, "units"},
		{"negative units", `"units":5`, `"units":-5`, "units"},
		{"no workload", `"workload_ref":"w",`, ``, "workload_ref"},
		{"a record id with spaces", `"ce_x"`, `"ce x"`, "record_id"},
		{"older than its rule", `"max_age":"72h0m0s"`, `"max_age":"1s"`, "occurred_at"},
		{"a rule past the reach", `"max_age":"72h0m0s"`, `"max_age":"10000h"`, "max_age"},
		{"a member twice", `"units":5`, `"units":5,"units":6`, "units"},
		{"an unknown member", `"units":5`, `"units":5,"extra":1`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := usagein.DecodeMessage([]byte(strings.Replace(good, tc.from, tc.to, 1)), seen)
			if fe, ok := provider.AsFieldError(err); !ok || fe.Field != tc.field {
				t.Fatalf("err = %v, want a refusal naming %q", err, tc.field)
			}
		})
	}
}
