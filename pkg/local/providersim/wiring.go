package providersim

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
)

// MollieSimPath is where the Mollie double takes a payment's new state
// (PUT MollieSimPath+id, a [MolliePayment] as JSON), so that a local
// run's user can make the payment a ping names.
const MollieSimPath = "/sim/payments/"

func (m *MollieAPI) put(w http.ResponseWriter, r *http.Request) {
	var p MolliePayment
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&p); err != nil || p.Status == "" {
		mollieError(w, http.StatusBadRequest, "want a payment as JSON, with a status")
		return
	}
	p.ID = r.PathValue("id")
	m.SetPayment(p)
	w.WriteHeader(http.StatusNoContent)
}

// KeyPEM is the double's signing key in PEM (PKCS #8), for a sender in
// another process ("hookline dev send-webhook --scheme paypal"). It is a
// development key, made at start, and signs nothing but local webhooks.
func (p *PayPalCerts) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(p.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
