package providersim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MollieAPIKey is the API key the Mollie double accepts.
const MollieAPIKey = "test_hooklinelocalmolliekey00000"

// MolliePayment is a payment as the Mollie double serves it, in the
// shape of Mollie's GET /v2/payments/{id}, less the links.
type MolliePayment struct {
	Resource string         `json:"resource"`
	ID       string         `json:"id"`
	Status   string         `json:"status"`
	Amount   MollieAmount   `json:"amount"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// MollieAmount is Mollie's amount: a decimal string and a currency.
type MollieAmount struct {
	Value    string `json:"value"`
	Currency string `json:"currency"`
}

// MollieAPI stands in for Mollie's payments API: an HTTP server on a
// loopback port whose reads lag its writes and that can fail on demand,
// so a test sees a worker fetch a stale status, retry a failure, and
// refuse an ID Mollie never issued.
type MollieAPI struct {
	mu       sync.Mutex
	payments map[string][]mollieVersion
	lag      time.Duration
	failNext int
	fetches  atomic.Int64
	srv      *http.Server
	ln       net.Listener
}

type mollieVersion struct {
	at time.Time
	p  MolliePayment
}

// StartMollieAPI starts the double on a free loopback port.
func StartMollieAPI() (*MollieAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m := &MollieAPI{payments: map[string][]mollieVersion{}, ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2/payments/{id}", m.get)
	mux.HandleFunc("PUT "+MollieSimPath+"{id}", m.put)
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = m.srv.Serve(ln) }()
	return m, nil
}

// URL is the double's base URL, Mollie's https://api.mollie.com.
func (m *MollieAPI) URL() string { return "http://" + m.ln.Addr().String() }

// SetPayment writes a payment's new state; reads see it once the lag
// has passed, and the previous state until then.
func (m *MollieAPI) SetPayment(p MolliePayment) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p.Resource = "payment"
	m.payments[p.ID] = append(m.payments[p.ID], mollieVersion{at: time.Now(), p: p})
}

// SetLag makes reads lag writes by d.
func (m *MollieAPI) SetLag(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lag = d
}

// FailNext makes the next n reads answer 503.
func (m *MollieAPI) FailNext(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failNext = n
}

// Fetches counts the reads served, failed ones included.
func (m *MollieAPI) Fetches() int { return int(m.fetches.Load()) }

func (m *MollieAPI) get(w http.ResponseWriter, r *http.Request) {
	m.fetches.Add(1)
	if r.Header.Get("Authorization") != "Bearer "+MollieAPIKey {
		mollieError(w, http.StatusUnauthorized, "Missing authentication, or failed to authenticate")
		return
	}
	p, status := m.read(r.PathValue("id"))
	if status != http.StatusOK {
		mollieError(w, status, http.StatusText(status))
		return
	}
	w.Header().Set("Content-Type", "application/hal+json")
	_ = json.NewEncoder(w).Encode(p)
}

// read returns the newest state of id older than the lag.
func (m *MollieAPI) read(id string) (MolliePayment, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failNext > 0 {
		m.failNext--
		return MolliePayment{}, http.StatusServiceUnavailable
	}
	cutoff := time.Now().Add(-m.lag)
	versions := m.payments[id]
	for i := len(versions) - 1; i >= 0; i-- {
		if !versions[i].at.After(cutoff) {
			return versions[i].p, http.StatusOK
		}
	}
	return MolliePayment{}, http.StatusNotFound
}

func mollieError(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/hal+json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"status":%d,"title":%q,"detail":%q}`, status, strings.ToLower(http.StatusText(status)), detail)
}

// Close stops the double.
func (m *MollieAPI) Close() error {
	if err := m.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("providersim: mollie: %w", err)
	}
	return nil
}
