package provider

import (
	"context"
	"math/rand/v2"
	"time"
)

// retryPolicy bounds the attempts of one call and the waits between them.
type retryPolicy struct {
	timeout     time.Duration
	maxAttempts int
	base        time.Duration
	max         time.Duration
}

func newPolicy(timeout time.Duration, attempts int, base, maxWait time.Duration) retryPolicy {
	p := retryPolicy{timeout: timeout, maxAttempts: attempts, base: base, max: maxWait}
	if p.timeout == 0 {
		p.timeout = DefaultTimeout
	}
	if p.maxAttempts == 0 {
		p.maxAttempts = DefaultMaxAttempts
	}
	if p.base == 0 {
		p.base = DefaultBaseBackoff
	}
	if p.max == 0 {
		p.max = DefaultMaxBackoff
	}
	if p.base > p.max {
		p.base = p.max
	}
	return p
}

// backoff returns the wait after the given failed attempt (1-based):
// exponential growth capped at max, with equal jitter so that the wait lies
// in [d/2, d].
func (p retryPolicy) backoff(attempt int) time.Duration {
	d := p.base
	for i := 1; i < attempt && d < p.max; i++ {
		d *= 2
	}
	if d > p.max {
		d = p.max
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// wait decides the pause before the next attempt. It returns false when the
// caller should stop now: the provider asked for longer than max, or the
// wait would run past the context's deadline.
func (p retryPolicy) wait(ctx context.Context, attempt int, asked time.Duration) (time.Duration, bool) {
	if asked > p.max {
		return 0, false
	}
	d := p.backoff(attempt)
	if asked > d {
		d = asked
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
		return 0, false
	}
	return d, true
}

// sleep pauses for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
