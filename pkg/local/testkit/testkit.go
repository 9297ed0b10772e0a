package testkit

import (
	"sync"
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

// ManualClock is a clock that moves only when told to. It is safe for
// concurrent use; pass its Now method wherever a clock is configured.
type ManualClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewManualClock returns a clock that reads t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{t: t} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}
