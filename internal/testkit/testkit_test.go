package testkit_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testkit"
)

func TestEventuallyWaitsForTheCondition(t *testing.T) {
	var n atomic.Int32
	testkit.Eventually(t, 2*time.Second, "three checks", func() bool { return n.Add(1) >= 3 })
	if n.Load() != 3 {
		t.Fatalf("checked %d times, want 3", n.Load())
	}
}

// failsNow records a Fatalf instead of stopping the test.
type failsNow struct {
	failed string
}

func (f *failsNow) Helper() {}
func (f *failsNow) Fatalf(format string, args ...any) {
	f.failed = format
}

func TestEventuallyFailsAfterItsLimit(t *testing.T) {
	f := &failsNow{}
	start := time.Now()
	testkit.Eventually(f, 120*time.Millisecond, "never", func() bool { return f.failed != "" })
	if f.failed == "" || time.Since(start) < 120*time.Millisecond {
		t.Fatalf("failed %q after %s", f.failed, time.Since(start))
	}
}

func TestManualClockMovesOnlyWhenTold(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	c := testkit.NewManualClock(t0)
	c.Advance(time.Minute)
	if got := c.Now(); !got.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after Advance: %s", got)
	}
	c.Set(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("after Set: %s", got)
	}
}
