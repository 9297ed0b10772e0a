package providersim

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// FaultKind names a failure of POST /v1/charges.
type FaultKind int

// Fault kinds. The first four never make a charge; the last two make the
// charge and then lose the answer.
const (
	// FaultNone injects nothing.
	FaultNone FaultKind = iota
	// FaultServerError answers [Fault.Status] (default 503) without charging.
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
	default:
		return "none"
	}
}

// DefaultFaultDelay is how long a timeout fault holds a request whose
// client does not hang up first.
const DefaultFaultDelay = 30 * time.Second

// Fault is one programmed failure.
type Fault struct {
	Kind FaultKind
	// Status is the answer of [FaultServerError]. Default 503.
	Status int
	// RetryAfter is the exact Retry-After header of [FaultRateLimit]:
	// seconds ("2") or an HTTP date. Default "1"; "-" sends none.
	RetryAfter string
	// Delay is how long a timeout fault holds the request. Default
	// [DefaultFaultDelay]; the hold ends early when the client hangs up.
	Delay time.Duration
}

func (f Fault) delay() time.Duration {
	if f.Delay > 0 {
		return f.Delay
	}
	return DefaultFaultDelay
}

// faultPlan holds the programmed faults.
type faultPlan struct {
	mu       sync.Mutex
	queue    []Fault
	rate     float64
	rateF    Fault
	injected map[FaultKind]int
}

// InjectFaults makes the next n charge requests fail with f, after any
// faults queued before.
func (s *Sim) InjectFaults(n int, f Fault) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	for range n {
		s.faults.queue = append(s.faults.queue, f)
	}
}

// SetFaultRate makes each charge request that has no queued fault fail with
// f with probability p, drawn from the seeded random source. p = 0 stops it.
func (s *Sim) SetFaultRate(p float64, f Fault) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.rate = min(max(p, 0), 1)
	s.faults.rateF = f
}

// ClearFaults drops every queued fault and the fault rate.
func (s *Sim) ClearFaults() {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.queue = nil
	s.faults.rate = 0
}

// FaultsInjected returns how many faults of each kind fired.
func (s *Sim) FaultsInjected() map[FaultKind]int {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	out := make(map[FaultKind]int, len(s.faults.injected))
	for k, v := range s.faults.injected {
		out[k] = v
	}
	return out
}

// nextFault picks the fault for one charge request.
func (s *Sim) nextFault() Fault {
	p := &s.faults
	p.mu.Lock()
	var f Fault
	switch {
	case len(p.queue) > 0:
		f, p.queue = p.queue[0], p.queue[1:]
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
