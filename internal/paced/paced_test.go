package paced_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/paced"
)

var t0 = time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)

func TestRetryAfterReadsEveryForm(t *testing.T) {
	const limit = 5 * time.Minute
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{name: "none", header: nil},
		{name: "delta seconds", header: map[string]string{"Retry-After": "7"}, want: 7 * time.Second, ok: true},
		{name: "zero seconds", header: map[string]string{"Retry-After": "0"}, want: 0, ok: true},
		{name: "decimal seconds", header: map[string]string{"Retry-After": "1.5"}, want: 1500 * time.Millisecond, ok: true},
		{name: "a day is capped", header: map[string]string{"Retry-After": "86400"}, want: limit, ok: true},
		{name: "99999999999 seconds is the cap", header: map[string]string{"Retry-After": "99999999999"}, want: limit, ok: true},
		{name: "more digits than any number is the cap", header: map[string]string{"Retry-After": strings.Repeat("9", 400)}, want: limit, ok: true},
		{name: "milliseconds", header: map[string]string{"Retry-After-Ms": "250"}, want: 250 * time.Millisecond, ok: true},
		{name: "milliseconds win over seconds", header: map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, want: 250 * time.Millisecond, ok: true},
		{name: "1e300 ms is the cap", header: map[string]string{"Retry-After-Ms": "1e300"}, want: limit, ok: true},
		{name: "1e400 ms is the cap", header: map[string]string{"Retry-After-Ms": "1e400"}, want: limit, ok: true},
		{name: "an HTTP date ahead", header: map[string]string{"Retry-After": t0.Add(90 * time.Second).Format(http.TimeFormat)}, want: 90 * time.Second, ok: true},
		{name: "an HTTP date far ahead is capped", header: map[string]string{"Retry-After": t0.AddDate(5, 0, 0).Format(http.TimeFormat)}, want: limit, ok: true},
		{name: "an HTTP date past is no wait, never negative", header: map[string]string{"Retry-After": t0.Add(-time.Hour).Format(http.TimeFormat)}, want: 0, ok: true},
		{name: "negative seconds are malformed", header: map[string]string{"Retry-After": "-5"}},
		{name: "negative ms fall back to seconds", header: map[string]string{"Retry-After-Ms": "-1", "Retry-After": "2"}, want: 2 * time.Second, ok: true},
		{name: "garbage", header: map[string]string{"Retry-After": "soon"}},
		{name: "NaN", header: map[string]string{"Retry-After-Ms": "NaN"}},
		{name: "Inf", header: map[string]string{"Retry-After": "Inf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			got, ok := paced.RetryAfter(h, t0, limit)
			if got != tt.want || ok != tt.ok || got < 0 {
				t.Fatalf("RetryAfter = %v, %t; want %v, %t", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// clock is a manual clock that moves only when the client sleeps on it,
// recording each wait.
type clock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *clock) all() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.waits)
}

type reply struct {
	status int
	header map[string]string
}

// serve answers the scripted replies in turn, then 200 {}, and records
// on the clock when each request came.
func serve(t *testing.T, c *clock, replies ...reply) (*httptest.Server, func() []time.Time) {
	t.Helper()
	var mu sync.Mutex
	var at []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		n := len(at)
		at = append(at, c.Now())
		mu.Unlock()
		if n < len(replies) {
			for k, v := range replies[n].header {
				w.Header().Set(k, v)
			}
			w.WriteHeader(replies[n].status)
		}
		_, _ = w.Write([]byte("{}"))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []time.Time { mu.Lock(); defer mu.Unlock(); return slices.Clone(at) }
}

func newClient(t *testing.T, c *clock, edit func(*paced.Config)) *paced.Client {
	t.Helper()
	cfg := paced.Config{Name: "test", Now: c.Now, Sleep: c.Sleep, Jitter: paced.SeededJitter(1)}
	if edit != nil {
		edit(&cfg)
	}
	p, err := paced.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGetSendsNothingBeforeRetryAfterRunsOut(t *testing.T) {
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{name: "seconds", header: map[string]string{"Retry-After": "1"}, want: time.Second},
		{name: "milliseconds", header: map[string]string{"Retry-After-Ms": "1500"}, want: 1500 * time.Millisecond},
		{name: "a date", header: map[string]string{"Retry-After": t0.Add(3 * time.Second).Format(http.TimeFormat)}, want: 3 * time.Second},
		{name: "a huge value waits the cap", header: map[string]string{"Retry-After": "99999999999"}, want: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a 503 naming a wait, then an answer,
			c := &clock{now: t0}
			srv, at := serve(t, c, reply{status: 503, header: tt.header})
			p := newClient(t, c, func(cfg *paced.Config) { cfg.MaxRetryAfter = time.Minute })
			// when the call is made,
			resp, err := p.Get(t.Context(), "/x", srv.URL, nil)
			if err != nil || resp.Status != 200 || resp.Attempts != 2 {
				t.Fatalf("resp %+v, err %v", resp, err)
			}
			// then the one wait is the named one, and the retry came after it.
			if got := c.all(); !slices.Equal(got, []time.Duration{tt.want}) {
				t.Fatalf("waits %v, want [%v]", got, tt.want)
			}
			if calls := at(); len(calls) != 2 || calls[1].Sub(calls[0]) < tt.want {
				t.Fatalf("requests at %v: the retry came before the wait ran out", calls)
			}
		})
	}
}

func TestGetBacksOffWithJitterAndGivesUp(t *testing.T) {
	// Given a provider that always answers 429 and a jitter that draws
	// the ceiling,
	c := &clock{now: t0}
	srv, at := serve(t, c, reply{429, nil}, reply{429, nil}, reply{429, nil}, reply{429, nil})
	p := newClient(t, c, func(cfg *paced.Config) {
		cfg.BackoffBase, cfg.BackoffMax = 500*time.Millisecond, 1500*time.Millisecond
		cfg.Jitter = func(d time.Duration) time.Duration { return d }
	})
	// when a call is made,
	_, err := p.Get(t.Context(), "/x", srv.URL, nil)
	// then it gives up after four calls, with doubling waits capped.
	var gu *paced.GaveUpError
	if !errors.As(err, &gu) || !errors.Is(err, paced.ErrRateLimited) || gu.Attempts != 4 || gu.Last.Status != 429 {
		t.Fatalf("err %v", err)
	}
	if want := []time.Duration{500 * time.Millisecond, time.Second, 1500 * time.Millisecond}; !slices.Equal(c.all(), want) {
		t.Fatalf("waits %v, want %v", c.all(), want)
	}
	if s := p.Stats(); s != (paced.Stats{Calls: 4, RateLimited: 4, Retries: 3}) || len(at()) != 4 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSeededJitterRepeats(t *testing.T) {
	a, b := paced.SeededJitter(7), paced.SeededJitter(7)
	for range 20 {
		x, y := a(time.Second), b(time.Second)
		if x != y || x < 0 || x > time.Second {
			t.Fatalf("draws %v and %v", x, y)
		}
	}
}

func TestGetPacesEachEndpoint(t *testing.T) {
	// Given 2 calls a second, burst 1,
	c := &clock{now: t0}
	srv, _ := serve(t, c)
	p := newClient(t, c, func(cfg *paced.Config) { cfg.Rate = 2 })
	// when three calls go to one endpoint and one to another,
	for _, ep := range []string{"/a", "/a", "/b", "/a"} {
		if _, err := p.Get(t.Context(), ep, srv.URL, nil); err != nil {
			t.Fatal(err)
		}
	}
	// then only the second and third calls of /a wait for their token.
	if want := []time.Duration{500 * time.Millisecond, 500 * time.Millisecond}; !slices.Equal(c.all(), want) {
		t.Fatalf("waits %v, want %v", c.all(), want)
	}
}

func TestGetReturnsOtherStatusesUnretried(t *testing.T) {
	c := &clock{now: t0}
	srv, at := serve(t, c, reply{status: 404})
	resp, err := newClient(t, c, nil).Get(t.Context(), "/x", srv.URL, nil)
	if err != nil || resp.Status != 404 || len(at()) != 1 || len(c.all()) != 0 {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
}

func TestGetStopsOnACancelledContext(t *testing.T) {
	c := &clock{now: t0}
	srv, at := serve(t, c)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := newClient(t, c, nil).Get(ctx, "/x", srv.URL, nil)
	if !errors.Is(err, context.Canceled) || len(at()) != 0 {
		t.Fatalf("err %v, %d calls", err, len(at()))
	}
}

func TestWalkStopsAtACursorSeenBefore(t *testing.T) {
	tests := []struct {
		name    string
		budget  int
		cursors []string
		stopAt  int
		is      error
	}{
		{name: "A, B, A stops at the second A", budget: 100, cursors: []string{"A", "B", "A"}, stopAt: 3, is: paced.ErrCursorLoop},
		{name: "A, A stops at once", budget: 100, cursors: []string{"A", "A"}, stopAt: 2, is: paced.ErrCursorLoop},
		{name: "no cursor", budget: 100, cursors: []string{"A", ""}, stopAt: 2, is: paced.ErrNoCursor},
		{name: "fresh cursors past the budget", budget: 3, cursors: []string{"A", "B", "C", "D"}, stopAt: 3, is: paced.ErrPageBudget},
		{name: "fresh cursors within the budget", budget: 4, cursors: []string{"A", "B", "C"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := paced.NewWalk(tt.budget)
			for i, cur := range tt.cursors {
				err := w.Next(cur)
				if err == nil {
					continue
				}
				var we *paced.WalkError
				if !errors.As(err, &we) || !errors.Is(err, tt.is) || i+1 != tt.stopAt || we.Page != tt.stopAt {
					t.Fatalf("page %d: %v; want %v at page %d", i+1, err, tt.is, tt.stopAt)
				}
				return
			}
			if tt.is != nil {
				t.Fatalf("the walk never stopped")
			}
		})
	}
}

func TestConfigIsValidated(t *testing.T) {
	_, err := paced.New(paced.Config{Rate: -1, BackoffBase: time.Minute, BackoffMax: time.Second})
	if !errors.Is(err, paced.ErrBadConfig) || !strings.Contains(err.Error(), "Rate") || !strings.Contains(err.Error(), "BackoffBase") {
		t.Fatalf("err %v", err)
	}
}

func TestGetHoldsLaterCallsUntilRetryAfterRunsOut(t *testing.T) {
	// Given a provider that answers 429 Retry-After: 30 to more attempts
	// than the client makes,
	c := &clock{now: t0}
	ra := reply{status: 429, header: map[string]string{"Retry-After": "30"}}
	srv, at := serve(t, c, ra, ra, ra)
	p := newClient(t, c, func(cfg *paced.Config) { cfg.MaxAttempts = 2 })
	// when a call gives up on it,
	if _, err := p.Get(t.Context(), "/a", srv.URL, nil); !errors.Is(err, paced.ErrGaveUp) {
		t.Fatalf("first call: err %v", err)
	}
	gaveUp := c.Now()
	// then a second call through the same client, to any endpoint, does
	// not reach the provider before the named wait has run out.
	_, err := p.Get(t.Context(), "/b", srv.URL, nil)
	calls := at()
	if len(calls) < 3 {
		t.Fatalf("err %v; requests at %v", err, calls)
	}
	if early := gaveUp.Add(30 * time.Second).Sub(calls[2]); early > 0 {
		t.Fatalf("the second call reached the provider %v before Retry-After ran out (requests at %v)", early, calls)
	}
}

func TestGetFailsFastWhenTheHoldOutlastsTheDeadline(t *testing.T) {
	// Given a client held 30 s by a provider's Retry-After,
	c := &clock{now: t0}
	ra := reply{status: 429, header: map[string]string{"Retry-After": "30"}}
	srv, at := serve(t, c, ra)
	p := newClient(t, c, func(cfg *paced.Config) { cfg.MaxAttempts = 1 })
	if _, err := p.Get(t.Context(), "/a", srv.URL, nil); !errors.Is(err, paced.ErrGaveUp) {
		t.Fatalf("first call: err %v", err)
	}
	// when a call comes whose deadline ends before the hold does,
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := p.Get(ctx, "/a", srv.URL, nil)
	// then it fails at once with the typed error, sends nothing and
	// sleeps not at all.
	var held *paced.HeldError
	if !errors.As(err, &held) || !errors.Is(err, paced.ErrHeld) || !errors.Is(err, paced.ErrRateLimited) ||
		!held.Until.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("err %v; want a HeldError until %v", err, t0.Add(30*time.Second))
	}
	if n := len(at()); n != 1 || len(c.all()) != 0 {
		t.Fatalf("%d requests, waits %v: the held call was sent or waited", n, c.all())
	}
	// And a reader's sentinel classes it as rate limited.
	rl, un := errors.New("rl"), errors.New("un")
	if got := paced.As(err, rl, un); !errors.Is(got, rl) {
		t.Fatalf("As = %v, want the rate-limited sentinel", got)
	}
}
