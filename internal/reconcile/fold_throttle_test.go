package reconcile_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
)

// TestRunFoldsThroughAThrottleTheSDKGaveUpOn: a ledger transaction
// throttled on each of the SDK's attempts fails its record, and a failed
// record fails the whole run, whose cursor then stays: the next run folds
// the whole overlap again, and under a throttle that lasts it never gets
// through. The fold retries such a record instead (contract 12: a
// throttle is retried), so one throttle does not throw away a run.
func TestRunFoldsThroughAThrottleTheSDKGaveUpOn(t *testing.T) {
	t.Parallel()
	// Given the run's first ledger transaction throttled on all three of
	// the SDK's attempts, and only that one,
	var armed atomic.Bool
	var calls atomic.Int64
	f := newFixture(t, options{faults: localaws.Faults{Seed: 1, Rates: map[string]float64{localaws.FaultDDBThrottle: 1},
		Match: func(r localaws.FaultRequest) bool {
			return armed.Load() && r.Operation == "TransactWriteItems" && calls.Add(1) <= 3
		}}})
	f.workload(t, "wl-throttled", 1_000_000)
	for i := range 20 {
		f.usage(t, fmt.Sprintf("ur_throttled_%02d", i), "wl-throttled", 5, t0.Add(-10*time.Minute), providersim.UsageOptions{Webhook: providersim.WebhookDrop})
	}
	// when one run folds the export,
	armed.Store(true)
	run := f.run(t)
	// then it folded every record, and each once.
	if got := f.total(t, "wl-throttled"); got != 100 {
		t.Fatalf("total %d after the run, want 100", got)
	}
	if calls.Load() < 3 {
		t.Fatalf("the throttle fired on %d attempts, want 3", calls.Load())
	}
	if run.CursorAfter.IsZero() {
		t.Fatal("the cursor did not move")
	}
}
