package stripecharge_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeStripe is a loopback server shaped like the parts of Stripe's API
// the adapter calls, with the state stripe-mock lacks: intents are kept,
// an Idempotency-Key replays its first answer (5xx included) or conflicts
// when the parameters differ, a key in flight answers 409, and search
// finds an intent only lag after it was created. It serves the stateful
// tests and injects faults; stripe-mock checks the requests' shape.
type fakeStripe struct {
	t   *testing.T
	srv *httptest.Server
	lag time.Duration

	mu       sync.Mutex
	intents  []*fakeIntent
	keys     map[string]*fakeAnswer
	inFlight map[string]bool
	creates  []url.Values // every create request's form, in order
	headers  []http.Header
	// fault, when set, decides how a create is answered; nil answers
	// normally.
	fault func(form url.Values) fakeFault
	// declines names customers whose card is declined, pending customers
	// whose intents need action, and noMethod customers without a default
	// payment method.
	declines, pending, noMethod map[string]bool
}

type fakeIntent struct {
	created time.Time
	body    map[string]any
}

type fakeAnswer struct {
	params string
	status int
	body   []byte
}

// fakeFault is one injected behaviour of a create.
type fakeFault struct {
	commit bool          // create the intent (and save the key's answer)
	status int           // answer with this status and body instead
	body   string        //
	drop   bool          // close the connection without an answer
	delay  time.Duration // before answering
}

func newFakeStripe(t *testing.T) *fakeStripe {
	f := &fakeStripe{t: t, keys: map[string]*fakeAnswer{}, inFlight: map[string]bool{},
		declines: map[string]bool{}, pending: map[string]bool{}, noMethod: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/customers/{id}", f.customer)
	mux.HandleFunc("POST /v1/payment_intents", f.create)
	mux.HandleFunc("GET /v1/payment_intents/search", f.search)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeStripe) URL() string { return f.srv.URL }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func stripeError(typ, code string) map[string]any {
	return map[string]any{"error": map[string]any{"type": typ, "code": code, "message": "fake"}}
}

func (f *fakeStripe) customer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f.mu.Lock()
	noMethod := f.noMethod[id]
	f.mu.Unlock()
	pm := any("pm_card_visa")
	if noMethod {
		pm = nil
	}
	writeJSON(w, 200, map[string]any{"id": id, "object": "customer", "invoice_settings": map[string]any{"default_payment_method": pm}})
}

func (f *fakeStripe) create(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, stripeError("invalid_request_error", "parameter_invalid"))
		return
	}
	key := r.Header.Get("Idempotency-Key")
	params := r.PostForm.Encode()
	f.mu.Lock()
	f.creates = append(f.creates, r.PostForm)
	f.headers = append(f.headers, r.Header.Clone())
	if a, ok := f.keys[key]; ok {
		f.mu.Unlock()
		if a.params != params {
			writeJSON(w, 400, stripeError("idempotency_error", ""))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(a.status)
		w.Write(a.body)
		return
	}
	if f.inFlight[key] {
		f.mu.Unlock()
		writeJSON(w, 409, stripeError("idempotency_error", "idempotency_key_in_use"))
		return
	}
	f.inFlight[key] = true
	fault := fakeFault{commit: true}
	if f.fault != nil {
		fault = f.fault(r.PostForm)
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.inFlight, key)
		f.mu.Unlock()
	}()
	if fault.delay > 0 {
		time.Sleep(fault.delay)
	}
	status, body := 0, []byte(nil)
	if fault.commit {
		status, body = f.commit(key, params, r.PostForm)
	}
	if fault.status != 0 {
		status, body = fault.status, []byte(fault.body)
		if fault.commit && key != "" {
			f.mu.Lock()
			f.keys[key] = &fakeAnswer{params: params, status: status, body: body} // Stripe replays a 5xx too
			f.mu.Unlock()
		}
	}
	if fault.drop || status == 0 {
		hj, _ := w.(http.Hijacker)
		conn, _, err := hj.Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// commit creates the intent the form describes and saves the key's answer.
func (f *fakeStripe) commit(key, params string, form url.Values) (int, []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	customer := form.Get("customer")
	pi := map[string]any{
		"id": fmt.Sprintf("pi_fake%d", len(f.intents)+1), "object": "payment_intent",
		"amount": json.Number(form.Get("amount")), "currency": form.Get("currency"), "customer": customer,
		"description": form.Get("description"), "payment_method": form.Get("payment_method"),
		"metadata": map[string]string{"hookline_key": form.Get("metadata[hookline_key]"), "event_id": form.Get("metadata[event_id]")},
		"status":   "succeeded",
	}
	status := 200
	var body []byte
	switch {
	case f.declines[customer]:
		pi["status"] = "requires_payment_method"
		pi["last_payment_error"] = map[string]any{"type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds"}
		status = 402
		body, _ = json.Marshal(map[string]any{"error": map[string]any{
			"type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds", "payment_intent": pi}})
	case f.pending[customer]:
		pi["status"] = "requires_action"
	}
	if body == nil {
		body, _ = json.Marshal(pi)
	}
	f.intents = append(f.intents, &fakeIntent{created: time.Now(), body: pi})
	if key != "" {
		f.keys[key] = &fakeAnswer{params: params, status: status, body: body}
	}
	return status, body
}

var searchQuery = regexp.MustCompile(`^metadata\['hookline_key'\]:'((?:[^'\\]|\\.)*)'$`)

func (f *fakeStripe) search(w http.ResponseWriter, r *http.Request) {
	m := searchQuery.FindStringSubmatch(r.URL.Query().Get("query"))
	if m == nil {
		writeJSON(w, 400, stripeError("invalid_request_error", "parameter_invalid"))
		return
	}
	key := strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(m[1])
	f.mu.Lock()
	defer f.mu.Unlock()
	data := []any{}
	for _, pi := range f.intents {
		if time.Since(pi.created) < f.lag {
			continue // not indexed yet
		}
		if md := pi.body["metadata"].(map[string]string); md["hookline_key"] == key {
			data = append(data, pi.body)
		}
	}
	writeJSON(w, 200, map[string]any{"object": "search_result", "data": data, "has_more": false, "url": "/v1/payment_intents/search"})
}

// setIntentStatus changes the status of the intent created under key, as
// a customer finishing authentication would.
func (f *fakeStripe) setIntentStatus(key, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, pi := range f.intents {
		if pi.body["metadata"].(map[string]string)["hookline_key"] == key {
			pi.body["status"] = status
		}
	}
}

// charges counts the succeeded intents of an event.
func (f *fakeStripe) charges(eventID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, pi := range f.intents {
		if pi.body["metadata"].(map[string]string)["event_id"] == eventID && pi.body["status"] == "succeeded" {
			n++
		}
	}
	return n
}

func (f *fakeStripe) createCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.creates)
}

func (f *fakeStripe) setLag(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lag = d
}

func (f *fakeStripe) setFault(fault func(url.Values) fakeFault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = fault
}
