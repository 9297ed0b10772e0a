package providersim

import (
	"net/http"
	"time"
)

// OpenMeterSimPath is where the OpenMeter face's administration lives, so
// that a driver outside the process can script it. Bodies are JSON; times
// RFC 3339, durations Go durations ("90s"):
//
//	POST /sim/openmeter/events   {"event": a UsageCloudEvent, "lag": "5m"} → the event as ingested
//	POST /sim/openmeter/between  [UsageCloudEvent...]: stored when a listing asks for its next page
//	POST /sim/openmeter/store    stores now the events ingested late → {"stored": n}
//	POST /sim/openmeter/lag      {"lag": "30s"}: the store lag of events ingested from now on
//	POST /sim/openmeter/meters   an OpenMeterMeter
//	GET  /sim/openmeter/calls    calls per endpoint, and the refusals
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
	mux.HandleFunc("POST "+p+"/lag", adminJSON(func(b struct {
		Lag string `json:"lag"`
	}) (any, error) {
		d, err := time.ParseDuration(b.Lag)
		if err != nil {
			return nil, err
		}
		o.SetStoreLag(d)
		return nil, nil
	}))
	mux.HandleFunc("POST "+p+"/meters", adminJSON(func(m OpenMeterMeter) (any, error) { return nil, o.AddMeter(m) }))
	mux.HandleFunc("GET "+p+"/calls", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"calls": o.OpenMeterCalls(), "refusals": o.Refusals()})
	})
}
