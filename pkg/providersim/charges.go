package providersim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hookline/hookline/pkg/provider"
)

// DeclineCustomer is a customer whose charges are always declined. Amounts
// ending in 02 (minor units) are declined too.
const DeclineCustomer = "cus_decline"

// Decline codes the simulator returns.
const (
	DeclineCardDeclined      = "card_declined"
	DeclineInsufficientFunds = "insufficient_funds"
	DeclineGeneric           = "generic_decline"
)

// Profile is how the simulated provider treats idempotency keys. The
// payment worker must be safe against each of them (docs/provider-contract.md).
type Profile int

// Profiles. The zero value ignores keys, the most hostile.
const (
	// ProfileIgnoresKeys executes every request, whatever its key. Only the
	// lookup by key (consistent after the lookup lag) tells what happened.
	ProfileIgnoresKeys Profile = iota
	// ProfileHonoursKeys saves the first result for a key, errors included,
	// and replays it for every later request with that key (Stripe API v1).
	// A request whose key is in flight gets 409 idempotency_key_in_use.
	ProfileHonoursKeys
	// ProfileReplaysSuccesses saves only successful charges: a request
	// after a decline or an error executes again (Checkout.com style). A
	// request whose key is in flight gets 409.
	ProfileReplaysSuccesses
)

func (p Profile) String() string {
	switch p {
	case ProfileHonoursKeys:
		return "honours_keys"
	case ProfileReplaysSuccesses:
		return "replays_successes"
	default:
		return "ignores_keys"
	}
}

// Profiles lists every profile, for tests that run against each.
var Profiles = []Profile{ProfileHonoursKeys, ProfileReplaysSuccesses, ProfileIgnoresKeys}

// ParseProfile returns the profile named by s (its String form).
func ParseProfile(s string) (Profile, error) {
	for _, p := range Profiles {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown profile %q (honours_keys, replays_successes, ignores_keys)", ErrInvalidConfig, s)
}

// entry is one charge made, with when it was committed.
type entry struct {
	charge provider.Charge
	at     time.Time
}

// answer is a saved response, replayed for a key.
type answer struct {
	status int
	body   any
	req    provider.ChargeRequest
}

// chargeBook holds every charge made.
type chargeBook struct {
	mu        sync.Mutex
	all       []entry
	byKey     map[string]int // index in all of the first charge made with a key
	saved     map[string]answer
	inFlight  map[string]int
	byEvent   map[string]int
	succeeded map[string]int
}

func (b *chargeBook) init() {
	b.byKey = make(map[string]int)
	b.saved = make(map[string]answer)
	b.inFlight = make(map[string]int)
	b.byEvent = make(map[string]int)
	b.succeeded = make(map[string]int)
}

// ChargeCount returns how many charges were made for eventID, declined ones
// included.
func (s *Sim) ChargeCount(eventID string) int {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	return s.charges.byEvent[eventID]
}

// SucceededCount returns how many successful charges were made for
// eventID: money taken from the customer.
func (s *Sim) SucceededCount(eventID string) int {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	return s.charges.succeeded[eventID]
}

// TotalCharges returns how many charges were made.
func (s *Sim) TotalCharges() int {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	return len(s.charges.all)
}

// Duplicates returns the sum over events of (charges - 1), declined ones
// included: 0 when every event was charged at most once.
func (s *Sim) Duplicates() int {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	return len(s.charges.all) - len(s.charges.byEvent)
}

// DuplicateCharges returns the sum over events of (successful charges - 1)
// for events charged more than once: customers charged twice.
func (s *Sim) DuplicateCharges() int {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	n := 0
	for _, c := range s.charges.succeeded {
		n += max(c-1, 0)
	}
	return n
}

// Charges returns a copy of every charge made, in order.
func (s *Sim) Charges() []provider.Charge {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	out := make([]provider.Charge, len(s.charges.all))
	for i, e := range s.charges.all {
		out[i] = e.charge
	}
	return out
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

// commit makes a charge for req under key and saves the answer for the key
// as the profile says. forceDecline declines it whatever the request.
func (s *Sim) commit(key string, req provider.ChargeRequest, forceDecline bool) provider.Charge {
	b := &s.charges
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := provider.Charge{
		ID:             fmt.Sprintf("ch_%08d", len(b.all)+1),
		Status:         provider.StatusSucceeded,
		Amount:         req.Amount,
		Currency:       req.Currency,
		Customer:       req.Customer,
		IdempotencyKey: key,
		EventID:        req.EventID,
	}
	if s.normalise.Load() {
		ch.Currency = strings.ToLower(ch.Currency)
	}
	if code := decline(req); code != "" || forceDecline {
		ch.Status, ch.DeclineCode = provider.StatusDeclined, code
		if code == "" {
			ch.DeclineCode = DeclineGeneric
		}
	}
	b.all = append(b.all, entry{charge: ch, at: time.Now()})
	if _, ok := b.byKey[key]; !ok && key != "" {
		b.byKey[key] = len(b.all) - 1
	}
	b.byEvent[req.EventID]++
	if ch.Status == provider.StatusSucceeded {
		b.succeeded[req.EventID]++
	}
	status, body := s.chargeAnswer(ch, forceDecline)
	s.saveLocked(key, req, status, body)
	return ch
}

// saveLocked saves an answer for key when the profile keeps it.
func (s *Sim) saveLocked(key string, req provider.ChargeRequest, status int, body any) {
	if key == "" {
		return
	}
	if _, ok := s.charges.saved[key]; ok {
		return
	}
	switch s.Profile() {
	case ProfileHonoursKeys:
	case ProfileReplaysSuccesses:
		if status != http.StatusOK {
			return
		}
	default:
		return
	}
	s.charges.saved[key] = answer{status: status, body: body, req: req}
}

// chargeAnswer is the status and body that answer a charge.
func (s *Sim) chargeAnswer(ch provider.Charge, errorBody bool) (int, any) {
	if ch.Status != provider.StatusDeclined {
		return http.StatusOK, ch
	}
	if !errorBody && !s.declineErrorBody {
		return http.StatusPaymentRequired, ch
	}
	return http.StatusPaymentRequired, struct {
		Error cardError `json:"error"`
	}{cardError{Type: "card_error", Code: "card_declined", DeclineCode: ch.DeclineCode, Charge: ch.ID, Message: "Your card was declined."}}
}

// cardError is a Stripe-style decline: an error object, not a charge.
type cardError struct {
	Type        string `json:"type"`
	Code        string `json:"code"`
	DeclineCode string `json:"decline_code,omitempty"`
	Charge      string `json:"charge,omitempty"`
	Message     string `json:"message"`
}

// InFlight returns how many charge requests are being handled now.
func (s *Sim) InFlight() int { return int(s.inFlight.Load()) }

func (s *Sim) handleCreateCharge(w http.ResponseWriter, r *http.Request) {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	if !s.authorized(w, r) {
		return
	}
	req, ok := readCharge(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	if !s.delay(ctx) {
		return // the client gave up during the latency: nothing happened
	}
	key := r.Header.Get("Idempotency-Key")
	if s.keyed(key) {
		done, release := s.enterKey(w, key, req)
		if done {
			return
		}
		defer release()
	}
	f := s.nextFault(key)
	if !f.Kind.commits() {
		s.failBeforeCommit(w, r, key, req, f)
		return
	}
	if f.Kind == FaultKeyInUse {
		s.commitLater(key, req, f.delay())
		writeError(w, http.StatusConflict, "idempotency_error", "idempotency_key_in_use",
			"another request with this idempotency key is in progress")
		return
	}
	if f.Kind == FaultSlowCommit {
		s.pending.Add(1)
		defer s.pending.Done()
		s.sleep(f.delay()) // the commit lands whether or not the client waits
	} else if ctx.Err() != nil {
		return // the client hung up before the charge was made
	}
	ch := s.commit(key, req, f.Kind == FaultDeclineErrorBody)
	s.log.InfoContext(ctx, "charge", "id", ch.ID, "event", req.EventID, "key", key, "status", ch.Status, "fault", f.Kind.String())
	s.answerAfterCommit(w, r, ch, f)
}

// readCharge reads and validates a charge request, answering 400 when it
// is not one.
func readCharge(w http.ResponseWriter, r *http.Request) (provider.ChargeRequest, bool) {
	// Reading the body to its end lets the server notice a client that
	// hangs up while the request is held.
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "body", "request body unreadable or too large")
		return provider.ChargeRequest{}, false
	}
	var req provider.ChargeRequest
	if err := json.Unmarshal(data, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "json", "request body is not a charge")
		return req, false
	}
	if err := req.Validate(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_missing", err.Error())
		return req, false
	}
	return req, true
}

// keyed reports whether the profile looks at key at all.
func (s *Sim) keyed(key string) bool { return key != "" && s.Profile() != ProfileIgnoresKeys }

// enterKey applies the key rules of the keyed profiles: a key in flight
// gets 409, a saved answer is replayed, a key reused for other parameters
// gets 400. Otherwise the key is marked in flight until release is called.
func (s *Sim) enterKey(w http.ResponseWriter, key string, req provider.ChargeRequest) (done bool, release func()) {
	b := &s.charges
	b.mu.Lock()
	defer b.mu.Unlock()
	if saved, ok := b.saved[key]; ok {
		if saved.req != req {
			writeError(w, http.StatusBadRequest, "idempotency_error", "key_reused",
				"keys for idempotent requests can only be used with the same parameters")
			return true, nil
		}
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, saved.status, saved.body)
		return true, nil
	}
	if b.inFlight[key] > 0 {
		writeError(w, http.StatusConflict, "idempotency_error", "idempotency_key_in_use",
			"another request with this idempotency key is in progress")
		return true, nil
	}
	b.inFlight[key]++
	return false, func() { s.leaveKey(key) }
}

func (s *Sim) leaveKey(key string) {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	if s.charges.inFlight[key]--; s.charges.inFlight[key] <= 0 {
		delete(s.charges.inFlight, key)
	}
}

// failBeforeCommit answers a fault that never makes the charge.
func (s *Sim) failBeforeCommit(w http.ResponseWriter, r *http.Request, key string, req provider.ChargeRequest, f Fault) {
	switch f.Kind {
	case FaultServerError:
		status := f.Status
		if status == 0 {
			status = http.StatusServiceUnavailable
		}
		body := apiErrorBody("api_error", "injected", "injected server error")
		s.charges.mu.Lock()
		s.saveLocked(key, req, status, body)
		s.charges.mu.Unlock()
		writeJSON(w, status, body)
	case FaultRateLimit:
		switch f.RetryAfter {
		case "":
			w.Header().Set("Retry-After", "1")
		case "-":
		default:
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		writeError(w, http.StatusTooManyRequests, "rate_limit_error", "injected", "too many requests")
	case FaultTimeoutBeforeCharge:
		if s.hold(r.Context(), f.delay()) {
			writeError(w, http.StatusServiceUnavailable, "api_error", "injected", "timed out before charging")
		}
	case FaultReset:
		hangUp(w, true)
	}
}

// commitLater makes the charge after d in the background, holding the key
// in flight until then: the first of two requests with one key.
func (s *Sim) commitLater(key string, req provider.ChargeRequest, d time.Duration) {
	if s.keyed(key) {
		s.charges.mu.Lock()
		s.charges.inFlight[key]++
		s.charges.mu.Unlock()
	}
	s.pending.Add(1)
	go func() {
		defer s.pending.Done()
		s.sleep(d)
		s.commit(key, req, false)
		if s.keyed(key) {
			s.leaveKey(key)
		}
	}()
}

// answerAfterCommit answers a request whose charge was made, or loses the
// answer as the fault says.
func (s *Sim) answerAfterCommit(w http.ResponseWriter, r *http.Request, ch provider.Charge, f Fault) {
	switch f.Kind {
	case FaultTimeoutAfterCharge:
		if !s.hold(r.Context(), f.delay()) {
			return
		}
	case FaultDropAfterCharge:
		hangUp(w, false)
		return
	case FaultCommitThenError:
		status := f.Status
		if status == 0 {
			status = http.StatusBadGateway
		}
		writeError(w, status, "api_error", "bad_gateway", "upstream answered late")
		return
	case FaultSlowCommit:
		if r.Context().Err() != nil {
			return
		}
	}
	status, body := s.chargeAnswer(ch, f.Kind == FaultDeclineErrorBody)
	writeJSON(w, status, body)
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
	ch, ok := s.lookup(key)
	if !ok {
		writeError(w, http.StatusNotFound, "invalid_request_error", "resource_missing", "no charge with that idempotency key")
		return
	}
	writeJSON(w, http.StatusOK, ch)
}

// lookup returns the first charge made with key, once the lookup lag has
// passed since it was committed.
func (s *Sim) lookup(key string) (provider.Charge, bool) {
	b := &s.charges
	b.mu.Lock()
	defer b.mu.Unlock()
	i, ok := b.byKey[key]
	if !ok {
		return provider.Charge{}, false
	}
	e := b.all[i]
	if time.Since(e.at) < time.Duration(s.lookupLag.Load()) {
		return provider.Charge{}, false
	}
	return e.charge, true
}
