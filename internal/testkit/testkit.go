package testkit

import (
	"github.com/hookline/hookline/pkg/idempotency/idempotencytest"
	"time"
)

// TB is the part of testing.TB that [Eventually] uses; *testing.T,
// *testing.B and *testing.F satisfy it. (The package does not import
// testing, so the harness may use its clock in a binary.)
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// PollInterval is how often [Eventually] checks its condition.
const PollInterval = 50 * time.Millisecond

// Eventually waits until cond holds, checking every [PollInterval], and
// fails the test (naming what) if it does not within limit. Use it only for
// what happens asynchronously (an emulator applying a change, a worker
// draining a queue), never to hide a missing synchronisation.
func Eventually(t TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s", what, limit)
		}
		time.Sleep(PollInterval)
	}
}

// ManualClock is a clock that moves only when told to
// ([idempotencytest.Clock], which the public suite offers its users).
type ManualClock = idempotencytest.Clock

// NewManualClock returns a clock that reads t.
func NewManualClock(t time.Time) *ManualClock { return idempotencytest.NewClock(t) }
