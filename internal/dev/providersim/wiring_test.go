package providersim_test

import (
	"crypto/x509"
	"encoding/pem"
	"github.com/hookline/hookline/pkg/webhook/webhooktest"
	"net/http"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/dev/providersim"
)

func TestMollieDoubleTakesPayments(t *testing.T) {
	m, err := providersim.StartMollieAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	put := func(body string) int {
		req, _ := http.NewRequest(http.MethodPut, m.URL()+providersim.MollieSimPath+"tr_sim1", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	get := func() int {
		req, _ := http.NewRequest(http.MethodGet, m.URL()+"/v2/payments/tr_sim1", nil)
		req.Header.Set("Authorization", "Bearer "+providersim.MollieAPIKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		name          string
		body          string
		wantPut, want int
	}{
		{name: "not JSON", body: "status=paid", wantPut: http.StatusBadRequest, want: http.StatusNotFound},
		{name: "no status", body: `{"amount":{"value":"1.00","currency":"EUR"}}`, wantPut: http.StatusBadRequest, want: http.StatusNotFound},
		{name: "a payment", body: `{"status":"paid","amount":{"value":"1.00","currency":"EUR"}}`, wantPut: http.StatusNoContent, want: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := put(tt.body); got != tt.wantPut {
				t.Fatalf("PUT: %d, want %d", got, tt.wantPut)
			}
			if got := get(); got != tt.want {
				t.Fatalf("GET: %d, want %d", got, tt.want)
			}
		})
	}
}

func TestPayPalDoubleKeyPEM(t *testing.T) {
	p, err := webhooktest.StartPayPalCertsOn("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	data, err := p.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatal("no PEM block")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Key.Equal(k) {
		t.Fatal("the PEM key is not the double's signing key")
	}
}
