package stripeusage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/stripeusage"
	"github.com/hookline/hookline/internal/sums"
)

// dayStart is a UTC midnight: aligned to every width.
var dayStart = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

const testKey = "sk_test_51SecretKeyForTests"

func query(livemode bool, start, end time.Time, width time.Duration) sums.Query {
	return sums.Query{
		Source: sums.Source{Name: "stripe-main", Provider: "stripe", Livemode: livemode},
		Meter:  sums.Meter{Name: "api_calls", ProviderMeter: "mtr_123", Aggregation: sums.AggregationSum},
		Ref:    "cus_abc",
		Start:  start, End: end, Width: width,
	}
}

func noSleep(context.Context, time.Duration) error { return nil }

func equalSums(a, b []sums.Sum) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Start.Equal(b[i].Start) || !a[i].End.Equal(b[i].End) || a[i].Value != b[i].Value {
			return false
		}
	}
	return true
}

// reply is one answer of the fake.
type reply struct {
	status int
	header map[string]string
	body   string
}

// fake is a Stripe that answers the n-th call (from 0) with script(n)
// and records every call's URL and Authorization header.
type fake struct {
	mu     sync.Mutex
	urls   []*url.URL
	auths  []string
	script func(n int, q url.Values) reply
}

func newFake(t *testing.T, script func(n int, q url.Values) reply) (*fake, *httptest.Server) {
	f := &fake{script: script}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	n := len(f.urls)
	f.urls = append(f.urls, r.URL)
	f.auths = append(f.auths, r.Header.Get("Authorization"))
	f.mu.Unlock()
	rep := f.script(n, r.URL.Query())
	if rep.status == 0 {
		hijackAndClose(w)
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(rep.status)
	fmt.Fprint(w, rep.body)
}

// hijackAndClose cuts the connection in the middle of an answer's body:
// a network failure as the client sees it, which net/http's own retry of
// a request on a reused connection does not hide.
func hijackAndClose(w http.ResponseWriter) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"data\":[")
	buf.Flush()
	conn.Close()
}

func (f *fake) calls() []*url.URL {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*url.URL(nil), f.urls...)
}

// summary is one billing.meter_event_summary of the hour starting h
// hours after dayStart.
type summary struct {
	id       string
	h        int
	value    float64
	livemode bool
}

func (s summary) sum() sums.Sum {
	start := dayStart.Add(time.Duration(s.h) * time.Hour)
	return sums.Sum{Start: start, End: start.Add(time.Hour), Value: s.value}
}

// page is a list of summaries as Stripe writes it.
func page(hasMore bool, items ...summary) reply {
	data := make([]map[string]any, 0, len(items))
	for _, s := range items {
		sum := s.sum()
		data = append(data, map[string]any{
			"id": s.id, "object": "billing.meter_event_summary", "meter": "mtr_123",
			"aggregated_value": s.value, "livemode": s.livemode,
			"start_time": sum.Start.Unix(), "end_time": sum.End.Unix(),
		})
	}
	body, _ := json.Marshal(map[string]any{
		"object": "list", "url": "/v1/billing/meters/mtr_123/event_summaries", "has_more": hasMore, "data": data,
	})
	return reply{status: http.StatusOK, body: string(body)}
}

func stripeError(status int, typ, code, msg string) reply {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"type": typ, "code": code, "message": msg}})
	return reply{status: status, body: string(body)}
}

// waits records the waits a Reader asks of its Sleep.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(_ context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.d = append(w.d, d)
	return nil
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

// fakeReader is a Reader on srv that does not pace, records its waits,
// and draws the full jitter's ceiling, so waits are exact.
func fakeReader(t *testing.T, srv *httptest.Server, edit func(*stripeusage.Config)) (*stripeusage.Reader, *waits) {
	t.Helper()
	w := &waits{}
	cfg := stripeusage.Config{BaseURL: srv.URL, Key: testKey, Rate: inf, Sleep: w.sleep, HTTPClient: srv.Client()}
	if edit != nil {
		edit(&cfg)
	}
	r, err := stripeusage.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stripeusage.SetJitter(r, func(ceiling time.Duration) time.Duration { return ceiling })
	return r, w
}
