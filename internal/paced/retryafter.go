package paced

import (
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RetryAfter is the wait a provider names in h, and whether it names one:
// OpenAI's retry-after-ms (a decimal count of milliseconds) first, else
// Retry-After as delta seconds (a decimal) or an HTTP date, measured from
// now. The wait lies in [0, cap]: a date in the past is 0, and a value
// past the cap, however large (99999999999 seconds, 1e300 ms, digits
// beyond any number), is the cap. A negative, empty or malformed value is
// no wait named.
func RetryAfter(h http.Header, now time.Time, cap time.Duration) (time.Duration, bool) {
	cap = max(cap, 0)
	if d, ok := count(h.Get("Retry-After-Ms"), time.Millisecond, cap); ok {
		return d, true
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if d, ok := count(v, time.Second, cap); ok {
		return d, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), cap), true
}

// count reads v, a non-negative decimal number of unit, as a wait of at
// most cap, computed in floating point so that no value overflows.
func count(v string, unit, cap time.Duration) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" || strings.ContainsAny(v, "+-_xXpPiInN") {
		return 0, false // signs, hex, Inf and NaN are not counts
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil && !math.IsInf(n, 1) { // ErrRange upward: beyond any number, so the cap
		return 0, false
	}
	f := n * float64(unit)
	if f >= float64(cap) {
		return cap, true
	}
	return time.Duration(f), true
}

// FullJitter draws a wait uniformly from [0, ceiling].
func FullJitter(ceiling time.Duration) time.Duration {
	if ceiling <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

// SeededJitter is [FullJitter] drawn from a source seeded with seed, so
// that a test sees the same waits on every run. It is safe for concurrent
// use.
func SeededJitter(seed uint64) func(ceiling time.Duration) time.Duration {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, seed))
	return func(ceiling time.Duration) time.Duration {
		if ceiling <= 0 {
			return 0
		}
		mu.Lock()
		defer mu.Unlock()
		return time.Duration(r.Int64N(int64(ceiling) + 1))
	}
}
