package providersim

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The credentials the PayPal double accepts (public test values).
const (
	PayPalClientID     = "hookline-local-paypal-client"
	PayPalClientSecret = "hookline-local-paypal-secret"
)

// Where the PayPal double takes a capture or a sale (PUT path+id, a
// [PayPalCapture] or [PayPalSale] as JSON), so that a local run's user
// can make the object a webhook names.
const (
	PayPalSimCapturePath = "/sim/captures/"
	PayPalSimSalePath    = "/sim/sales/"
)

// PayPalCapture is a capture as the double serves it, in the shape of
// PayPal's GET /v2/payments/captures/{id}, less the links and fees.
type PayPalCapture struct {
	ID           string       `json:"id"`
	Status       string       `json:"status"`
	Amount       PayPalAmount `json:"amount"`
	CustomID     string       `json:"custom_id,omitempty"`
	InvoiceID    string       `json:"invoice_id,omitempty"`
	FinalCapture bool         `json:"final_capture"`
}

// PayPalAmount is PayPal's v2 money: a currency and a decimal string.
type PayPalAmount struct {
	CurrencyCode string `json:"currency_code"`
	Value        string `json:"value"`
}

// PayPalSale is a sale as the double serves it, in the shape of PayPal's
// GET /v1/payments/sale/{id}: v1 names the status "state", in lower case.
type PayPalSale struct {
	ID            string           `json:"id"`
	State         string           `json:"state"`
	Amount        PayPalSaleAmount `json:"amount"`
	Custom        string           `json:"custom,omitempty"`
	ParentPayment string           `json:"parent_payment,omitempty"`
}

// PayPalSaleAmount is PayPal's v1 money: a decimal total and a currency.
type PayPalSaleAmount struct {
	Total    string `json:"total"`
	Currency string `json:"currency"`
}

// PayPalAPI stands in for the part of PayPal's REST API that a worker
// reads a capture or a sale with: an OAuth2 client-credentials token
// endpoint that checks HTTP Basic credentials, and the captures and
// sales endpoints, which take only a token it issued and has not
// expired. A test puts objects, expires tokens and makes reads fail.
type PayPalAPI struct {
	objectAPI
	tmu           sync.Mutex
	tokens        map[string]time.Time
	ttl           time.Duration
	tokenRequests atomic.Int64
}

// StartPayPalAPI starts the double on a free loopback port; its tokens
// live 9 hours, as PayPal's do.
func StartPayPalAPI() (*PayPalAPI, error) {
	p := &PayPalAPI{tokens: map[string]time.Time{}, ttl: 9 * time.Hour}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/oauth2/token", p.token)
	mux.HandleFunc("GET /v2/payments/captures/{id}", p.get("capture"))
	mux.HandleFunc("GET /v1/payments/sale/{id}", p.get("sale"))
	mux.HandleFunc("PUT "+PayPalSimCapturePath+"{id}", put[PayPalCapture](&p.objectAPI, "capture",
		map[string]string{"name": "INVALID_REQUEST", "message": "want a capture as JSON, with a status"}))
	mux.HandleFunc("PUT "+PayPalSimSalePath+"{id}", put[PayPalSale](&p.objectAPI, "sale",
		map[string]string{"name": "INVALID_REQUEST", "message": "want a sale as JSON, with a state"}))
	if err := p.start("paypal", mux); err != nil {
		return nil, err
	}
	return p, nil
}

// SetCapture writes a capture's state.
func (p *PayPalAPI) SetCapture(c PayPalCapture) { p.set("capture", c.ID, c) }

// SetSale writes a sale's state.
func (p *PayPalAPI) SetSale(s PayPalSale) { p.set("sale", s.ID, s) }

// SetTokenTTL sets the expires_in of the tokens issued from now on.
func (p *PayPalAPI) SetTokenTTL(d time.Duration) {
	p.tmu.Lock()
	defer p.tmu.Unlock()
	p.ttl = d
}

// ExpireTokens ends every token issued so far: their next use is a 401.
func (p *PayPalAPI) ExpireTokens() {
	p.tmu.Lock()
	defer p.tmu.Unlock()
	clear(p.tokens)
}

// TokenRequests counts the requests to the token endpoint.
func (p *PayPalAPI) TokenRequests() int { return int(p.tokenRequests.Load()) }

func (p *PayPalAPI) token(w http.ResponseWriter, r *http.Request) {
	p.tokenRequests.Add(1)
	id, secret, ok := r.BasicAuth()
	if !ok || id != PayPalClientID || secret != PayPalClientSecret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "Client Authentication failed"})
		return
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type", "error_description": "Grant Type is NULL"})
		return
	}
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	tok := "A21AA" + hex.EncodeToString(raw)
	p.tmu.Lock()
	ttl := p.ttl
	p.tokens[tok] = time.Now().Add(ttl)
	p.tmu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"scope": "https://uri.paypal.com/services/payments/payment", "access_token": tok, "token_type": "Bearer",
		"app_id": "APP-80W284485P519543T", "expires_in": int(ttl / time.Second),
	})
}

// valid reports whether the request carries a live token.
func (p *PayPalAPI) valid(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	p.tmu.Lock()
	defer p.tmu.Unlock()
	until, issued := p.tokens[tok]
	return ok && issued && time.Now().Before(until)
}

func (p *PayPalAPI) get(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p.reads.Add(1)
		if !p.valid(r) {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token", "error_description": "Token signature verification failed"})
			return
		}
		data, status := p.read(kind, r.PathValue("id"))
		switch status {
		case http.StatusOK:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(data)
		case http.StatusNotFound:
			writeJSON(w, status, map[string]string{"name": "RESOURCE_NOT_FOUND", "message": "The specified resource does not exist."})
		default:
			writeJSON(w, status, map[string]string{"name": "SERVICE_UNAVAILABLE", "message": "Service Unavailable."})
		}
	}
}

func (c *PayPalCapture) complete() bool  { return c.Status != "" }
func (c *PayPalCapture) setID(id string) { c.ID = id }
func (s *PayPalSale) complete() bool     { return s.State != "" }
func (s *PayPalSale) setID(id string)    { s.ID = id }
