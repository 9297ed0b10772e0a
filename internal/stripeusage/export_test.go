package stripeusage

import (
	"time"

	"github.com/hookline/hookline/internal/paced"
)

// Seams for the tests of package stripeusage_test.

// SetClock makes r's limiter read now instead of the wall clock.
func SetClock(r *Reader, now func() time.Time) { r.now = now }

// SetJitter replaces r's full jitter draw.
func SetJitter(r *Reader, jitter func(ceiling time.Duration) time.Duration) { r.jitter = jitter }

// Settings is r's configuration with its defaults applied.
func Settings(r *Reader) Config { return r.cfg }

var (
	Sleep      = paced.Sleep
	FullJitter = paced.FullJitter
)
