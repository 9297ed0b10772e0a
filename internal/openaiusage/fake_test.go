package openaiusage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/hookline/hookline/internal/openaiusage"
	"github.com/hookline/hookline/internal/sums"
)

func containsKey(text, key string) bool { return strings.Contains(text, key) }

// fake answers each call with the body of its number, with status 200.
func fake(t *testing.T, bodies ...string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		i := int(n.Add(1)) - 1
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, bodies[min(i, len(bodies)-1)])
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// hourPage is a page with one hour bucket at day0+h holding results.
func hourPage(h int, hasMore bool, next, results string) string {
	start := day0.Add(time.Duration(h) * time.Hour).Unix()
	return fmt.Sprintf(`{"object":"page","data":[{"object":"bucket","start_time":%d,"end_time":%d,"results":[%s]}],
		"has_more":%t,"next_page":%s}`, start, start+3600, results, hasMore, next)
}

const ours = `{"object":"organization.usage.completions.result","project_id":"proj_abc","input_tokens":3,"output_tokens":1}`

func TestSumsRefusesPagesThatCannotGoOn(t *testing.T) {
	tests := []struct {
		name  string
		pages []string
	}{
		{name: "has_more without next_page", pages: []string{hourPage(0, true, "null", ours)}},
		{name: "next_page that does not move", pages: []string{hourPage(0, true, `"p1"`, ours), hourPage(1, true, `"p1"`, ours)}},
		{name: "a result of another project", pages: []string{hourPage(0, false, "null",
			`{"project_id":"proj_other","input_tokens":3}`)}},
		{name: "a result of no project", pages: []string{hourPage(0, false, "null", `{"project_id":null,"input_tokens":3}`)}},
		{name: "a bucket of another width", pages: []string{fmt.Sprintf(`{"data":[{"start_time":%d,"end_time":%d,"results":[]}],
			"has_more":false}`, day0.Unix(), day0.Unix()+60)}},
		{name: "a field that is no count", pages: []string{hourPage(0, false, "null",
			`{"project_id":"proj_abc","input_tokens":"many"}`)}},
		{name: "a weighted sum past 2^53", pages: []string{hourPage(0, false, "null",
			`{"project_id":"proj_abc","input_tokens":4503599627370496,"output_tokens":2251799813685248}`)}},
		{name: "endless pages", pages: []string{hourPage(0, true, `"p1"`, ours), hourPage(0, true, `"p2"`, ours),
			hourPage(0, true, `"p3"`, ours), hourPage(0, true, `"p4"`, ours)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given pages OpenAI should not send,
			srv, _ := fake(t, tc.pages...)
			r, err := openaiusage.New(openaiusage.Config{BaseURL: srv.URL, Key: "sk-admin-k", Rate: rate.Inf})
			if err != nil {
				t.Fatal(err)
			}
			// when two hours are read, then nothing is returned and the
			// read fails as a bad page.
			got, err := r.Sums(t.Context(), usageQuery(tokens, day0, day0.Add(2*time.Hour), time.Hour))
			if !errors.Is(err, openaiusage.ErrBadPage) || !errors.Is(err, sums.ErrRead) || got != nil {
				t.Fatalf("got %v, %v; want ErrBadPage", got, err)
			}
		})
	}
}

func TestSumsTakesARevisedBucketOnce(t *testing.T) {
	// Given a bucket that shows again, revised, on the next page,
	srv, _ := fake(t, hourPage(0, true, `"p1"`, ours),
		hourPage(0, false, "null", `{"project_id":"proj_abc","input_tokens":5,"output_tokens":1,"input_cache_write_30m_tokens":null}`))
	r, err := openaiusage.New(openaiusage.Config{BaseURL: srv.URL, Key: "sk-admin-k", Rate: rate.Inf})
	if err != nil {
		t.Fatal(err)
	}
	// when it is read, then it is one sum of its latest value, never the
	// sum of both.
	got, err := r.Sums(t.Context(), usageQuery(tokens, day0, day0.Add(time.Hour), time.Hour))
	if err != nil || len(got) != 1 || got[0].Value != 9 {
		t.Fatalf("got %+v, %v; want one bucket of 5 + 4", got, err)
	}
}

func TestTheKeyIsNeverLogged(t *testing.T) {
	// Given an answer that echoes the Authorization header in its error,
	// after a 503 that makes the reader log a retry,
	const key = "sk-admin-echoed-secret"
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", r.Header.Get("Authorization"))
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"error":{"message":"key %s may not read usage","type":"invalid_request_error","code":"%s"}}`,
			r.Header.Get("Authorization"), key)
	}))
	t.Cleanup(srv.Close)
	var logs bytes.Buffer
	r, err := openaiusage.New(openaiusage.Config{BaseURL: srv.URL, Key: key, Rate: rate.Inf,
		Backoff: fixedBackoff(0), Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	// when it is read,
	_, err = r.Sums(t.Context(), usageQuery(tokens, day0, day0.Add(time.Hour), time.Hour))
	// then the refusal is an APIError, and neither it nor a log line holds
	// the key.
	var ae *openaiusage.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusForbidden {
		t.Fatalf("err = %v, want a 403 APIError", err)
	}
	if containsKey(err.Error(), key) || containsKey(logs.String(), key) {
		t.Fatalf("the key leaked:\nerr: %v\nlogs: %s", err, logs.String())
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Fatalf("no retry was logged: %s", logs.String())
	}
}

func TestSumsPacesEachEndpoint(t *testing.T) {
	// Given a reader paced to 50 calls a second per endpoint,
	srv, n := fake(t, hourPage(0, false, "null", ours))
	r, err := openaiusage.New(openaiusage.Config{BaseURL: srv.URL, Key: "sk-admin-k", Rate: 50})
	if err != nil {
		t.Fatal(err)
	}
	// when one endpoint is read 6 times,
	start := time.Now()
	for range 6 {
		if _, err := r.Sums(t.Context(), usageQuery(tokens, day0, day0.Add(time.Hour), time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// then the calls took at least 5 intervals of 20ms (a lower bound,
	// which no slow machine can break).
	if d := time.Since(start); d < 100*time.Millisecond || n.Load() != 6 {
		t.Fatalf("6 calls in %s, want at least 100ms", d)
	}
}

func TestConfigRefusesEveryProblemAtOnce(t *testing.T) {
	_, err := openaiusage.New(openaiusage.Config{BaseURL: "ftp://x", Rate: -1, MaxAttempts: -2})
	var ce *openaiusage.ConfigError
	for _, want := range []string{"Key", "BaseURL", "Rate", "MaxAttempts"} {
		if !errors.As(err, &ce) || !errors.Is(err, openaiusage.ErrBadConfig) || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want it to name %s", err, want)
		}
	}
}

func TestSumsWaitsTheRetryAfterOfA503(t *testing.T) {
	// Given a 503 that asks for two seconds, then a page,
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, hourPage(0, false, "null", ours))
	}))
	t.Cleanup(srv.Close)
	var waits []time.Duration
	r, err := openaiusage.New(openaiusage.Config{BaseURL: srv.URL, Key: "sk-admin-k", Rate: rate.Inf, Backoff: fixedBackoff(time.Hour),
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	// when an hour is read, then it waits the two seconds, not the
	// backoff's hour, and reads the page.
	got, err := r.Sums(t.Context(), usageQuery(tokens, day0, day0.Add(time.Hour), time.Hour))
	if err != nil || len(got) != 1 || len(waits) != 1 || waits[0] != 2*time.Second {
		t.Fatalf("got %+v, %v after waits %v; want one sum after 2s", got, err, waits)
	}
}
