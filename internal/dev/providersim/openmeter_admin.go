package providersim

import (
	"net/http"
	"time"
)

// OpenMeterSimPath is where OpenMeter's face is scripted over HTTP; the
// package doc lists its routes.
const OpenMeterSimPath = "/sim/openmeter"

// omIngestBody is the body of POST /sim/openmeter/events: the event and,
// for a record that appears late, its own store lag.
type omIngestBody struct {
	Event UsageCloudEvent `json:"event"`
	Lag   string          `json:"lag,omitempty"`
}

func (o *OpenMeter) adminRoutes(mux *http.ServeMux) {
	p := OpenMeterSimPath
	mux.HandleFunc("POST "+p+"/events", adminJSON(func(b omIngestBody) (any, error) {
		if b.Lag == "" {
			return o.Ingest(b.Event)
		}
		d, err := time.ParseDuration(b.Lag)
		if err != nil {
			return nil, err
		}
		return o.IngestLate(b.Event, d)
	}))
	mux.HandleFunc("POST "+p+"/between", adminJSON(func(evs []UsageCloudEvent) (any, error) {
		return nil, o.IngestBetweenPages(evs...)
	}))
	mux.HandleFunc("POST "+p+"/store", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]int{"stored": o.StoreLate()})
	})
	o.faults.routes(mux, p)
	mux.HandleFunc("POST "+p+"/meters", adminJSON(func(m OpenMeterMeter) (any, error) { return nil, o.AddMeter(m) }))
	mux.HandleFunc("GET "+p+"/calls", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"calls": o.OpenMeterCalls(), "refusals": o.Refusals()})
	})
}
