package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProbeThatDidNotSettleSaysWhatHappened: the run stops when its probe
// webhook does not settle, and the error says what became of it.
func TestProbeThatDidNotSettleSaysWhatHappened(t *testing.T) {
	// A Stripe invoice.paid, which LoadPayload refuses, read as it would
	// be without that check.
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "payloads", "stripe-invoice-paid.json"))
	if err != nil {
		t.Fatal(err)
	}
	paid := &Payload{Name: "invoice.paid", mapping: shapes[1].mapping}
	if err := paid.split(raw); err != nil {
		t.Fatal(err)
	}
	small, err := SizedPayload(0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		payload *Payload
		dead    string // the probe's dead-letter reason, if it was dead-lettered
		want    string
	}{
		{name: "acknowledged as not an effect", payload: paid,
			want: `was accepted but not charged: not an effect (/type is "invoice.paid", not invoice.finalized)`},
		{name: "dead-lettered", payload: small, dead: "payload_mismatch", want: "was dead-lettered: payload_mismatch"},
		{name: "neither", payload: small, want: "was accepted, and not charged, declined or dead-lettered within 30 s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a probe webhook accepted, and dead-lettered or not
			e := &experiment{cfg: Config{Payload: tt.payload}, obs: newObserver(time.Now())}
			id := eventID("probe", 0)
			e.obs.offer(id, time.Now())
			e.obs.accept(id, "")
			if tt.dead != "" {
				e.obs.deadLetter(id, tt.dead)
			}
			// When the lab says what became of it
			got := e.probeFate(id)
			// Then it names the outcome and the reason
			if !strings.Contains(got, tt.want) {
				t.Fatalf("%q, want %q", got, tt.want)
			}
		})
	}
}
