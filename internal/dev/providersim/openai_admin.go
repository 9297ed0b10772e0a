package providersim

import (
	"net/http"
	"time"
)

// OpenAISimPath is where the OpenAI face's administration lives, so that
// a driver outside the process can script it. Every body is JSON; times
// are RFC 3339 and durations Go durations ("90s"):
//
//	POST   /sim/openai/usage     an OpenAIUsage
//	POST   /sim/openai/costs     an OpenAICost
//	POST   /sim/openai/revise    {"endpoint", "project", "at", "field", "by"}: by < 0 revises down
//	POST   /sim/openai/costs/revise {"project", "at", "by"}: a signed decimal
//	POST   /sim/openai/lag       {"lag"}
//	POST   /sim/openai/gaps      an OpenAIGap
//	DELETE /sim/openai/gaps
//	POST   /sim/openai/pagesize  {"buckets"}: pages end early after that many
//	POST   /sim/openai/fail      {"next", "retry_after"}: the next calls answer 429
//	POST   /sim/openai/noise     {"on"}: float noise in costs
//	GET    /sim/openai/calls     OpenAICallCounts
//
// A refused request gets 400 {"error": "..."}; one that changes a
// setting gets 204.
const OpenAISimPath = "/sim/openai"

func (s *core) openaiAdminRoutes(mux *http.ServeMux) {
	sim := &Sim{core: s}
	p := OpenAISimPath
	mux.HandleFunc("POST "+p+"/usage", adminJSON(func(u OpenAIUsage) (any, error) { return nil, sim.AddOpenAIUsage(u) }))
	mux.HandleFunc("POST "+p+"/costs", adminJSON(func(c OpenAICost) (any, error) { return nil, sim.AddOpenAICost(c) }))
	mux.HandleFunc("POST "+p+"/revise", adminJSON(func(c struct {
		Endpoint string    `json:"endpoint"`
		Project  string    `json:"project"`
		At       time.Time `json:"at"`
		Field    string    `json:"field"`
		By       int64     `json:"by"`
	}) (any, error) {
		return nil, sim.ReviseOpenAIUsage(c.Endpoint, c.Project, c.At, c.Field, c.By)
	}))
	mux.HandleFunc("POST "+p+"/costs/revise", adminJSON(func(c struct {
		Project string    `json:"project"`
		At      time.Time `json:"at"`
		By      string    `json:"by"`
	}) (any, error) {
		return nil, sim.ReviseOpenAICost(c.Project, c.At, c.By)
	}))
	mux.HandleFunc("POST "+p+"/lag", adminJSON(func(c struct {
		Lag string `json:"lag"`
	}) (any, error) {
		d, err := time.ParseDuration(c.Lag)
		if err == nil {
			sim.SetOpenAILag(d)
		}
		return nil, err
	}))
	mux.HandleFunc("POST "+p+"/gaps", adminJSON(func(g OpenAIGap) (any, error) { return nil, sim.AddOpenAIGap(g) }))
	mux.HandleFunc("DELETE "+p+"/gaps", func(w http.ResponseWriter, _ *http.Request) {
		sim.ClearOpenAIGaps()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST "+p+"/pagesize", adminJSON(func(c struct {
		Buckets int `json:"buckets"`
	}) (any, error) {
		sim.SetOpenAIPageSize(c.Buckets)
		return nil, nil
	}))
	mux.HandleFunc("POST "+p+"/fail", adminJSON(func(c struct {
		Next       int    `json:"next"`
		RetryAfter string `json:"retry_after"`
	}) (any, error) {
		var d time.Duration
		var err error
		if c.RetryAfter != "" {
			d, err = time.ParseDuration(c.RetryAfter)
		}
		if err == nil {
			sim.FailOpenAICalls(c.Next, d)
		}
		return nil, err
	}))
	mux.HandleFunc("POST "+p+"/noise", adminJSON(func(c switchBody) (any, error) { sim.SetOpenAICostNoise(c.On); return nil, nil }))
	mux.HandleFunc("GET "+p+"/calls", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, sim.OpenAICalls()) })
}
