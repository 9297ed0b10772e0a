package idempotencytest

import (
	"time"

	"github.com/hookline/hookline/pkg/local/testkit"
)

// Clock is a manual clock for [idempotency.Config.Now] ([testkit.ManualClock]).
// It is safe for concurrent use.
type Clock = testkit.ManualClock

// NewClock returns a clock standing at start.
func NewClock(start time.Time) *Clock { return testkit.NewManualClock(start) }
