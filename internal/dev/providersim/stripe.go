package providersim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookline/hookline/pkg/provider"
)

// Customers with special behaviour on both charge APIs.
const (
	// RequiresActionCustomer's charges wait for the customer to
	// authenticate (Stripe's requires_action) until [Charges.Authenticate].
	RequiresActionCustomer = "cus_requires_action"
	// NoPaymentMethodCustomer has no default payment method on Stripe's
	// face.
	NoPaymentMethodCustomer = "cus_no_payment_method"
)

// StatusRequiresAction is the status of a charge that waits for its
// customer to authenticate.
const StatusRequiresAction = "requires_action"

// DefaultPaymentMethod is every customer's default payment method on
// Stripe's face, except [NoPaymentMethodCustomer]'s.
const DefaultPaymentMethod = "pm_card_visa"

// face is one of the simulator's charge APIs: hookline's own JSON API or
// Stripe's PaymentIntents. It reads a create request and renders the
// answers; the key rules, faults and the book of charges are shared.
type face interface {
	// read reads and validates a create request, answering 400 itself
	// when it is not one. meta is the request's metadata, if the API has
	// any.
	read(w http.ResponseWriter, r *http.Request) (req provider.ChargeRequest, meta map[string]string, ok bool)
	// render is the status and body that answer a committed charge.
	render(e entry, errorBody bool) (int, any)
}

// genericFace is hookline's provider API: POST /v1/charges.
type genericFace struct{ s *core }

func (genericFace) read(w http.ResponseWriter, r *http.Request) (provider.ChargeRequest, map[string]string, bool) {
	req, ok := readCharge(w, r)
	return req, nil, ok
}

func (f genericFace) render(e entry, errorBody bool) (int, any) {
	return f.s.chargeAnswer(e.charge, errorBody)
}

// stripeFace is the part of Stripe's API a PaymentIntent charge uses:
// POST /v1/payment_intents (form-encoded, confirmed off-session), GET
// /v1/payment_intents/search and GET /v1/customers/{id}.
type stripeFace struct{ s *core }

// Stripe's documented limits on metadata: key names of up to 40
// characters, values of up to 500.
const (
	MaxMetadataKeyLen   = 40
	MaxMetadataValueLen = 500
)

// stripeIntent is a PaymentIntent as Stripe's API returns it.
type stripeIntent struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Amount           int64             `json:"amount"`
	Currency         string            `json:"currency"`
	Customer         string            `json:"customer"`
	Description      string            `json:"description,omitempty"`
	PaymentMethod    string            `json:"payment_method"`
	Status           string            `json:"status"`
	Metadata         map[string]string `json:"metadata"`
	Created          int64             `json:"created"`
	Livemode         bool              `json:"livemode"`
	LastPaymentError *stripeCardError  `json:"last_payment_error,omitempty"`
}

// stripeCardError is Stripe's error object for a declined card.
type stripeCardError struct {
	Type          string        `json:"type"`
	Code          string        `json:"code"`
	DeclineCode   string        `json:"decline_code,omitempty"`
	Message       string        `json:"message"`
	PaymentIntent *stripeIntent `json:"payment_intent,omitempty"`
}

func (stripeFace) read(w http.ResponseWriter, r *http.Request) (provider.ChargeRequest, map[string]string, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, maxRequestBytes)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid", "request body unreadable or too large")
		return provider.ChargeRequest{}, nil, false
	}
	form := r.PostForm
	for _, name := range []string{"amount", "currency", "customer", "payment_method"} {
		if form.Get(name) == "" {
			writeStripeParamError(w, "parameter_missing", name, "missing required param: "+name)
			return provider.ChargeRequest{}, nil, false
		}
	}
	amount, err := strconv.ParseInt(form.Get("amount"), 10, 64)
	if err != nil || amount <= 0 {
		writeStripeParamError(w, "parameter_invalid_integer", "amount", "amount must be a positive integer")
		return provider.ChargeRequest{}, nil, false
	}
	if form.Get("confirm") != "true" || form.Get("off_session") != "true" {
		writeStripeParamError(w, "parameter_invalid", "confirm", "the simulator only takes confirmed, off-session intents")
		return provider.ChargeRequest{}, nil, false
	}
	customer := form.Get("customer")
	if pm := defaultPaymentMethod(customer); form.Get("payment_method") != pm {
		writeStripeParamError(w, "resource_missing", "payment_method", "the payment method is not the customer's")
		return provider.ChargeRequest{}, nil, false
	}
	meta := formMetadata(form)
	for k, v := range meta {
		if len(k) > MaxMetadataKeyLen || utf8.RuneCountInString(v) > MaxMetadataValueLen {
			writeStripeParamError(w, "parameter_invalid", "metadata["+k+"]",
				fmt.Sprintf("metadata keys may have %d characters and values %d", MaxMetadataKeyLen, MaxMetadataValueLen))
			return provider.ChargeRequest{}, nil, false
		}
	}
	req := provider.ChargeRequest{
		EventID:     meta["event_id"],
		Customer:    customer,
		Amount:      amount,
		Currency:    form.Get("currency"),
		Description: form.Get("description"),
	}
	if req.EventID == "" {
		req.EventID = r.Header.Get("Idempotency-Key") // what counts as one event's charges
	}
	return req, meta, true
}

// formMetadata collects the metadata[name] fields of a form.
func formMetadata(form map[string][]string) map[string]string {
	meta := map[string]string{}
	for k, v := range form {
		if name, ok := strings.CutPrefix(k, "metadata["); ok && strings.HasSuffix(name, "]") && len(v) > 0 {
			meta[strings.TrimSuffix(name, "]")] = v[0]
		}
	}
	return meta
}

func defaultPaymentMethod(customer string) string {
	if customer == NoPaymentMethodCustomer {
		return ""
	}
	return DefaultPaymentMethod
}

// render answers a committed intent: 200 with the intent, or 402 with a
// card_error that carries it. Stripe always answers a decline with an
// error object, so errorBody changes nothing here.
func (stripeFace) render(e entry, _ bool) (int, any) {
	pi := intentOf(e)
	if e.charge.Status != provider.StatusDeclined {
		return http.StatusOK, pi
	}
	return http.StatusPaymentRequired, struct {
		Error stripeCardError `json:"error"`
	}{stripeCardError{Type: "card_error", Code: "card_declined", DeclineCode: e.charge.DeclineCode,
		Message: "Your card was declined.", PaymentIntent: pi}}
}

// intentOf is the PaymentIntent of a charge.
func intentOf(e entry) *stripeIntent {
	ch, meta := e.charge, e.meta
	if meta == nil {
		meta = map[string]string{}
	}
	pi := &stripeIntent{
		ID: "pi_" + strings.TrimPrefix(ch.ID, "ch_"), Object: "payment_intent", Amount: ch.Amount,
		Currency: ch.Currency, Customer: ch.Customer, Description: e.desc, PaymentMethod: DefaultPaymentMethod,
		Status: ch.Status, Metadata: meta, Created: e.at.Unix(),
	}
	if ch.Status == provider.StatusDeclined {
		pi.Status = "requires_payment_method"
		pi.LastPaymentError = &stripeCardError{Type: "card_error", Code: "card_declined", DeclineCode: ch.DeclineCode,
			Message: "Your card was declined."}
	}
	return pi
}

func writeStripeParamError(w http.ResponseWriter, code, param, msg string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]string{
		"type": "invalid_request_error", "code": code, "param": param, "message": msg}})
}

func (s *core) handleCreateIntent(w http.ResponseWriter, r *http.Request) {
	s.create(w, r, stripeFace{s})
}

func (s *core) handleCustomer(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	id := r.PathValue("id")
	var pm any
	if m := defaultPaymentMethod(id); m != "" {
		pm = m
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "customer", "livemode": false,
		"invoice_settings": map[string]any{"default_payment_method": pm}})
}

// parseSearch reads the one query form the simulator's search
// understands, metadata['name']:'value'. As Stripe documents, only \' is
// an escape inside the quoted value; any other backslash is itself, so a
// client that doubles backslashes searches for two and finds nothing.
func parseSearch(q string) (name, value string, ok bool) {
	rest, ok := strings.CutPrefix(q, "metadata['")
	if !ok {
		return "", "", false
	}
	name, rest, ok = strings.Cut(rest, "']:'")
	if !ok || name == "" || strings.ContainsAny(name, `'\`) {
		return "", "", false
	}
	var b strings.Builder
	for i := 0; i < len(rest); i++ {
		switch {
		case rest[i] == '\\' && i+1 < len(rest) && rest[i+1] == '\'':
			b.WriteByte('\'')
			i++
		case rest[i] == '\'':
			return name, b.String(), i == len(rest)-1
		default:
			b.WriteByte(rest[i])
		}
	}
	return "", "", false // no closing quote
}

func (s *core) handleSearchIntents(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	name, value, ok := parseSearch(r.URL.Query().Get("query"))
	if !ok {
		writeStripeParamError(w, "parameter_invalid", "query", "the simulator searches by one metadata['name']:'value' clause")
		return
	}
	limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || limit <= 0 || limit > 100 {
		limit = 10
	}
	if !s.delay(r.Context()) {
		return
	}
	data := s.searchMeta(name, value, limit)
	writeJSON(w, http.StatusOK, map[string]any{"object": "search_result", "data": data, "has_more": false,
		"next_page": nil, "url": "/v1/payment_intents/search"})
}

// searchMeta returns the intents whose metadata has name = value, once the
// lookup lag has passed since each was committed: Stripe's search index
// lags its writes.
func (s *core) searchMeta(name, value string, limit int) []*stripeIntent {
	b := &s.charges
	b.mu.Lock()
	defer b.mu.Unlock()
	lag, now := time.Duration(s.lookupLag.Load()), s.now()
	data := []*stripeIntent{}
	for _, i := range b.byMeta[metaKey(name, value)] {
		e := b.all[i]
		if now.Sub(e.at) < lag || len(data) == limit {
			continue
		}
		data = append(data, intentOf(e))
	}
	return data
}

// Authenticate completes the charges made under key that wait for their
// customer ([RequiresActionCustomer]): they succeed. It reports whether
// one did.
func (s *core) Authenticate(key string) bool {
	b := &s.charges
	b.mu.Lock()
	defer b.mu.Unlock()
	done := false
	for i := range b.all {
		ch := &b.all[i].charge
		if ch.IdempotencyKey == key && ch.Status == StatusRequiresAction {
			ch.Status = provider.StatusSucceeded
			b.succeeded[ch.EventID]++
			done = true
		}
	}
	return done
}
