package providersim

import (
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// FaultKind names a failure of POST /v1/charges.
type FaultKind int

// Fault kinds. Some never execute the charge; others execute it and then
// lose or hide the answer, which is what makes an outcome unknown.
const (
	// FaultNone injects nothing.
	FaultNone FaultKind = iota
	// FaultServerError answers [Fault.Status] (default 503) without
	// charging. Under [ProfileHonoursKeys] the answer is the key's saved
	// result and is replayed.
	FaultServerError
	// FaultRateLimit answers 429 with [Fault.RetryAfter] without charging.
	FaultRateLimit
	// FaultTimeoutBeforeCharge holds the request for [Fault.Delay] (or until
	// the client hangs up) and then answers 503, without charging.
	FaultTimeoutBeforeCharge
	// FaultReset resets the TCP connection without charging or answering.
	FaultReset
	// FaultTimeoutAfterCharge makes the charge, then holds the answer for
	// [Fault.Delay] or until the client hangs up.
	FaultTimeoutAfterCharge
	// FaultDropAfterCharge makes the charge, then closes the connection
	// without answering: the client sees EOF.
	FaultDropAfterCharge
	// FaultCommitThenError makes the charge, then answers [Fault.Status]
	// (default 502), as a load balancer in front of the provider does when
	// the backend answered too late.
	FaultCommitThenError
	// FaultSlowCommit holds the request for [Fault.Delay] whether or not the
	// client is still there, then makes the charge: a commit that lands
	// after the client gave up. The delay must stay within the provider's
	// settle horizon for the contract to hold.
	FaultSlowCommit
	// FaultDeclineErrorBody declines the charge with a 402 whose body is a
	// Stripe-style error object ({"error":{"type":"card_error",...}}), not
	// a charge. The declined charge is recorded, as Stripe records it.
	FaultDeclineErrorBody
	// FaultKeyInUse answers 409 (idempotency_key_in_use) at once, while a
	// request with the same key is still in flight and commits the charge
	// after [Fault.Delay].
	FaultKeyInUse
)

func (k FaultKind) String() string {
	switch k {
	case FaultServerError:
		return "server_error"
	case FaultRateLimit:
		return "rate_limit"
	case FaultTimeoutBeforeCharge:
		return "timeout_before_charge"
	case FaultReset:
		return "reset"
	case FaultTimeoutAfterCharge:
		return "timeout_after_charge"
	case FaultDropAfterCharge:
		return "drop_after_charge"
	case FaultCommitThenError:
		return "commit_then_error"
	case FaultSlowCommit:
		return "slow_commit"
	case FaultDeclineErrorBody:
		return "decline_error_body"
	case FaultKeyInUse:
		return "key_in_use"
	default:
		return "none"
	}
}

// commits reports whether the fault lets the charge be made.
func (k FaultKind) commits() bool {
	switch k {
	case FaultServerError, FaultRateLimit, FaultTimeoutBeforeCharge, FaultReset:
		return false
	}
	return true
}

// DefaultFaultDelay is how long a timeout fault holds a request whose
// client does not hang up first.
const DefaultFaultDelay = 30 * time.Second

// Fault is one programmed failure.
type Fault struct {
	Kind FaultKind
	// Status is the answer of [FaultServerError] (default 503) and of
	// [FaultCommitThenError] (default 502).
	Status int
	// RetryAfter is the exact Retry-After header of [FaultRateLimit]:
	// seconds ("2") or an HTTP date. Default "1"; "-" sends none.
	RetryAfter string
	// Body, when set, replaces the JSON error body of [FaultServerError]
	// and [FaultCommitThenError] with this text, as a proxy's HTML error
	// page does.
	Body string
	// Delay is how long a timeout fault holds the request, or how late a
	// slow or in-flight commit lands. Default [DefaultFaultDelay]; a
	// timeout's hold ends early when the client hangs up, a commit's never.
	Delay time.Duration
}

func (f Fault) delay() time.Duration {
	if f.Delay > 0 {
		return f.Delay
	}
	return DefaultFaultDelay
}

// body is the fault's error body: [Fault.Body] as text, or a JSON error.
func (f Fault) body(typ, code, msg string) any {
	if f.Body != "" {
		return rawBody(f.Body)
	}
	return apiErrorBody(typ, code, msg)
}

// rawBody is an answer body written as it is, not as JSON.
type rawBody string

// writeBody writes a rawBody as text/html and anything else as JSON.
func writeBody(w http.ResponseWriter, status int, body any) {
	raw, ok := body.(rawBody)
	if !ok {
		writeJSON(w, status, body)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, string(raw))
}

// FaultFunc picks the fault for one charge request: the idempotency key
// and the 1-based number of requests seen with that key so far. Tests use
// it to make fault schedules that depend only on a seed and the request,
// never on the order in which concurrent requests arrive.
type FaultFunc func(key string, n int) Fault

// faultPlan holds the programmed faults.
type faultPlan struct {
	mu       sync.Mutex
	queue    []Fault
	rate     float64
	rateF    Fault
	fn       FaultFunc
	seen     map[string]int
	injected map[FaultKind]int
}

// InjectFaults makes the next n charge requests fail with f, after any
// faults queued before.
func (s *core) InjectFaults(n int, f Fault) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	for range n {
		s.faults.queue = append(s.faults.queue, f)
	}
}

// SetFaultRate makes each charge request that has no queued fault fail with
// f with probability p, drawn from the seeded random source. p = 0 stops it.
func (s *core) SetFaultRate(p float64, f Fault) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.rate = min(max(p, 0), 1)
	s.faults.rateF = f
}

// SetFaultFunc makes fn pick the fault of every charge request that has no
// queued fault; nil removes it. It takes precedence over a fault rate.
func (s *core) SetFaultFunc(fn FaultFunc) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.fn = fn
}

// ClearFaults drops every queued fault, the fault rate and the fault
// function.
func (s *core) ClearFaults() {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.queue = nil
	s.faults.rate = 0
	s.faults.fn = nil
}

// FaultsInjected returns how many faults of each kind fired.
func (s *core) FaultsInjected() map[FaultKind]int {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	out := make(map[FaultKind]int, len(s.faults.injected))
	for k, v := range s.faults.injected {
		out[k] = v
	}
	return out
}

// nextFault picks the fault for one charge request made with key.
func (s *core) nextFault(key string) Fault {
	p := &s.faults
	p.mu.Lock()
	if p.seen == nil {
		p.seen = make(map[string]int)
	}
	p.seen[key]++
	n := p.seen[key]
	var f Fault
	switch {
	case len(p.queue) > 0:
		f, p.queue = p.queue[0], p.queue[1:]
	case p.fn != nil:
		f = p.fn(key, n)
	case p.rate > 0:
		rate, rf := p.rate, p.rateF
		p.mu.Unlock()
		hit := s.float() < rate
		p.mu.Lock()
		if hit {
			f = rf
		}
	}
	if f.Kind != FaultNone {
		if p.injected == nil {
			p.injected = make(map[FaultKind]int)
		}
		p.injected[f.Kind]++
	}
	p.mu.Unlock()
	return f
}

// hangUp ends the connection without an answer. With reset it sends a TCP
// RST instead of a FIN.
func hangUp(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (HTTP/2 or a recorder): the closest is a 502
		// without a body.
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
