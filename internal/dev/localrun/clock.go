package localrun

import (
	"sync/atomic"
	"time"
)

// Clock is the wall clock moved forward on demand: the spend side of a
// local run (ledger, outbox, spend worker, reconciler) and the provider
// simulator read it, so that a drill passes a settle horizon of hours in
// a moment while everything else keeps wall time. It never goes back.
type Clock struct {
	ahead atomic.Int64 // nanoseconds ahead of the wall clock
}

// Now is the wall clock plus every advance so far.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

// Advance moves the clock forward by d (a negative d is ignored).
func (c *Clock) Advance(d time.Duration) {
	if d > 0 {
		c.ahead.Add(int64(d))
	}
}
