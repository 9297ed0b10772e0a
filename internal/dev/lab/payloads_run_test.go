package lab_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/lab"
)

// TestEveryDocumentedPayloadCharges runs the lab briefly with each body
// the repo ships and documents for it: every webhook accepted is charged,
// once, and none is dead-lettered.
func TestEveryDocumentedPayloadCharges(t *testing.T) {
	oneRunAtATime(t)
	tests := []struct {
		name, file string // file "": the lab's own small event
	}{
		{name: "the lab's own event"},
		{name: "the Stripe fixture", file: "stripe-invoice-finalized.json"},
		{name: "the Adyen notification", file: "adyen-authorisation.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given the payload, as `hookline lab --payload` loads it
			p, err := lab.SizedPayload(0)
			if tt.file != "" {
				p, err = lab.LoadPayload(filepath.Join("..", "..", "..", "testdata", "payloads", tt.file), 0)
			}
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			// When the lab offers it for a few seconds, idempotency on
			rep, err := lab.Run(context.Background(), lab.Config{Name: "payload", Rate: 40, Duration: 2 * time.Second,
				Idempotency: true, Seed: 1, Burst: 100, Drain: 20 * time.Second, Payload: p})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			// Then every accepted webhook is charged once
			if rep.Accepted == 0 || rep.Charged != rep.Accepted || rep.Duplicates != 0 || rep.DeadLettered != 0 || rep.Lost != 0 {
				t.Fatalf("%s: accepted %d, charged %d, duplicates %d, dead-lettered %d, lost %d: want every accepted webhook charged once",
					rep.Payload, rep.Accepted, rep.Charged, rep.Duplicates, rep.DeadLettered, rep.Lost)
			}
		})
	}
}
