package providersim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
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

// entry is one charge made, with when it was committed and the metadata
// its request carried (Stripe's face only).
type entry struct {
	charge provider.Charge
	at     time.Time
	meta   map[string]string
	desc   string
}

// answer is a saved response, replayed for a key. A charge's answer is
// kept as the charge and rendered by the face that replays it; an error's
// as its body.
type answer struct {
	status    int
	body      any
	req       provider.ChargeRequest
	meta      map[string]string
	charge    *provider.Charge
	errorBody bool
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
	byMeta    map[string][]int // "name\x00value" -> indexes in all
	forgotten int              // charges dropped from the front of all (retain.go)
}

func (b *chargeBook) init() {
	b.byKey = make(map[string]int)
	b.byMeta = make(map[string][]int)
	b.saved = make(map[string]answer)
	b.inFlight = make(map[string]int)
	b.byEvent = make(map[string]int)
	b.succeeded = make(map[string]int)
}

// ChargeCount returns how many charges were made for eventID, declined ones
// included.
func (s *core) ChargeCount(eventID string) int {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	return s.charges.byEvent[eventID]
}

// SucceededCount returns how many successful charges were made for
// eventID: money taken from the customer.
func (s *core) SucceededCount(eventID string) int {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	return s.charges.succeeded[eventID]
}

// TotalCharges returns how many charges were made.
func (s *core) TotalCharges() int {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	return len(s.charges.all)
}

// Duplicates returns the sum over events of (charges - 1), declined ones
// included: 0 when every event was charged at most once.
func (s *core) Duplicates() int {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	return len(s.charges.all) - len(s.charges.byEvent)
}

// DuplicateCharges returns the sum over events of (successful charges - 1)
// for events charged more than once: customers charged twice.
func (s *core) DuplicateCharges() int {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	n := 0
	for _, c := range s.charges.succeeded {
		n += max(c-1, 0)
	}
	return n
}

// Charges returns a copy of every charge made, in order.
func (s *core) Charges() []provider.Charge {
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

// commit makes a charge for the request under key and saves the answer
// for the key as the profile says. forceDecline declines it whatever the
// request.
func (s *core) commit(c createCall, forceDecline bool) provider.Charge {
	b := &s.charges
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := s.newCharge(b.forgotten+len(b.all)+1, c.key, c.req, forceDecline)
	e := entry{charge: ch, at: s.now(), meta: c.meta, desc: c.req.Description}
	b.all = append(b.all, e)
	i := len(b.all) - 1
	if _, ok := b.byKey[c.key]; !ok && c.key != "" {
		b.byKey[c.key] = i
	}
	for name, v := range c.meta {
		b.byMeta[metaKey(name, v)] = append(b.byMeta[metaKey(name, v)], i)
	}
	b.byEvent[c.req.EventID]++
	if ch.Status == provider.StatusSucceeded {
		b.succeeded[c.req.EventID]++
	}
	status, _ := c.face.render(e, forceDecline)
	s.saveLocked(c, answer{status: status, charge: &ch, errorBody: forceDecline})
	return ch
}

// newCharge is the n-th charge, made for req under key: declined as the
// request or forceDecline says, waiting for the customer when the
// customer is [RequiresActionCustomer], succeeded otherwise.
func (s *core) newCharge(n int, key string, req provider.ChargeRequest, forceDecline bool) provider.Charge {
	ch := provider.Charge{
		ID:             fmt.Sprintf("ch_%08d", n),
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
	switch code := decline(req); {
	case code != "" || forceDecline:
		ch.Status, ch.DeclineCode = provider.StatusDeclined, cmp.Or(code, DeclineGeneric)
	case req.Customer == RequiresActionCustomer:
		ch.Status = StatusRequiresAction
	}
	return ch
}

func metaKey(name, value string) string { return name + "\x00" + value }

// saveLocked saves a for the call's key when the profile keeps it.
func (s *core) saveLocked(c createCall, a answer) {
	if c.key == "" {
		return
	}
	if _, ok := s.charges.saved[c.key]; ok {
		return
	}
	switch s.Profile() {
	case ProfileHonoursKeys:
	case ProfileReplaysSuccesses:
		if a.status != http.StatusOK {
			return
		}
	default:
		return
	}
	a.req, a.meta = c.req, c.meta
	s.charges.saved[c.key] = a
}

// chargeAnswer is the status and body of hookline's API that answer a
// charge.
func (s *core) chargeAnswer(ch provider.Charge, errorBody bool) (int, any) {
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

// Creates returns how many charge requests arrived, on either API,
// whatever became of them.
func (s *core) Creates() int { return int(s.creates.Load()) }

// InFlight returns how many charge requests are being handled now.
func (s *core) InFlight() int { return int(s.inFlight.Load()) }

func (s *core) handleCreateCharge(w http.ResponseWriter, r *http.Request) {
	s.create(w, r, genericFace{s})
}

// MaxIdempotencyKeyLen is the longest Idempotency-Key either API takes:
// Stripe documents keys of up to 255 characters and refuses longer ones.
const MaxIdempotencyKeyLen = 255

// createCall is one create request, as its face read it.
type createCall struct {
	face face
	key  string
	req  provider.ChargeRequest
	meta map[string]string
}

// create runs one create request through the latency, the key rules of the
// profile and the programmed faults, and answers in the face's format.
func (s *core) create(w http.ResponseWriter, r *http.Request, f face) {
	s.creates.Add(1)
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	if !s.authorized(w, r) {
		return
	}
	req, meta, ok := f.read(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	if !s.delay(ctx) {
		return // the client gave up during the latency: nothing happened
	}
	c := createCall{face: f, key: r.Header.Get("Idempotency-Key"), req: req, meta: meta}
	if len(c.key) > MaxIdempotencyKeyLen {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "idempotency_key_too_long",
			fmt.Sprintf("idempotency keys can be at most %d characters long", MaxIdempotencyKeyLen))
		return
	}
	if s.keyed(c.key) {
		done, release := s.enterKey(w, c)
		if done {
			return
		}
		defer release()
	}
	fault := s.nextFault(c.key)
	if !fault.Kind.commits() {
		s.failBeforeCommit(w, r, c, fault)
		return
	}
	if fault.Kind == FaultKeyInUse {
		s.commitLater(c, fault.delay())
		writeError(w, http.StatusConflict, "idempotency_error", "idempotency_key_in_use",
			"another request with this idempotency key is in progress")
		return
	}
	if fault.Kind == FaultSlowCommit {
		s.pending.Add(1)
		defer s.pending.Done()
		s.sleep(fault.delay()) // the commit lands whether or not the client waits
	} else if ctx.Err() != nil {
		return // the client hung up before the charge was made
	}
	ch := s.commit(c, fault.Kind == FaultDeclineErrorBody)
	s.log.InfoContext(ctx, "charge", "id", ch.ID, "event", req.EventID, "key", c.key, "amount", ch.Amount, "currency", ch.Currency,
		"status", ch.Status, "fault", fault.Kind.String())
	s.answerAfterCommit(w, r, c, ch, fault)
}

// readCharge reads and validates a charge request of hookline's API,
// answering 400 when it is not one.
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
func (s *core) keyed(key string) bool { return key != "" && s.Profile() != ProfileIgnoresKeys }

// enterKey applies the key rules of the keyed profiles: a key in flight
// gets 409, a saved answer is replayed, a key reused for other parameters
// gets 400. Otherwise the key is marked in flight until release is called.
func (s *core) enterKey(w http.ResponseWriter, c createCall) (done bool, release func()) {
	b := &s.charges
	b.mu.Lock()
	defer b.mu.Unlock()
	if saved, ok := b.saved[c.key]; ok {
		if saved.req != c.req || !maps.Equal(saved.meta, c.meta) {
			writeError(w, http.StatusBadRequest, "idempotency_error", "key_reused",
				"keys for idempotent requests can only be used with the same parameters")
			return true, nil
		}
		w.Header().Set("Idempotent-Replayed", "true")
		s.replay(w, c.face, saved)
		return true, nil
	}
	if b.inFlight[c.key] > 0 {
		writeError(w, http.StatusConflict, "idempotency_error", "idempotency_key_in_use",
			"another request with this idempotency key is in progress")
		return true, nil
	}
	b.inFlight[c.key]++
	return false, func() { s.leaveKey(c.key) }
}

// replay answers with a saved answer, rendered by face when it is a
// charge's.
func (s *core) replay(w http.ResponseWriter, f face, a answer) {
	if a.charge == nil {
		writeBody(w, a.status, a.body)
		return
	}
	status, body := f.render(entry{charge: *a.charge, meta: a.meta, desc: a.req.Description}, a.errorBody)
	writeJSON(w, status, body)
}

func (s *core) leaveKey(key string) {
	s.charges.mu.Lock()
	defer s.charges.mu.Unlock()
	if s.charges.inFlight[key]--; s.charges.inFlight[key] <= 0 {
		delete(s.charges.inFlight, key)
	}
}

// failBeforeCommit answers a fault that never makes the charge.
func (s *core) failBeforeCommit(w http.ResponseWriter, r *http.Request, c createCall, f Fault) {
	switch f.Kind {
	case FaultServerError:
		status := cmp.Or(f.Status, http.StatusServiceUnavailable)
		body := f.body("api_error", "injected", "injected server error")
		s.charges.mu.Lock()
		s.saveLocked(c, answer{status: status, body: body})
		s.charges.mu.Unlock()
		writeBody(w, status, body)
	case FaultRateLimit:
		switch f.RetryAfter {
		case "":
			w.Header().Set("Retry-After", "1")
		case "-":
		default:
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		writeError(w, http.StatusTooManyRequests, "rate_limit_error", "rate_limit", "too many requests")
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
func (s *core) commitLater(c createCall, d time.Duration) {
	if s.keyed(c.key) {
		s.charges.mu.Lock()
		s.charges.inFlight[c.key]++
		s.charges.mu.Unlock()
	}
	s.pending.Add(1)
	go func() {
		defer s.pending.Done()
		s.sleep(d)
		s.commit(c, false)
		if s.keyed(c.key) {
			s.leaveKey(c.key)
		}
	}()
}

// answerAfterCommit answers a request whose charge was made, or loses the
// answer as the fault says.
func (s *core) answerAfterCommit(w http.ResponseWriter, r *http.Request, c createCall, ch provider.Charge, f Fault) {
	switch f.Kind {
	case FaultTimeoutAfterCharge:
		if !s.hold(r.Context(), f.delay()) {
			return
		}
	case FaultDropAfterCharge:
		hangUp(w, false)
		return
	case FaultCommitThenError:
		writeBody(w, cmp.Or(f.Status, http.StatusBadGateway), f.body("api_error", "bad_gateway", "upstream answered late"))
		return
	case FaultSlowCommit:
		if r.Context().Err() != nil {
			return
		}
	}
	status, body := c.face.render(entry{charge: ch, meta: c.meta, desc: c.req.Description}, f.Kind == FaultDeclineErrorBody)
	writeJSON(w, status, body)
}

func (s *core) handleLookupCharge(w http.ResponseWriter, r *http.Request) {
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
func (s *core) lookup(key string) (provider.Charge, bool) {
	b := &s.charges
	b.mu.Lock()
	defer b.mu.Unlock()
	i, ok := b.byKey[key]
	if !ok {
		return provider.Charge{}, false
	}
	e := b.all[i]
	if s.now().Sub(e.at) < time.Duration(s.lookupLag.Load()) {
		return provider.Charge{}, false
	}
	return e.charge, true
}
