package lab

import (
	"testing"
	"time"

	"github.com/hookline/hookline/internal/paymentworker"
)

// TestDrainCoversTheSettleHorizonWithFaults: with provider faults an
// ambiguous charge is retried only after the worker's settle time, so the
// drain must outlast it or settled-later events are counted lost.
func TestDrainCoversTheSettleHorizonWithFaults(t *testing.T) {
	settle := paymentworker.DefaultHorizon + paymentworker.DefaultClockSkew
	if d := (Config{FaultRate: 0.05}).withDefaults().Drain; d < settle+10*time.Second {
		t.Fatalf("drain %v with faults, want more than the settle time %v", d, settle)
	}
	if d := (Config{}).withDefaults().Drain; d != 30*time.Second {
		t.Fatalf("drain %v without faults, want 30s", d)
	}
	if d := (Config{FaultRate: 0.05, Drain: time.Second}).withDefaults().Drain; d != time.Second {
		t.Fatalf("an explicit drain became %v", d)
	}
}
