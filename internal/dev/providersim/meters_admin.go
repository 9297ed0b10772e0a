package providersim

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// MeterSimPath is where Stripe's meter face is scripted over HTTP; the
// package doc lists its routes.
const MeterSimPath = "/sim/meters"

func (s *core) meterAdminRoutes(mux *http.ServeMux) {
	sim := &Sim{core: s}
	p := MeterSimPath
	mux.HandleFunc("POST "+p, adminJSON(func(m BillingMeter) (any, error) { return sim.AddMeter(m) }))
	mux.HandleFunc("GET "+p, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"meters": sim.Meters(), "livemode": sim.MeterLivemode(), "calls": sim.MeterCalls()})
	})
	mux.HandleFunc("POST "+p+"/events", adminJSON(func(ev MeterEvent) (any, error) { return sim.RecordMeterEvent(ev) }))
	mux.HandleFunc("POST "+p+"/cancel", adminJSON(func(c struct {
		EventName  string `json:"event_name"`
		Identifier string `json:"identifier"`
	}) (any, error) {
		return nil, sim.CancelMeterEvent(c.EventName, c.Identifier)
	}))
	mux.HandleFunc("GET "+p+"/{id}/sum", sim.adminMeterSum)
	mux.HandleFunc("POST "+p+"/revise", adminJSON(func(c struct {
		Meter    string    `json:"meter"`
		Customer string    `json:"customer"`
		At       time.Time `json:"at"`
		By       string    `json:"by"`
	}) (any, error) {
		return nil, sim.ReviseMeterDown(c.Meter, c.Customer, c.At, c.By)
	}))
	mux.HandleFunc("POST "+p+"/gaps", adminJSON(func(g MeterGap) (any, error) { return nil, sim.AddMeterGap(g) }))
	mux.HandleFunc("POST "+p+"/livemode", adminJSON(func(c switchBody) (any, error) { sim.SetMeterLivemode(c.On); return nil, nil }))
	s.meters.faults.routes(mux, p)
	mux.HandleFunc("GET "+p+"/calls", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, sim.MeterCalls()) })
	mux.HandleFunc("POST "+p+"/alerts", adminJSON(func(c struct {
		Meter    string `json:"meter"`
		Customer string `json:"customer"`
		GTE      int64  `json:"gte"`
	}) (any, error) {
		id, err := sim.AddAlert(c.Meter, c.Customer, c.GTE)
		return map[string]string{"id": id}, err
	}))
	mux.HandleFunc("GET "+p+"/alerts", func(w http.ResponseWriter, _ *http.Request) {
		bodies := []json.RawMessage{}
		for _, ev := range sim.AlertEvents() {
			bodies = append(bodies, ev.Body)
		}
		writeJSON(w, http.StatusOK, bodies)
	})
	mux.HandleFunc("POST "+p+"/alerts/send", sim.adminSendAlerts)
}

// adminJSON answers a JSON request with fn's result: 200 with it, 204
// when there is none, 400 with the error.
func adminJSON[T any](fn func(T) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req T
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBytes)).Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid JSON"})
			return
		}
		out, err := fn(req)
		switch {
		case err != nil:
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		case out == nil:
			w.WriteHeader(http.StatusNoContent)
		default:
			writeJSON(w, http.StatusOK, out)
		}
	}
}

func (v *Sim) adminMeterSum(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	start, err1 := time.Parse(time.RFC3339, q.Get("start"))
	end, err2 := time.Parse(time.RFC3339, q.Get("end"))
	if err := errors.Join(err1, err2); err != nil || q.Get("customer") == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "want customer, and start and end in RFC 3339"})
		return
	}
	sum := v.MeterSum(r.PathValue("id"), q.Get("customer"), start, end)
	if sum == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such meter"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"meter": r.PathValue("id"), "customer": q.Get("customer"),
		"start": start.UTC(), "end": end.UTC(), "value": decimalText(sum)})
}

func (v *Sim) adminSendAlerts(w http.ResponseWriter, r *http.Request) {
	snd := v.core.meters.alertTo.Load()
	if snd == nil {
		writeJSON(w, http.StatusConflict, map[string]string{"error": "no alert webhook sender is set"})
		return
	}
	deliveries, err := v.SendAlerts(r.Context(), snd)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, map[string]string{"error": err.Error()})
		return
	}
	delivered := 0
	for _, d := range deliveries {
		if d.Delivered {
			delivered++
		}
	}
	writeJSON(w, http.StatusOK, map[string]int{"sent": len(deliveries), "delivered": delivered})
}
