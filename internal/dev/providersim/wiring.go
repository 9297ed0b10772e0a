package providersim

import (
	"encoding/json"
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
