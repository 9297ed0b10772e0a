package localrun

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Errors of moving a [Clock].
var (
	// ErrClockBackwards is returned for a move that would take the clock
	// back: it only moves forward.
	ErrClockBackwards = errors.New("localrun: the clock only moves forward")
	// ErrClockTooFar is returned for a move past [MaxClockAhead].
	ErrClockTooFar = errors.New("localrun: the clock moves at most 10 years ahead of wall time")
)

// MaxClockAhead bounds how far ahead of wall time a [Clock] may be moved,
// so that a slip (720000h for 720h) is refused rather than run. The PayPal
// double's certificates are valid for a year from the run's start: past
// that, a paypal source stops verifying.
const MaxClockAhead = 10 * 365 * 24 * time.Hour

// Clock is the wall clock moved forward on demand: every function of a
// local run that reads the time (its app.Deps.Now), the provider
// simulator and the run's schedules read it, so that a drill or an
// operator passes a settle horizon or a billing period's end in a
// moment. It never goes back, and keeps ticking with wall time between
// moves. The local AWS keeps wall time: SQS visibility and DynamoDB's TTL
// expiry do not move.
//
// A move waits for the invocations in flight to end and holds new ones
// until it is done ([Clock.Hold]), so that no invocation sees the clock
// jump while it holds a lease it took by it.
type Clock struct {
	ahead atomic.Int64 // nanoseconds ahead of the wall clock
	// gate is held shared by each invocation and exclusively by a move.
	gate sync.RWMutex
	mu   sync.Mutex
	// moved is closed and replaced at each move.
	moved chan struct{}
}

// Now is the wall clock plus every advance so far.
func (c *Clock) Now() time.Time { return time.Now().Add(c.Ahead()) }

// Ahead is how far the clock is ahead of wall time.
func (c *Clock) Ahead() time.Duration { return time.Duration(c.ahead.Load()) }

// Advance moves the clock forward by d, as [Clock.Move] does; a d that
// Move refuses is ignored.
func (c *Clock) Advance(d time.Duration) { _, _ = c.Move(d) }

// Move moves the clock forward by d, refusing a d that is not positive
// ([ErrClockBackwards]) or that takes it past [MaxClockAhead]
// ([ErrClockTooFar]). It returns the clock's new reading.
func (c *Clock) Move(d time.Duration) (time.Time, error) {
	if d <= 0 {
		return time.Time{}, fmt.Errorf("%w: advance %s is not positive", ErrClockBackwards, d)
	}
	c.gate.Lock()
	if ahead := c.Ahead(); d > MaxClockAhead-ahead {
		c.gate.Unlock()
		return time.Time{}, fmt.Errorf("%w: %s ahead already, advance %s", ErrClockTooFar, ahead, d)
	}
	c.ahead.Add(int64(d))
	now := c.Now()
	c.gate.Unlock()
	c.notify()
	return now, nil
}

// Set moves the clock forward to t, refusing a t at or before its reading
// ([ErrClockBackwards]) or past [MaxClockAhead] ([ErrClockTooFar]).
func (c *Clock) Set(t time.Time) (time.Time, error) {
	c.gate.Lock()
	now := c.Now()
	if !t.After(now) {
		c.gate.Unlock()
		return time.Time{}, fmt.Errorf("%w: %s is not after the clock's %s", ErrClockBackwards,
			t.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))
	}
	if ahead := t.Sub(time.Now()); ahead > MaxClockAhead {
		c.gate.Unlock()
		return time.Time{}, fmt.Errorf("%w: %s is %s ahead", ErrClockTooFar, t.UTC().Format(time.RFC3339), ahead.Round(time.Hour))
	}
	c.ahead.Add(int64(t.Sub(now)))
	c.gate.Unlock()
	c.notify()
	return t, nil
}

// Hold marks an invocation in flight until the returned function is
// called: a move waits for it.
func (c *Clock) Hold() (release func()) {
	c.gate.RLock()
	return c.gate.RUnlock
}

// Moved returns a channel that is closed at the next move.
func (c *Clock) Moved() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.moved == nil {
		c.moved = make(chan struct{})
	}
	return c.moved
}

func (c *Clock) notify() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.moved != nil {
		close(c.moved)
		c.moved = nil
	}
}
