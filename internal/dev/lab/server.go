package lab

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"time"
)

// page is the live page: plain HTML, CSS and JavaScript, no build step,
// nothing fetched at run time.
//
//go:embed page
var page embed.FS

// maxCopilotBody bounds a copilot request.
const maxCopilotBody = 4 << 10

// Handler serves the live page and its API:
//
//	GET  /             the page
//	GET  /api/events   the state once a second (server-sent events)
//	GET  /api/state    the state now (JSON)
//	POST /api/copilot  {"text": "turn on idempotency"} -> [Reply]
func (l *Live) Handler() http.Handler {
	files, _ := fs.Sub(page, "page") // page is embedded: cannot fail
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServerFS(files))
	mux.HandleFunc("GET /api/state", l.serveState)
	mux.HandleFunc("GET /api/events", l.serveEvents)
	mux.HandleFunc("POST /api/copilot", l.serveCopilot)
	return mux
}

func (l *Live) serveState(w http.ResponseWriter, _ *http.Request) {
	b, err := l.StateJSON()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "the state could not be written")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// serveEvents streams the state as server-sent events until the client
// goes away.
func (l *Live) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "streaming is not supported")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	states, cancel := l.Subscribe()
	defer cancel()
	keepAlive := time.NewTicker(15 * time.Second)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case b := <-states:
			fmt.Fprintf(w, "data: %s\n\n", b)
		case <-keepAlive.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		}
		flusher.Flush()
	}
}

// copilotRequest is the body of POST /api/copilot.
type copilotRequest struct {
	Text string `json:"text"`
}

// serveCopilot answers one copilot line: 200 with the reply (a line it
// does not understand included, answered with what it does understand),
// 400 for a body that is not {"text": "..."}, 422 for a change it
// refuses.
func (l *Live) serveCopilot(w http.ResponseWriter, r *http.Request) {
	var req copilotRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxCopilotBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Text == "" {
		writeError(w, http.StatusBadRequest, `the body must be {"text": "..."}, at most 4 KiB`)
		return
	}
	reply, err := l.Ask(req.Text)
	status := http.StatusOK
	if errors.Is(err, ErrOutOfRange) {
		status = http.StatusUnprocessableEntity
	}
	writeJSON(w, status, reply)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
