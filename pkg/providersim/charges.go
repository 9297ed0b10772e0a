package providersim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/hookline/hookline/pkg/provider"
)

// DeclineCustomer is a customer whose charges are always declined. Amounts
// ending in 02 (minor units) are declined too.
const DeclineCustomer = "cus_decline"

// Decline codes the simulator returns.
const (
	DeclineCardDeclined      = "card_declined"
	DeclineInsufficientFunds = "insufficient_funds"
)

// chargeBook holds every charge made.
type chargeBook struct {
	mu      sync.Mutex
	all     []provider.Charge
	byKey   map[string]int // index in all of the first charge made with a key
	reqs    map[string]provider.ChargeRequest
	byEvent map[string]int
}

func (b *chargeBook) init() {
	b.byKey = make(map[string]int)
	b.reqs = make(map[string]provider.ChargeRequest)
	b.byEvent = make(map[string]int)
}

// ChargeCount returns how many charges were made for eventID, declined ones
// included.
func (s *Sim) ChargeCount(eventID string) int {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	return s.charges.byEvent[eventID]
}

// TotalCharges returns how many charges were made.
func (s *Sim) TotalCharges() int {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	return len(s.charges.all)
}

// Duplicates returns the sum over events of (charges - 1): 0 when every
// event was charged at most once.
func (s *Sim) Duplicates() int {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	return len(s.charges.all) - len(s.charges.byEvent)
}

// Charges returns a copy of every charge made, in order.
func (s *Sim) Charges() []provider.Charge {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	return append([]provider.Charge(nil), s.charges.all...)
}

// decline returns the decline code for req, or "" if it succeeds.
func decline(req provider.ChargeRequest) string {
	switch {
	case req.Customer == DeclineCustomer:
		return DeclineCardDeclined
	case req.Amount%100 == 2:
		return DeclineInsufficientFunds
	default:
		return ""
	}
}

// chargeOutcome is what one POST did to the book.
type chargeOutcome struct {
	charge   provider.Charge
	replayed bool
	conflict bool
	count    int
}

// charge makes a charge, or with honouring on returns the one made before
// under key.
func (s *Sim) charge(key string, req provider.ChargeRequest) chargeOutcome {
	b := &s.charges
	b.mu.Lock()
	defer b.mu.Unlock()
	if i, ok := b.byKey[key]; ok && key != "" && s.honour.Load() {
		if b.reqs[key] != req {
			return chargeOutcome{conflict: true}
		}
		return chargeOutcome{charge: b.all[i], replayed: true, count: b.byEvent[req.EventID]}
	}
	ch := provider.Charge{
		ID:             fmt.Sprintf("ch_%08d", len(b.all)+1),
		Status:         provider.StatusSucceeded,
		Amount:         req.Amount,
		Currency:       req.Currency,
		Customer:       req.Customer,
		IdempotencyKey: key,
		EventID:        req.EventID,
	}
	if code := decline(req); code != "" {
		ch.Status, ch.DeclineCode = provider.StatusDeclined, code
	}
	b.all = append(b.all, ch)
	if _, ok := b.byKey[key]; !ok && key != "" {
		b.byKey[key] = len(b.all) - 1
		b.reqs[key] = req
	}
	b.byEvent[req.EventID]++
	return chargeOutcome{charge: ch, count: b.byEvent[req.EventID]}
}

// InFlight returns how many charge requests are being handled now.
func (s *Sim) InFlight() int { return int(s.inFlight.Load()) }

func (s *Sim) handleCreateCharge(w http.ResponseWriter, r *http.Request) {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	if !s.authorized(w, r) {
		return
	}
	// Reading the body to its end lets the server notice a client that
	// hangs up while the request is held.
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "body", "request body unreadable or too large")
		return
	}
	var req provider.ChargeRequest
	if err := json.Unmarshal(data, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "json", "request body is not a charge")
		return
	}
	if err := req.Validate(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_missing", err.Error())
		return
	}
	ctx := r.Context()
	if !s.delay(ctx) {
		return // the client gave up during the latency: nothing happened
	}
	key := r.Header.Get("Idempotency-Key")
	f := s.nextFault()
	switch f.Kind {
	case FaultServerError:
		status := f.Status
		if status == 0 {
			status = http.StatusServiceUnavailable
		}
		writeError(w, status, "api_error", "injected", "injected server error")
		return
	case FaultRateLimit:
		switch f.RetryAfter {
		case "":
			w.Header().Set("Retry-After", "1")
		case "-":
		default:
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		writeError(w, http.StatusTooManyRequests, "rate_limit_error", "injected", "too many requests")
		return
	case FaultTimeoutBeforeCharge:
		if s.hold(ctx, f.delay()) {
			writeError(w, http.StatusServiceUnavailable, "api_error", "injected", "timed out before charging")
		}
		return
	case FaultReset:
		hangUp(w, true)
		return
	}
	if ctx.Err() != nil {
		return // the client hung up before the charge was made
	}
	out := s.charge(key, req)
	if out.conflict {
		writeError(w, http.StatusBadRequest, "idempotency_error", "key_reused",
			"keys for idempotent requests can only be used with the same parameters")
		return
	}
	if !out.replayed {
		s.log.InfoContext(ctx, "charge", "id", out.charge.ID, "event", req.EventID, "key", key,
			"count", out.count, "status", out.charge.Status)
	}
	switch f.Kind {
	case FaultTimeoutAfterCharge:
		if !s.hold(ctx, f.delay()) {
			return
		}
	case FaultDropAfterCharge:
		hangUp(w, false)
		return
	}
	if out.replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	status := http.StatusOK
	if out.charge.Status == provider.StatusDeclined {
		status = http.StatusPaymentRequired
	}
	writeJSON(w, status, out.charge)
}

func (s *Sim) handleLookupCharge(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	key := r.URL.Query().Get("idempotency_key")
	if key == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_missing", "idempotency_key is required")
		return
	}
	if !s.delay(r.Context()) {
		return
	}
	s.charges.mu.Lock()
	i, ok := s.charges.byKey[key]
	var ch provider.Charge
	if ok {
		ch = s.charges.all[i]
	}
	s.charges.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "invalid_request_error", "resource_missing", "no charge with that idempotency key")
		return
	}
	writeJSON(w, http.StatusOK, ch)
}
