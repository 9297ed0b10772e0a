package providersim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/dev/providersim"
)

// send sends one request and returns the status and body.
func send(t *testing.T, method, u string, header http.Header, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestPayPalDouble: the token endpoint takes only the double's client
// credentials; a capture or sale is read only with a live token; a PUT
// object is served as PayPal's JSON; faults answer 503 once.
func TestPayPalDouble(t *testing.T) {
	p, err := providersim.StartPayPalAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	grant := url.Values{"grant_type": {"client_credentials"}}.Encode()
	if status, _ := send(t, http.MethodPost, p.URL()+"/v1/oauth2/token", form, grant); status != http.StatusUnauthorized {
		t.Fatalf("no credentials: %d, want 401", status)
	}
	basic := func(id, secret string) http.Header {
		h := form.Clone()
		req := &http.Request{Header: h}
		req.SetBasicAuth(id, secret)
		return h
	}
	if status, _ := send(t, http.MethodPost, p.URL()+"/v1/oauth2/token", basic(providersim.PayPalClientID, "wrong"), grant); status != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %d, want 401", status)
	}
	status, body := send(t, http.MethodPost, p.URL()+"/v1/oauth2/token", basic(providersim.PayPalClientID, providersim.PayPalClientSecret), grant)
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &tok) != nil || tok.AccessToken == "" || tok.ExpiresIn != 32400 {
		t.Fatalf("token: %d %s", status, body)
	}
	bearer := http.Header{"Authorization": {"Bearer " + tok.AccessToken}}
	tests := []struct {
		name, put, path, body string
		wantPut, want         int
	}{
		{name: "no status", put: providersim.PayPalSimCapturePath, path: "/v2/payments/captures/", body: `{"amount":{"currency_code":"USD","value":"9.90"}}`,
			wantPut: http.StatusBadRequest, want: http.StatusNotFound},
		{name: "a capture", put: providersim.PayPalSimCapturePath, path: "/v2/payments/captures/", body: `{"status":"COMPLETED","amount":{"currency_code":"USD","value":"9.90"}}`,
			wantPut: http.StatusNoContent, want: http.StatusOK},
		{name: "a sale", put: providersim.PayPalSimSalePath, path: "/v1/payments/sale/", body: `{"state":"completed","amount":{"total":"9.90","currency":"USD"}}`,
			wantPut: http.StatusNoContent, want: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := send(t, http.MethodPut, p.URL()+tt.put+"5O190127TN364715T", nil, tt.body); got != tt.wantPut {
				t.Fatalf("PUT: %d, want %d", got, tt.wantPut)
			}
			if got, body := send(t, http.MethodGet, p.URL()+tt.path+"5O190127TN364715T", bearer, ""); got != tt.want ||
				(got == http.StatusOK && !strings.Contains(body, `"id":"5O190127TN364715T"`)) {
				t.Fatalf("GET: %d %s, want %d", got, body, tt.want)
			}
		})
	}
	p.FailNext(1)
	if got, _ := send(t, http.MethodGet, p.URL()+"/v2/payments/captures/5O190127TN364715T", bearer, ""); got != http.StatusServiceUnavailable {
		t.Fatalf("fault: %d, want 503", got)
	}
	p.ExpireTokens()
	if got, _ := send(t, http.MethodGet, p.URL()+"/v2/payments/captures/5O190127TN364715T", bearer, ""); got != http.StatusUnauthorized {
		t.Fatalf("expired token: %d, want 401", got)
	}
}

// TestGoCardlessDouble: a payment is read with the access token and the
// API version, inside {"payments": ...}.
func TestGoCardlessDouble(t *testing.T) {
	g, err := providersim.StartGoCardlessAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if got, _ := send(t, http.MethodPut, g.URL()+providersim.GoCardlessSimPaymentPath+"PM0001", nil, `{"status":"confirmed"}`); got != http.StatusBadRequest {
		t.Fatalf("PUT without a currency: %d, want 400", got)
	}
	if got, _ := send(t, http.MethodPut, g.URL()+providersim.GoCardlessSimPaymentPath+"PM0001", nil, `{"status":"confirmed","amount":1500,"currency":"GBP"}`); got != http.StatusNoContent {
		t.Fatalf("PUT: %d, want 204", got)
	}
	good := http.Header{"Authorization": {"Bearer " + providersim.GoCardlessAccessToken}, "Gocardless-Version": {providersim.GoCardlessVersion}}
	tests := []struct {
		name   string
		header http.Header
		id     string
		want   int
	}{
		{name: "no token", header: http.Header{"Gocardless-Version": {providersim.GoCardlessVersion}}, id: "PM0001", want: http.StatusUnauthorized},
		{name: "no version", header: http.Header{"Authorization": good["Authorization"]}, id: "PM0001", want: http.StatusBadRequest},
		{name: "unknown", header: good, id: "PM0002", want: http.StatusNotFound},
		{name: "the payment", header: good, id: "PM0001", want: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, body := send(t, http.MethodGet, g.URL()+"/payments/"+tt.id, tt.header, "")
			if got != tt.want || (got == http.StatusOK && !strings.HasPrefix(body, `{"payments":{"id":"PM0001"`)) {
				t.Fatalf("%d %s, want %d", got, body, tt.want)
			}
		})
	}
}
