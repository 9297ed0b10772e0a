package providersim

import (
	"net/http"
	"time"
)

// RetryAfterServed is one answer of a usage face that named a wait (a 429
// or a 5xx with Retry-After, or OpenAI's retry-after-ms), and the next
// call of the same endpoint: what a test reads to prove that no client
// called again before the wait ran out. Times are wall times, not the
// simulator's clock: a client waits a Retry-After by its own timer.
type RetryAfterServed struct {
	// Endpoint is the face's endpoint, as its faults name it (empty on
	// OpenAI's face, which has one for all).
	Endpoint string `json:"endpoint,omitempty"`
	Status   int    `json:"status"`
	// At is when the call that got the answer arrived; Wait is the wait
	// the answer named, as its header wrote it.
	At   time.Time `json:"at"`
	Wait Duration  `json:"wait"`
	// Next is when the endpoint's next call arrived, and Waited how long
	// after At (by the monotonic clock); zero while none has come.
	Next   time.Time `json:"next,omitzero"`
	Waited Duration  `json:"waited,omitempty"`
}

// Early reports whether the next call came before the wait ran out.
func (r RetryAfterServed) Early() bool { return !r.Next.IsZero() && r.Waited < r.Wait }

// Duration is a time.Duration that JSON writes as a Go duration ("1.5s").
type Duration time.Duration

// MarshalText writes d as a Go duration.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a Go duration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// maxWaitRecords bounds a face's record of waits: a long local run under
// a rate limit keeps the latest.
const maxWaitRecords = 4096

// waitLog records the waits a face named and the call after each. Its
// owner ([usageFaults]) locks it.
type waitLog struct {
	served  []RetryAfterServed
	pending map[string][]int // endpoint → indexes in served with no next call yet
	dropped int              // records dropped from the front
}

// called records a call of ep that arrived at at: the next call of every
// wait ep named before.
func (l *waitLog) called(ep string, at time.Time) {
	for _, i := range l.pending[ep] {
		if i -= l.dropped; i >= 0 {
			r := &l.served[i]
			r.Next, r.Waited = at, Duration(at.Sub(r.At))
		}
	}
	delete(l.pending, ep)
}

// answered records an answer of ep with status that named wait, to the
// call that arrived at at.
func (l *waitLog) answered(ep string, status int, wait time.Duration, at time.Time) {
	if len(l.served) == maxWaitRecords {
		l.served = append(l.served[:0:0], l.served[1:]...)
		l.dropped++
	}
	if l.pending == nil {
		l.pending = map[string][]int{}
	}
	l.pending[ep] = append(l.pending[ep], l.dropped+len(l.served))
	l.served = append(l.served, RetryAfterServed{Endpoint: ep, Status: status, At: at, Wait: Duration(wait)})
}

// waitsServed returns the waits the face named so far, oldest first.
func (f *usageFaults) waitsServed() []RetryAfterServed {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]RetryAfterServed(nil), f.waits.served...)
}

// waitRoute serves GET p/waits: the waits the face named
// ([RetryAfterServed]).
func (f *usageFaults) waitRoute(mux *http.ServeMux, p string) {
	mux.HandleFunc("GET "+p+"/waits", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, f.waitsServed())
	})
}

// MeterRetryAfters returns the waits Stripe's meter face named and the
// call after each.
func (v *Sim) MeterRetryAfters() []RetryAfterServed { return v.core.meters.faults.waitsServed() }

// OpenAIRetryAfters returns the waits OpenAI's face named and the call
// after each.
func (v *Sim) OpenAIRetryAfters() []RetryAfterServed { return v.core.openai().faults.waitsServed() }

// RetryAfters returns the waits the face named and the call after each.
func (o *OpenMeter) RetryAfters() []RetryAfterServed { return o.faults.waitsServed() }
