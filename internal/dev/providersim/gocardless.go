package providersim

import (
	"encoding/json"
	"net/http"
)

// GoCardlessAccessToken is the access token the GoCardless double
// accepts (a public test value).
const GoCardlessAccessToken = "sandbox_hooklinelocalgocardlesstoken0"

// GoCardlessVersion is the GoCardless-Version the double requires.
const GoCardlessVersion = "2015-07-06"

// GoCardlessSimPaymentPath is where the GoCardless double takes a
// payment (PUT GoCardlessSimPaymentPath+id, a [GoCardlessPayment] as
// JSON), so that a local run's user can make the payment an event links.
const GoCardlessSimPaymentPath = "/sim/payments/"

// GoCardlessPayment is a payment as the double serves it, in the shape
// of GoCardless's GET /payments/{id} (inside {"payments": ...}): the
// amount is an integer in minor units.
type GoCardlessPayment struct {
	ID          string            `json:"id"`
	CreatedAt   string            `json:"created_at,omitempty"`
	ChargeDate  string            `json:"charge_date,omitempty"`
	Amount      int64             `json:"amount"`
	Currency    string            `json:"currency"`
	Status      string            `json:"status"`
	Description string            `json:"description,omitempty"`
	Reference   string            `json:"reference,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Links       map[string]string `json:"links,omitempty"`
}

func (g *GoCardlessPayment) complete() bool  { return g.Status != "" && g.Currency != "" }
func (g *GoCardlessPayment) setID(id string) { g.ID = id }

// GoCardlessAPI stands in for GoCardless's payments API: GET
// /payments/{id} with the access token as a bearer token and the
// GoCardless-Version header, answering as GoCardless does, errors
// included. A test puts payments and makes reads fail.
type GoCardlessAPI struct {
	objectAPI
}

// StartGoCardlessAPI starts the double on a free loopback port.
func StartGoCardlessAPI() (*GoCardlessAPI, error) {
	g := &GoCardlessAPI{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /payments/{id}", g.get)
	mux.HandleFunc("PUT "+GoCardlessSimPaymentPath+"{id}", put[GoCardlessPayment](&g.objectAPI, "payment",
		gocardlessError(http.StatusBadRequest, "invalid_api_usage", "invalid_document_structure", "want a payment as JSON, with a status and a currency")))
	if err := g.start("gocardless", mux); err != nil {
		return nil, err
	}
	return g, nil
}

// SetPayment writes a payment's state.
func (g *GoCardlessAPI) SetPayment(p GoCardlessPayment) { g.set("payment", p.ID, p) }

func (g *GoCardlessAPI) get(w http.ResponseWriter, r *http.Request) {
	g.reads.Add(1)
	switch {
	case r.Header.Get("Authorization") != "Bearer "+GoCardlessAccessToken:
		writeJSON(w, http.StatusUnauthorized, gocardlessError(http.StatusUnauthorized, "invalid_api_usage", "unauthorized", "Invalid token"))
		return
	case r.Header.Get("GoCardless-Version") != GoCardlessVersion:
		writeJSON(w, http.StatusBadRequest, gocardlessError(http.StatusBadRequest, "invalid_api_usage", "missing_version_header", "GoCardless-Version header is missing or invalid"))
		return
	}
	data, status := g.read("payment", r.PathValue("id"))
	switch status {
	case http.StatusOK:
		writeJSON(w, status, map[string]json.RawMessage{"payments": data})
	case http.StatusNotFound:
		writeJSON(w, status, gocardlessError(status, "invalid_api_usage", "resource_not_found", "Resource not found"))
	default:
		writeJSON(w, status, gocardlessError(status, "gocardless", "service_unavailable", "Service unavailable"))
	}
}

// gocardlessError is GoCardless's error body.
func gocardlessError(code int, typ, reason, message string) any {
	return map[string]any{"error": map[string]any{
		"message": message, "type": typ, "code": code,
		"errors": []map[string]string{{"reason": reason, "message": message}},
	}}
}
