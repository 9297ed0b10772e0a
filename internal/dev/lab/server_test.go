package lab_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/dev/lab"
)

// TestLiveAPIAnswersOnlyItsOwnPage: another web page must not drive the
// live lab. A form or a fetch with a text/plain body is a CORS simple
// request, sent without a preflight, so a page at any origin could turn
// idempotency off; and a page whose name was rebound to 127.0.0.1 (DNS
// rebinding) reads the lab's answers as its own origin. So commands are
// JSON only, an Origin must be the lab's own, and the Host must name the
// loopback at the lab's port; the lab's own requests still pass.
func TestLiveAPIAnswersOnlyItsOwnPage(t *testing.T) {
	t.Parallel()
	live, srv := serveLive(t, lab.LiveConfig{Rate: 5, Seed: 1})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	own := "http://127.0.0.1:" + port
	const turnOn = `{"text": "turn on idempotency"}`

	for _, tt := range []struct {
		name, method, path, host, origin, ctype, body string
		status                                        int
		says                                          string
	}{
		{name: "a simple request from another page", method: "POST", path: "/api/copilot", origin: "https://attacker.example",
			ctype: "text/plain", body: turnOn, status: http.StatusForbidden, says: "origin"},
		{name: "JSON from another page", method: "POST", path: "/api/copilot", origin: "https://attacker.example",
			ctype: "application/json", body: turnOn, status: http.StatusForbidden, says: "origin"},
		{name: "JSON from an opaque origin", method: "POST", path: "/api/copilot", origin: "null",
			ctype: "application/json", body: turnOn, status: http.StatusForbidden, says: "origin"},
		{name: "JSON from another loopback port", method: "POST", path: "/api/copilot", origin: "http://127.0.0.1:1",
			ctype: "application/json", body: turnOn, status: http.StatusForbidden, says: "origin"},
		{name: "a command that is not JSON", method: "POST", path: "/api/copilot", origin: own,
			ctype: "text/plain", body: turnOn, status: http.StatusUnsupportedMediaType, says: "application/json"},
		{name: "a command with no content type", method: "POST", path: "/api/copilot",
			body: turnOn, status: http.StatusUnsupportedMediaType, says: "application/json"},
		{name: "a rebound name", method: "GET", path: "/api/state", host: "attacker.example:" + port,
			status: http.StatusForbidden, says: "host"},
		{name: "a rebound name on port 80", method: "GET", path: "/api/state", host: "attacker.example",
			status: http.StatusForbidden, says: "host"},
		{name: "a rebound name, events", method: "GET", path: "/api/events", host: "attacker.example:" + port,
			status: http.StatusForbidden, says: "host"},
		{name: "a rebound name, command", method: "POST", path: "/api/copilot", host: "attacker.example:" + port,
			origin: "http://attacker.example:" + port, ctype: "application/json", body: turnOn, status: http.StatusForbidden, says: "host"},
		{name: "the loopback at another port", method: "GET", path: "/api/state", host: "127.0.0.1:1",
			status: http.StatusForbidden, says: "host"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, got := request(t, srv.URL, tt.method, tt.path, tt.host, tt.origin, tt.ctype, tt.body)
			if status != tt.status || !strings.Contains(strings.ToLower(got), tt.says) || !strings.Contains(got, `"error"`) {
				t.Fatalf("%s %s: %d %s; want %d, a JSON error about the %s", tt.method, tt.path, status, got, tt.status, tt.says)
			}
		})
	}
	if st := live.State(); st.Knobs.Idempotency || len(st.Changes) != 0 {
		t.Fatalf("refused commands changed the lab: knobs %+v, changes %+v", st.Knobs, st.Changes)
	}

	for _, tt := range []struct{ name, method, path, host, origin, ctype, body string }{
		{name: "the page", method: "GET", path: "/"},
		{name: "the state", method: "GET", path: "/api/state"},
		{name: "the state as localhost", method: "GET", path: "/api/state", host: "localhost:" + port},
		{name: "the state as [::1]", method: "GET", path: "/api/state", host: "[::1]:" + port},
		{name: "the state with the own origin", method: "GET", path: "/api/state", origin: own},
		{name: "a command from the page", method: "POST", path: "/api/copilot", origin: own, ctype: "application/json", body: `{"text": "help"}`},
		{name: "a command from the page as localhost", method: "POST", path: "/api/copilot", host: "localhost:" + port,
			origin: "http://localhost:" + port, ctype: "application/json; charset=utf-8", body: `{"text": "help"}`},
		{name: "a command from a script", method: "POST", path: "/api/copilot", ctype: "application/json", body: `{"text": "help"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if status, got := request(t, srv.URL, tt.method, tt.path, tt.host, tt.origin, tt.ctype, tt.body); status != http.StatusOK {
				t.Fatalf("%s %s: %d %s; want 200", tt.method, tt.path, status, got)
			}
		})
	}
}

// serveLive starts a live lab and serves it on a loopback port until the
// test ends (the server closes first: cleanups run last first).
func serveLive(t *testing.T, cfg lab.LiveConfig) (*lab.Live, *httptest.Server) {
	t.Helper()
	live, err := lab.StartLive(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	srv := httptest.NewServer(live.Handler())
	t.Cleanup(srv.Close)
	return live, srv
}

// request sends one request to the server at base, with the Host, Origin
// and Content-Type given (none when empty), and returns the status and
// the start of the body.
func request(t *testing.T, base, method, path, host, origin, ctype, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		return resp.StatusCode, "" // the stream never ends
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}
