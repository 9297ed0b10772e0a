package stripeusage_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/stripeusage"
	"github.com/hookline/hookline/internal/sums"
)

var inf = math.Inf(1)

func TestSumsReadsEveryPage(t *testing.T) {
	// Given three pages of hourly summaries,
	pages := []reply{
		page(true, summary{"mtrusg_1", 0, 1.5, false}, summary{"mtrusg_2", 1, 2, false}),
		page(true, summary{"mtrusg_3", 2, 0, false}, summary{"mtrusg_4", 3, 40, false}),
		page(false, summary{"mtrusg_5", 4, 0.25, false}),
	}
	f, srv := newFake(t, func(n int, _ url.Values) reply { return pages[n] })
	r, _ := fakeReader(t, srv, nil)
	// when a day is read,
	got, err := r.Sums(t.Context(), query(false, dayStart, dayStart.Add(24*time.Hour), time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// then every summary is a sum, in order,
	want := []sums.Sum{
		summary{h: 0, value: 1.5}.sum(), summary{h: 1, value: 2}.sum(), summary{h: 2}.sum(),
		summary{h: 3, value: 40}.sum(), summary{h: 4, value: 0.25}.sum(),
	}
	if !equalSums(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	// and each page after the first starts after the last ID of the one before.
	calls := f.calls()
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3", len(calls))
	}
	for i, after := range []string{"", "mtrusg_2", "mtrusg_4"} {
		q := calls[i].Query()
		if q.Get("starting_after") != after {
			t.Errorf("call %d: starting_after %q, want %q", i, q.Get("starting_after"), after)
		}
	}
	if s := r.Stats(); s != (stripeusage.Stats{Calls: 3}) {
		t.Fatalf("stats %+v", s)
	}
}

func TestSumsRequestShape(t *testing.T) {
	tests := []struct {
		name   string
		width  time.Duration
		window string
	}{
		{name: "hourly", width: time.Hour, window: "hour"},
		{name: "daily", width: 24 * time.Hour, window: "day"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFake(t, func(int, url.Values) reply { return page(false) })
			r, _ := fakeReader(t, srv, nil)
			end := dayStart.Add(48 * time.Hour)
			if _, err := r.Sums(t.Context(), query(false, dayStart, end, tt.width)); err != nil {
				t.Fatal(err)
			}
			u := f.calls()[0]
			want := url.Values{
				"customer": {"cus_abc"}, "limit": {"100"}, "value_grouping_window": {tt.window},
				"start_time": {strconv.FormatInt(dayStart.Unix(), 10)}, "end_time": {strconv.FormatInt(end.Unix(), 10)},
			}
			if u.Path != "/v1/billing/meters/mtr_123/event_summaries" || u.Query().Encode() != want.Encode() {
				t.Fatalf("GET %s?%s\nwant the path of mtr_123 and %s", u.Path, u.RawQuery, want.Encode())
			}
			if got := f.auths[0]; got != "Bearer "+testKey {
				t.Fatalf("Authorization %q", got)
			}
		})
	}
}

func TestSumsRetries(t *testing.T) {
	tests := []struct {
		name   string
		first  []reply
		waits  []time.Duration
		limits int64
	}{
		{
			name:   "429 twice: jittered waits below 500ms then 1s",
			first:  []reply{{status: 429}, {status: 429}},
			waits:  []time.Duration{500 * time.Millisecond, time.Second},
			limits: 2,
		},
		{
			name:   "429 with Retry-After: its seconds",
			first:  []reply{{status: 429, header: map[string]string{"Retry-After": "7"}}},
			waits:  []time.Duration{7 * time.Second},
			limits: 1,
		},
		{
			name:  "503 with Retry-After 0, then a dropped connection",
			first: []reply{{status: 503, header: map[string]string{"Retry-After": "0"}}, {status: 0}},
			waits: []time.Duration{0, time.Second},
		},
		{
			name:   "a Retry-After of a day is capped",
			first:  []reply{{status: 429, header: map[string]string{"Retry-After": "86400"}}},
			waits:  []time.Duration{stripeusage.MaxRetryAfter},
			limits: 1,
		},
		{
			name:  "a Retry-After that is a date: the time until then",
			first: []reply{{status: 500, header: map[string]string{"Retry-After": "Sun, 01 Mar 2026 00:01:30 GMT"}}},
			waits: []time.Duration{90 * time.Second},
		},
		{
			name:  "a Retry-After that is a date past: no wait",
			first: []reply{{status: 500, header: map[string]string{"Retry-After": "Sat, 28 Feb 2026 23:00:00 GMT"}}},
			waits: []time.Duration{0},
		},
		{
			name:   "a Retry-After too large for a number: the cap",
			first:  []reply{{status: 429, header: map[string]string{"Retry-After": "99999999999999999999999"}}},
			waits:  []time.Duration{stripeusage.MaxRetryAfter},
			limits: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given failures before a page,
			f, srv := newFake(t, func(n int, _ url.Values) reply {
				if n < len(tt.first) {
					return tt.first[n]
				}
				return page(false, summary{"mtrusg_1", 0, 3, false})
			})
			r, w := fakeReader(t, srv, nil)
			stripeusage.SetClock(r, func() time.Time { return dayStart })
			// when the window is read,
			got, err := r.Sums(t.Context(), query(false, dayStart, dayStart.Add(time.Hour), time.Hour))
			// then the page is read after one wait per failure,
			if err != nil {
				t.Fatal(err)
			}
			if !equalSums(got, []sums.Sum{summary{h: 0, value: 3}.sum()}) {
				t.Fatalf("got %+v", got)
			}
			if !slices.Equal(w.all(), tt.waits) {
				t.Fatalf("waits %v, want %v", w.all(), tt.waits)
			}
			// and counted.
			n := int64(len(tt.first))
			want := stripeusage.Stats{Calls: n + 1, RateLimited: tt.limits, Retries: n}
			if s := r.Stats(); s != want || int64(len(f.calls())) != n+1 {
				t.Fatalf("stats %+v, want %+v", s, want)
			}
		})
	}
}

func TestSumsGivesUp(t *testing.T) {
	// Given a Stripe that always answers 429,
	f, srv := newFake(t, func(int, url.Values) reply { return reply{status: 429} })
	r, w := fakeReader(t, srv, func(c *stripeusage.Config) {
		c.MaxAttempts = 4
		c.BackoffMax = 1500 * time.Millisecond
	})
	// when a window is read,
	got, err := r.Sums(t.Context(), query(false, dayStart, dayStart.Add(time.Hour), time.Hour))
	// then it fails after MaxAttempts calls, saying so,
	if got != nil || !errors.Is(err, sums.ErrRead) || !errors.Is(err, stripeusage.ErrRateLimited) {
		t.Fatalf("got %v, %v; want an error wrapping sums.ErrRead and ErrRateLimited", got, err)
	}
	if !strings.Contains(err.Error(), "gave up after 4 attempts") {
		t.Fatalf("err %q does not say how many attempts", err)
	}
	if len(f.calls()) != 4 {
		t.Fatalf("%d calls, want 4", len(f.calls()))
	}
	// after doubling waits capped at BackoffMax.
	if want := []time.Duration{500 * time.Millisecond, time.Second, 1500 * time.Millisecond}; !slices.Equal(w.all(), want) {
		t.Fatalf("waits %v, want %v", w.all(), want)
	}
	if s := r.Stats(); s != (stripeusage.Stats{Calls: 4, RateLimited: 4, Retries: 3}) {
		t.Fatalf("stats %+v", s)
	}
}

func TestSumsRefusals(t *testing.T) {
	tests := []struct {
		name     string
		livemode bool
		replies  []reply
		is       error
	}{
		{name: "a test-mode summary for a live source", livemode: true,
			replies: []reply{page(false, summary{"mtrusg_1", 0, 3, false})}, is: stripeusage.ErrLivemode},
		{name: "a live summary for a test-mode source, on the second page",
			replies: []reply{page(true, summary{"mtrusg_1", 0, 3, false}), page(false, summary{"mtrusg_2", 1, 3, true})},
			is:      stripeusage.ErrLivemode},
		{name: "has_more on an empty page", replies: []reply{page(true)}, is: stripeusage.ErrBadPage},
		{name: "a cursor that does not move",
			replies: []reply{page(true, summary{"mtrusg_1", 0, 3, false}), page(true, summary{"mtrusg_1", 0, 3, false})},
			is:      stripeusage.ErrBadPage},
		{name: "a body that is not JSON", replies: []reply{{status: 200, body: "<html>"}}, is: sums.ErrRead},
		{name: "a redirect", replies: []reply{{status: 304}}, is: sums.ErrRead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFake(t, func(n int, _ url.Values) reply { return tt.replies[n] })
			r, _ := fakeReader(t, srv, nil)
			got, err := r.Sums(t.Context(), query(tt.livemode, dayStart, dayStart.Add(time.Hour), time.Hour))
			if got != nil || !errors.Is(err, tt.is) || !errors.Is(err, sums.ErrRead) {
				t.Fatalf("got %v, %v; want an error wrapping %v and sums.ErrRead", got, err, tt.is)
			}
			if len(f.calls()) != len(tt.replies) {
				t.Fatalf("%d calls, want %d (no retry)", len(f.calls()), len(tt.replies))
			}
		})
	}
}

func TestSumsStripeRefusal(t *testing.T) {
	// Given Stripe refuses the call with its error body,
	f, srv := newFake(t, func(int, url.Values) reply {
		rep := stripeError(400, "invalid_request_error", "resource_missing", "No such billing meter: 'mtr_123'")
		rep.header = map[string]string{"Request-Id": "req_42"}
		return rep
	})
	r, _ := fakeReader(t, srv, nil)
	_, err := r.Sums(t.Context(), query(false, dayStart, dayStart.Add(time.Hour), time.Hour))
	// then the error names Stripe's code and message, and is not retried.
	var api *stripeusage.APIError
	if !errors.As(err, &api) || !errors.Is(err, sums.ErrRead) {
		t.Fatalf("err %v, want an APIError wrapping sums.ErrRead", err)
	}
	want := stripeusage.APIError{Endpoint: stripeusage.SummariesEndpoint, Status: 400, Type: "invalid_request_error",
		Code: "resource_missing", Message: "No such billing meter: 'mtr_123'", RequestID: "req_42"}
	if *api != want {
		t.Fatalf("got %+v\nwant %+v", *api, want)
	}
	for _, s := range []string{"400", "resource_missing", "No such billing meter", "req_42"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q lacks %q", err, s)
		}
	}
	if len(f.calls()) != 1 {
		t.Fatalf("%d calls, want 1", len(f.calls()))
	}
}

func TestSumsRefusesBadQueriesWithoutACall(t *testing.T) {
	aligned := query(false, dayStart, dayStart.Add(24*time.Hour), time.Hour)
	edit := func(f func(*sums.Query)) sums.Query {
		q := aligned
		f(&q)
		return q
	}
	tests := []struct {
		name  string
		q     sums.Query
		field string
	}{
		{"start off the minute", edit(func(q *sums.Query) { q.Start = q.Start.Add(17 * time.Second) }), "Start"},
		{"start off the hour", edit(func(q *sums.Query) { q.Start = q.Start.Add(time.Minute) }), "Start"},
		{"start with nanoseconds", edit(func(q *sums.Query) { q.Start = q.Start.Add(1) }), "Start"},
		{"end off the hour", edit(func(q *sums.Query) { q.End = q.End.Add(-30 * time.Minute) }), "End"},
		{"daily, start off the UTC day", edit(func(q *sums.Query) {
			q.Width, q.Start = 24*time.Hour, q.Start.Add(time.Hour)
		}), "Start"},
		{"end before start", edit(func(q *sums.Query) { q.End = q.Start.Add(-time.Hour) }), "End"},
		{"empty window", edit(func(q *sums.Query) { q.End = q.Start }), "End"},
		{"a width of 30 minutes", edit(func(q *sums.Query) { q.Width = 30 * time.Minute }), "Width"},
		{"no width", edit(func(q *sums.Query) { q.Width = 0 }), "Width"},
		{"no customer", edit(func(q *sums.Query) { q.Ref = "" }), "Ref"},
		{"no meter", edit(func(q *sums.Query) { q.Meter.ProviderMeter = "" }), "Meter.ProviderMeter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFake(t, func(int, url.Values) reply { return page(false) })
			r, _ := fakeReader(t, srv, nil)
			_, err := r.Sums(t.Context(), tt.q)
			var qe *stripeusage.FieldError
			if !errors.As(err, &qe) || qe.Field != tt.field {
				t.Fatalf("err %v, want a FieldError on %s", err, tt.field)
			}
			if !errors.Is(err, stripeusage.ErrBadQuery) || !errors.Is(err, sums.ErrRead) {
				t.Fatalf("err %v does not wrap ErrBadQuery and sums.ErrRead", err)
			}
			if n := len(f.calls()); n != 0 || r.Stats().Calls != 0 {
				t.Fatalf("%d calls made", n)
			}
		})
	}
}

func TestSumsNeverShowsTheKey(t *testing.T) {
	// Given a Stripe that echoes the key in every answer it fails,
	echo := "Invalid API Key provided: " + testKey
	tests := []struct {
		name    string
		replies []reply
	}{
		{name: "401", replies: []reply{stripeError(401, "invalid_request_error", "", echo)}},
		{name: "429 forever", replies: []reply{stripeError(429, "invalid_request_error", "rate_limit", echo)}},
		{name: "500 forever", replies: []reply{stripeError(500, "api_error", "", echo)}},
		{name: "a dropped connection", replies: []reply{{status: 0}}},
		{name: "a refusal echoed in every field", replies: []reply{{status: 403, header: map[string]string{"Request-Id": testKey},
			body: `{"error":{"type":"` + testKey + `","code":"` + testKey + `","param":"` + testKey + `","message":"` + echo + `"}}`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFake(t, func(n int, _ url.Values) reply { return tt.replies[min(n, len(tt.replies)-1)] })
			var logs bytes.Buffer
			r, _ := fakeReader(t, srv, func(c *stripeusage.Config) {
				c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
				c.MaxAttempts = 3
			})
			// when a read fails,
			_, err := r.Sums(t.Context(), query(false, dayStart, dayStart.Add(time.Hour), time.Hour))
			if err == nil {
				t.Fatal("no error")
			}
			// then the key was sent, and is in no error and no log line.
			if f.auths[0] != "Bearer "+testKey {
				t.Fatalf("Authorization %q", f.auths[0])
			}
			if logs.Len() == 0 && len(f.calls()) > 1 {
				t.Fatal("no log lines to check")
			}
			for _, text := range []string{err.Error(), logs.String()} {
				if strings.Contains(text, testKey) || strings.Contains(text, "51SecretKey") {
					t.Fatalf("the key leaked: %s", text)
				}
			}
		})
	}
}

func TestSumsCancelledIsNotRetried(t *testing.T) {
	// Given a caller whose context is already cancelled,
	f, srv := newFake(t, func(int, url.Values) reply { return page(false) })
	r, w := fakeReader(t, srv, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := r.Sums(ctx, query(false, dayStart, dayStart.Add(time.Hour), time.Hour))
	// then the read fails at once, naming the cancellation.
	if !errors.Is(err, context.Canceled) || !errors.Is(err, sums.ErrRead) {
		t.Fatalf("err %v", err)
	}
	if len(f.calls()) != 0 || len(w.all()) != 0 || r.Stats().Retries != 0 {
		t.Fatalf("calls %d, waits %v", len(f.calls()), w.all())
	}
}

func TestSumsWaitCancelled(t *testing.T) {
	// Given a 429 and a Sleep cut short by the caller,
	f, srv := newFake(t, func(int, url.Values) reply { return reply{status: 429} })
	r, _ := fakeReader(t, srv, func(c *stripeusage.Config) {
		c.Sleep = func(context.Context, time.Duration) error { return context.DeadlineExceeded }
	})
	_, err := r.Sums(t.Context(), query(false, dayStart, dayStart.Add(time.Hour), time.Hour))
	// then the read stops there.
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, sums.ErrRead) {
		t.Fatalf("err %v", err)
	}
	if len(f.calls()) != 1 {
		t.Fatalf("%d calls, want 1", len(f.calls()))
	}
}

// fakeClock is a clock that moves only when a Reader sleeps on it.
type fakeClock struct {
	waits
	now time.Time
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	c.waits.sleep(ctx, d)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func TestSumsPacing(t *testing.T) {
	tests := []struct {
		name    string
		rate    float64
		burst   int
		replies []reply
		waits   []time.Duration
	}{
		{
			name: "4 calls at 2/s, burst 1: 3 waits of 500ms", rate: 2, burst: 1,
			replies: pagesOf(4),
			waits:   []time.Duration{500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond},
		},
		{
			name: "4 calls at 2/s, burst 3: 1 wait", rate: 2, burst: 3,
			replies: pagesOf(4),
			waits:   []time.Duration{500 * time.Millisecond},
		},
		{
			name: "a retry is paced too: backoff 250ms, then the pace's other 750ms", rate: 1, burst: 1,
			replies: []reply{{status: 429}, page(false)},
			waits:   []time.Duration{250 * time.Millisecond, 750 * time.Millisecond},
		},
		{
			name: "unpaced", rate: inf, burst: 1,
			replies: pagesOf(4),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a clock that moves only when the reader waits,
			clock := &fakeClock{now: dayStart}
			_, srv := newFake(t, func(n int, _ url.Values) reply { return tt.replies[n] })
			r, _ := fakeReader(t, srv, func(c *stripeusage.Config) {
				c.Rate, c.Burst, c.Sleep, c.BackoffBase = tt.rate, tt.burst, clock.sleep, 250*time.Millisecond
			})
			stripeusage.SetClock(r, clock.Now)
			// when the reader makes its calls,
			if _, err := r.Sums(t.Context(), query(false, dayStart, dayStart.Add(4*time.Hour), time.Hour)); err != nil {
				t.Fatal(err)
			}
			// then each call beyond the burst waits for the limiter.
			if got := clock.all(); !slices.Equal(got, tt.waits) {
				t.Fatalf("waits %v, want %v", got, tt.waits)
			}
			if r.Stats().Calls != int64(len(tt.replies)) {
				t.Fatalf("calls %d", r.Stats().Calls)
			}
		})
	}
}

// pagesOf is n pages of one summary each, linked by has_more.
func pagesOf(n int) []reply {
	out := make([]reply, n)
	for i := range out {
		out[i] = page(i < n-1, summary{"mtrusg_" + strconv.Itoa(i), i, 1, false})
	}
	return out
}

func TestNew(t *testing.T) {
	tests := []struct {
		name   string
		cfg    stripeusage.Config
		fields []string
	}{
		{name: "no key", cfg: stripeusage.Config{}, fields: []string{"Key"}},
		{name: "a key with a newline", cfg: stripeusage.Config{Key: "sk_test_1\nX-Evil: 1"}, fields: []string{"Key"}},
		{name: "not http", cfg: stripeusage.Config{Key: testKey, BaseURL: "ftp://api.stripe.com"}, fields: []string{"BaseURL"}},
		{name: "no host", cfg: stripeusage.Config{Key: testKey, BaseURL: "https://"}, fields: []string{"BaseURL"}},
		{name: "not a URL", cfg: stripeusage.Config{Key: testKey, BaseURL: "http://[::1"}, fields: []string{"BaseURL"}},
		{name: "a query", cfg: stripeusage.Config{Key: testKey, BaseURL: "https://api.stripe.com?x=1"}, fields: []string{"BaseURL"}},
		{name: "negative rate", cfg: stripeusage.Config{Key: testKey, Rate: -1}, fields: []string{"Rate"}},
		{name: "base above max", cfg: stripeusage.Config{Key: testKey, BackoffBase: time.Minute, BackoffMax: time.Second},
			fields: []string{"BackoffBase"}},
		{name: "every problem at once", cfg: stripeusage.Config{BaseURL: "mailto:x", Rate: -1},
			fields: []string{"Key", "BaseURL", "Rate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := stripeusage.New(tt.cfg)
			if r != nil || err == nil {
				t.Fatalf("New accepted %+v", tt.cfg)
			}
			var got []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var ce *stripeusage.FieldError
				if !errors.As(e, &ce) || !errors.Is(e, stripeusage.ErrBadConfig) {
					t.Fatalf("%v is not a FieldError wrapping ErrBadConfig", e)
				}
				got = append(got, ce.Field)
			}
			if !slices.Equal(got, tt.fields) {
				t.Fatalf("fields %v, want %v (%v)", got, tt.fields, err)
			}
			if tt.cfg.Key != "" && strings.Contains(err.Error(), tt.cfg.Key) {
				t.Fatalf("the key is in %q", err)
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	r, err := stripeusage.New(stripeusage.Config{Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	c := stripeusage.Settings(r)
	if c.BaseURL != "https://api.stripe.com" || c.Rate != 25 || c.Burst != 1 || c.MaxAttempts != 6 ||
		c.BackoffBase != 500*time.Millisecond || c.BackoffMax != 20*time.Second ||
		c.HTTPClient == nil || c.Sleep == nil || c.Logger == nil {
		t.Fatalf("defaults %+v", c)
	}
}

func TestSleepHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := stripeusage.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if err := stripeusage.Sleep(t.Context(), 0); err != nil {
		t.Fatalf("err %v", err)
	}
}

func TestFullJitterStaysBelowItsCeiling(t *testing.T) {
	if d := stripeusage.FullJitter(0); d != 0 {
		t.Fatalf("FullJitter(0) = %v", d)
	}
	for range 1000 {
		if d := stripeusage.FullJitter(3); d < 0 || d > 3 {
			t.Fatalf("FullJitter(3) = %v", d)
		}
	}
}

// Stats must be callable while a read runs (go test -race).
func TestStatsWhileReading(t *testing.T) {
	_, srv := newFake(t, func(int, url.Values) reply { return page(false) })
	r, _ := fakeReader(t, srv, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 4 {
			r.Sums(t.Context(), query(false, dayStart, dayStart.Add(time.Hour), time.Hour))
		}
	}()
	for range 100 {
		_ = r.Stats()
	}
	<-done
	if r.Stats().Calls != 4 {
		t.Fatalf("calls %d", r.Stats().Calls)
	}
}
