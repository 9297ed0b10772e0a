package lab

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"net/url"
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
//
// It answers only its own page ([ownPageOnly]): a request whose Host is
// not the loopback at the lab's port, or whose Origin is another page's,
// is refused with 403, and a command that is not application/json with
// 415.
func (l *Live) Handler() http.Handler {
	files, _ := fs.Sub(page, "page") // page is embedded: cannot fail
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServerFS(files))
	mux.HandleFunc("GET /api/state", l.serveState)
	mux.HandleFunc("GET /api/events", l.serveEvents)
	mux.HandleFunc("POST /api/copilot", l.serveCopilot)
	return ownPageOnly(mux)
}

// ownPageOnly keeps other web pages from driving the lab or reading it:
//
//   - The Host must be 127.0.0.1, [::1] or localhost at the port the
//     request came in on. A page whose name an attacker rebinds to
//     127.0.0.1 (DNS rebinding) is same-origin with the lab in the
//     browser's eyes, but its requests carry its own name as the Host.
//   - An Origin, when the browser sends one, must be the lab's own:
//     http:// and a loopback name at that port. Browsers send it on every
//     POST, so a command from another page is refused whatever its body.
//   - A POST must be application/json. A form or a text/plain fetch is a
//     CORS "simple request", sent without a preflight; JSON is not, so a
//     browser never sends it cross-origin unless the lab allowed it, and
//     the lab allows nothing.
//
// Scripts and curl on the machine send no Origin and pass.
func ownPageOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		port := localPort(r)
		if port == "" || !loopbackAt(r.Host, port) {
			writeError(w, http.StatusForbidden, fmt.Sprintf(
				"the lab answers only at its own address (host 127.0.0.1, [::1] or localhost, port %s), not host %q", port, r.Host))
			return
		}
		if origin, ok := r.Header["Origin"]; ok && !ownOrigin(origin[0], port) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("the lab takes requests from its own page only, not from origin %q", origin[0]))
			return
		}
		if r.Method == http.MethodPost {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				writeError(w, http.StatusUnsupportedMediaType, "a command must be sent as Content-Type: application/json")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// localPort is the port of the address the request came in on, or "".
func localPort(r *http.Request) string {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return ""
	}
	_, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return ""
	}
	return port
}

// loopbackAt reports whether hostport names the loopback at port.
func loopbackAt(hostport, port string) bool {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil || p != port {
		return false
	}
	switch host {
	case "127.0.0.1", "::1", "localhost":
		return true
	}
	return false
}

// ownOrigin reports whether origin is the lab's page: http:// and a
// loopback name at port.
func ownOrigin(origin, port string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Scheme == "http" && u.Path == "" && u.User == nil && loopbackAt(u.Host, port)
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
