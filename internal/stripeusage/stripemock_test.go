package stripeusage_test

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/stripeusage"
	"github.com/hookline/hookline/internal/sums"
)

// stripe-mock, pinned in go.mod as a tool, is Stripe's own request
// validator: it checks each call's shape against Stripe's OpenAPI spec
// and answers with fixtures. One process serves the whole test binary.
var mock struct {
	once sync.Once
	cmd  *exec.Cmd
	url  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if mock.cmd != nil {
		mock.cmd.Process.Kill()
		mock.cmd.Wait()
	}
	os.Exit(code)
}

// stripeMock returns the base URL of the shared stripe-mock, started on
// first use.
func stripeMock(t *testing.T) string {
	t.Helper()
	mock.once.Do(func() { mock.url, mock.err = launchStripeMock() })
	if mock.err != nil {
		t.Fatal(mock.err)
	}
	return mock.url
}

func launchStripeMock() (string, error) {
	// go tool -n builds the pinned version into the build cache (once)
	// and prints its path.
	path, err := exec.Command("go", "tool", "-n", "stripe-mock").Output()
	if err != nil {
		return "", errors.New("build stripe-mock: " + err.Error())
	}
	cmd := exec.Command(strings.TrimSpace(string(path)), "-http-addr", "127.0.0.1:", "-https-addr", "127.0.0.1:")
	orphanProof(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return "", err
	}
	mock.cmd = cmd
	found := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if addr, ok := strings.CutPrefix(lines.Text(), "Listening for HTTP at address: "); ok {
				found <- "http://" + addr
			}
		}
		io.Copy(io.Discard, out)
		close(found)
	}()
	select {
	case u, ok := <-found:
		if !ok {
			return "", errors.New("stripe-mock exited before it listened")
		}
		return u, nil
	case <-time.After(30 * time.Second):
		return "", errors.New("stripe-mock did not listen within 30s")
	}
}

// mockReader is a Reader on stripe-mock with its test key.
func mockReader(t *testing.T, key string) *stripeusage.Reader {
	t.Helper()
	r, err := stripeusage.New(stripeusage.Config{BaseURL: stripeMock(t), Key: key, Sleep: noSleep})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestStripeMockAcceptsTheQuery(t *testing.T) {
	for _, width := range []time.Duration{time.Hour, 24 * time.Hour} {
		t.Run(width.String(), func(t *testing.T) {
			// Given stripe-mock, which refuses a request its spec refuses,
			// when a test-mode source reads a day of one customer's meter,
			r := mockReader(t, "sk_test_123")
			got, err := r.Sums(t.Context(), query(false, dayStart, dayStart.Add(24*time.Hour), width))
			// then the request is accepted (no refusal of stripe-mock's) and
			// its fixture decoded: a summary of an instant in 2009, which is
			// no bucket of the query, so the reader refuses it.
			var api *stripeusage.APIError
			if got != nil || errors.As(err, &api) || !errors.Is(err, stripeusage.ErrBadPage) ||
				!strings.Contains(err.Error(), "summary mtrusg_") {
				t.Fatalf("got %v, %v; want the fixture decoded and refused as no bucket of the query", got, err)
			}
			if s := r.Stats(); s != (stripeusage.Stats{Calls: 1}) {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

func TestStripeMockRefusesWhatItShould(t *testing.T) {
	base := stripeMock(t) + "/v1/billing/meters/mtr_1/event_summaries?"
	good := url.Values{"customer": {"cus_1"}, "start_time": {"1700000000"}, "end_time": {"1700003600"},
		"value_grouping_window": {"hour"}, "limit": {"100"}}
	tests := []struct {
		name   string
		drop   string
		set    [2]string
		status int
	}{
		{name: "the request the reader sends", status: http.StatusOK},
		{name: "no customer", drop: "customer", status: http.StatusBadRequest},
		{name: "no start_time", drop: "start_time", status: http.StatusBadRequest},
		{name: "a window not in the enum", set: [2]string{"value_grouping_window", "minute"}, status: http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := url.Values{}
			for k, vs := range good {
				v[k] = vs
			}
			v.Del(tt.drop)
			if tt.set[0] != "" {
				v.Set(tt.set[0], tt.set[1])
			}
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+v.Encode(), nil)
			req.Header.Set("Authorization", "Bearer sk_test_123")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if tt.drop != "" && !strings.Contains(string(body), tt.drop) {
				t.Fatalf("the refusal does not name %s: %s", tt.drop, body)
			}
		})
	}
}

func TestStripeMockLivemodeMismatch(t *testing.T) {
	// Given stripe-mock's test-mode fixture, when a live source reads it,
	r := mockReader(t, "sk_test_123")
	_, err := r.Sums(t.Context(), query(true, dayStart, dayStart.Add(time.Hour), time.Hour))
	// then the summary is refused, not counted.
	if !errors.Is(err, stripeusage.ErrLivemode) || !errors.Is(err, sums.ErrRead) {
		t.Fatalf("err %v, want ErrLivemode and sums.ErrRead", err)
	}
}

func TestStripeMockKeyRedacted(t *testing.T) {
	// Given a key stripe-mock refuses and echoes in its message,
	const key = "sk_live_doNotLeakThis"
	r := mockReader(t, key)
	_, err := r.Sums(t.Context(), query(false, dayStart, dayStart.Add(time.Hour), time.Hour))
	// then the error is Stripe's 401, without the key.
	var api *stripeusage.APIError
	if !errors.As(err, &api) || api.Status != http.StatusUnauthorized || api.Type != "invalid_request_error" {
		t.Fatalf("err %v, want a 401 APIError", err)
	}
	if strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("the key is not redacted: %v", err)
	}
}
