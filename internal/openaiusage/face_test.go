package openaiusage_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/openaiusage"
	"github.com/hookline/hookline/internal/sums"
)

var day0 = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

const project = "proj_abc"

// face is the simulator's OpenAI face on a manual clock, and a reader of
// it that records its waits instead of sleeping.
type face struct {
	sim   *providersim.Sim
	clock *providersim.ManualClock
	r     *openaiusage.Reader
	waits []time.Duration
}

func newFace(t *testing.T, cfg openaiusage.Config) *face {
	t.Helper()
	f := &face{clock: providersim.NewManualClock(day0.Add(3 * 24 * time.Hour))}
	sim, err := providersim.New(providersim.Config{Now: f.clock.Now, Seed: 35})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	f.sim = sim
	cfg.BaseURL, cfg.Rate = srv.URL, rate.Inf
	if cfg.Key == "" {
		cfg.Key = providersim.OpenAIAdminKey
	}
	cfg.Sleep = func(_ context.Context, d time.Duration) error { f.waits = append(f.waits, d); return nil }
	if f.r, err = openaiusage.New(cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

// tokens is a completions meter counting input×1 + output×4.
var tokens = sums.Meter{Name: "priced_tokens", Endpoint: "completions", Aggregation: sums.AggregationSum,
	Fields: map[string]json.Number{"input_tokens": "1", "output_tokens": "4"}}

// costs is a money meter in micro-dollars.
var costs = sums.Meter{Name: "spend_musd", Endpoint: sums.OpenAICosts, Field: sums.OpenAIAmount,
	Aggregation: sums.AggregationSum, Currency: "usd", Scale: 1_000_000}

func usageQuery(m sums.Meter, start, end time.Time, width time.Duration) sums.Query {
	return sums.Query{Meter: m, Ref: project, Start: start, End: end, Width: width}
}

func (f *face) use(t *testing.T, at time.Time, in, out int64) {
	t.Helper()
	err := f.sim.AddOpenAIUsage(providersim.OpenAIUsage{Endpoint: "completions", Project: project, At: at,
		Fields: map[string]int64{"input_tokens": in, "output_tokens": out, "input_cached_tokens": 7}})
	if err != nil {
		t.Fatal(err)
	}
}

func values(got []sums.Sum) map[time.Time]float64 {
	out := map[time.Time]float64{}
	for _, s := range got {
		out[s.Start] = s.Value
	}
	return out
}

func TestSumsFollowsPagesThatEndEarly(t *testing.T) {
	// Given usage in 30 hours of one day and the next, another project's
	// usage, and a face whose pages end after 7 buckets with has_more,
	f := newFace(t, openaiusage.Config{})
	for h := range 30 {
		f.use(t, day0.Add(time.Duration(h)*time.Hour+time.Minute), int64(100+h), int64(h))
	}
	if err := f.sim.AddOpenAIUsage(providersim.OpenAIUsage{Endpoint: "completions", Project: "proj_other",
		At: day0, Fields: map[string]int64{"input_tokens": 1_000_000}}); err != nil {
		t.Fatal(err)
	}
	f.sim.SetOpenAIPageSize(7)

	// when two days of hour buckets are read,
	got, err := f.r.Sums(t.Context(), usageQuery(tokens, day0, day0.Add(48*time.Hour), time.Hour))
	if err != nil {
		t.Fatal(err)
	}

	// then every bucket with usage is one sum of input + 4 × output, the
	// other project's usage is in none, and every short page was followed.
	if len(got) != 30 {
		t.Fatalf("%d sums, want 30: %+v", len(got), got)
	}
	for h, s := range got {
		want := float64(100+h) + 4*float64(h)
		if !s.Start.Equal(day0.Add(time.Duration(h)*time.Hour)) || s.End.Sub(s.Start) != time.Hour || s.Value != want {
			t.Fatalf("sum %d = %+v, want %v at hour %d", h, s, want, h)
		}
	}
	if c := f.sim.OpenAICalls(); c.Usage != 7 || c.ShortPages != 6 {
		t.Fatalf("calls %+v, want 7 pages of which 6 ended early", c)
	}
	if s := f.r.Stats(); s != (openaiusage.Stats{Calls: 7}) {
		t.Fatalf("stats %+v", s)
	}
}

func TestSumsShowsLagGapsAndRevisions(t *testing.T) {
	// Given usage in hour 1 and hour 2 that shows 10 minutes after it
	// arrived, and a gap hiding hour 2,
	f := newFace(t, openaiusage.Config{})
	f.sim.SetOpenAILag(10 * time.Minute)
	f.use(t, day0.Add(time.Hour), 50, 0)
	f.use(t, day0.Add(2*time.Hour), 60, 0)
	if err := f.sim.AddOpenAIGap(providersim.OpenAIGap{At: day0.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	q := usageQuery(tokens, day0, day0.Add(24*time.Hour), time.Hour)
	read := func() map[time.Time]float64 {
		t.Helper()
		got, err := f.r.Sums(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		return values(got)
	}

	// when it is read before the lag has passed, then nothing is observed:
	// an empty bucket is no sum, never a zero;
	if got := read(); len(got) != 0 {
		t.Fatalf("before the lag: %v, want nothing", got)
	}
	// after it, hour 1 shows and the gap leaves hour 2 out;
	f.clock.Advance(10 * time.Minute)
	if got := read(); len(got) != 1 || got[day0.Add(time.Hour)] != 50 {
		t.Fatalf("after the lag: %v, want hour 1 = 50 only", got)
	}
	// once the gap closes and OpenAI revises hour 1 up by 5 and hour 2
	// down by 20, both show their revised values at once.
	f.sim.ClearOpenAIGaps()
	for _, rev := range []struct {
		h  time.Duration
		by int64
	}{{time.Hour, 5}, {2 * time.Hour, -20}} {
		if err := f.sim.ReviseOpenAIUsage("completions", project, day0.Add(rev.h), "input_tokens", rev.by); err != nil {
			t.Fatal(err)
		}
	}
	if got := read(); len(got) != 2 || got[day0.Add(time.Hour)] != 55 || got[day0.Add(2*time.Hour)] != 40 {
		t.Fatalf("after the revisions: %v, want hour 1 = 55, hour 2 = 40", got)
	}
}

func TestSumsRetriesA429(t *testing.T) {
	tests := []struct {
		name       string
		fail       int
		after      time.Duration
		wantErr    error
		wantWaits  []time.Duration
		wantCalls  int64
		wantLimits int64
	}{
		{name: "retry-after-ms honoured", fail: 2, after: 1500 * time.Millisecond,
			wantWaits: []time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond}, wantCalls: 3, wantLimits: 2},
		{name: "no header: the backoff's wait", fail: 1, after: -1,
			wantWaits: []time.Duration{time.Second}, wantCalls: 2, wantLimits: 1},
		{name: "gives up after MaxAttempts", fail: 3, after: 2 * time.Second, wantErr: openaiusage.ErrRateLimited,
			wantWaits: []time.Duration{2 * time.Second, 2 * time.Second}, wantCalls: 3, wantLimits: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given a face whose next calls answer 429,
			f := newFace(t, openaiusage.Config{MaxAttempts: 3, Backoff: fixedBackoff(time.Second)})
			f.use(t, day0, 10, 1)
			f.sim.FailOpenAICalls(tc.fail, tc.after)

			// when a day is read,
			got, err := f.r.Sums(t.Context(), usageQuery(tokens, day0, day0.Add(sums.Day), sums.Day))

			// then it waits as OpenAI asked (or as the backoff says), and
			// reads the day or gives up with a read error.
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !errors.Is(err, sums.ErrRead) || got != nil {
					t.Fatalf("got %v, %v; want %v wrapping sums.ErrRead", got, err, tc.wantErr)
				}
			} else if err != nil || len(got) != 1 || got[0].Value != 14 {
				t.Fatalf("got %+v, %v; want one day of 14", got, err)
			}
			if len(f.waits) != len(tc.wantWaits) {
				t.Fatalf("waits %v, want %v", f.waits, tc.wantWaits)
			}
			for i := range f.waits {
				if f.waits[i] != tc.wantWaits[i] {
					t.Fatalf("waits %v, want %v", f.waits, tc.wantWaits)
				}
			}
			if s := f.r.Stats(); s.Calls != tc.wantCalls || s.RateLimited != tc.wantLimits || s.Retries != int64(len(tc.wantWaits)) {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

// fixedBackoff always waits d.
type fixedBackoff time.Duration

func (d fixedBackoff) BackoffDelay(int, error) (time.Duration, error) { return time.Duration(d), nil }

func TestSumsCostsAreMoneyRoundedAtTheBucket(t *testing.T) {
	// Given costs of 0.1 and 0.2 dollars on day 1 rendered as a float
	// sum, 1.25 on day 2, and float noise on,
	f := newFace(t, openaiusage.Config{})
	for _, c := range []providersim.OpenAICost{
		{Project: project, At: day0.Add(time.Hour), Value: "0.1"},
		{Project: project, At: day0.Add(2 * time.Hour), Value: "0.2"},
		{Project: project, At: day0.Add(sums.Day), Value: "1.25"},
	} {
		if err := f.sim.AddOpenAICost(c); err != nil {
			t.Fatal(err)
		}
	}
	f.sim.SetOpenAICostNoise(true)

	// when the costs of the days are read,
	got, err := f.r.Sums(t.Context(), usageQuery(costs, day0, day0.Add(2*sums.Day), sums.Day))
	if err != nil {
		t.Fatal(err)
	}

	// then day 1 is the float sum, not exactly 0.3, and both round at the
	// bucket to exact micro-dollars.
	if len(got) != 2 || got[0].Value == 0.3 {
		t.Fatalf("got %+v, want two days, the first with float noise", got)
	}
	for i, want := range []int64{300_000, 1_250_000} {
		if u, ok := costs.Units(got[i].Value); !ok || u != want {
			t.Fatalf("day %d: %v is %d units, want %d", i, got[i].Value, u, want)
		}
	}
	if c := f.sim.OpenAICalls(); c.Costs != 1 || c.Usage != 0 {
		t.Fatalf("calls %+v, want one call of costs", c)
	}
}

func TestSumsRefusesACostInAnotherCurrency(t *testing.T) {
	// Given a cost in euros,
	f := newFace(t, openaiusage.Config{})
	if err := f.sim.AddOpenAICost(providersim.OpenAICost{Project: project, At: day0, Value: "3", Currency: "eur"}); err != nil {
		t.Fatal(err)
	}
	// when a dollar meter reads it, then it is refused, not counted.
	got, err := f.r.Sums(t.Context(), usageQuery(costs, day0, day0.Add(sums.Day), sums.Day))
	if !errors.Is(err, openaiusage.ErrCurrency) || !errors.Is(err, sums.ErrRead) || got != nil {
		t.Fatalf("got %v, %v; want ErrCurrency", got, err)
	}
}

func TestSumsRefusesQueriesBeforeAnyCall(t *testing.T) {
	hour := usageQuery(tokens, day0, day0.Add(time.Hour), time.Hour)
	tests := []struct {
		name  string
		edit  func(q *sums.Query)
		field string
	}{
		{name: "no project", edit: func(q *sums.Query) { q.Ref = "" }, field: "Ref"},
		{name: "no endpoint", edit: func(q *sums.Query) { q.Meter.Endpoint = "" }, field: "Meter.Endpoint"},
		{name: "a path as endpoint", edit: func(q *sums.Query) { q.Meter.Endpoint = "../costs" }, field: "Meter.Endpoint"},
		{name: "30-minute buckets", edit: func(q *sums.Query) { q.Width = 30 * time.Minute }, field: "Width"},
		{name: "costs by the hour", edit: func(q *sums.Query) { q.Meter = costs }, field: "Width"},
		{name: "unaligned", edit: func(q *sums.Query) { q.Start = q.Start.Add(time.Minute) }, field: "Start, End"},
		{name: "empty window", edit: func(q *sums.Query) { q.End = q.Start }, field: "End"},
		{name: "no field", edit: func(q *sums.Query) { q.Meter.Fields = nil }, field: "Meter.Field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given a query OpenAI would refuse,
			f := newFace(t, openaiusage.Config{})
			q := hour
			tc.edit(&q)
			// when it is read, then it is refused, naming the field, with
			// no call made.
			_, err := f.r.Sums(t.Context(), q)
			var qe *openaiusage.QueryError
			if !errors.As(err, &qe) || qe.Field != tc.field || !errors.Is(err, openaiusage.ErrBadQuery) || !errors.Is(err, sums.ErrRead) {
				t.Fatalf("err = %v, want a QueryError of %s", err, tc.field)
			}
			if c := f.sim.OpenAICalls(); c.Usage+c.Costs != 0 {
				t.Fatalf("calls %+v, want none", c)
			}
		})
	}
}

func TestSumsWrongKeyIsAnAPIErrorWithoutTheKey(t *testing.T) {
	// Given a face that takes another admin key,
	const key = "sk-admin-the-secret-one"
	f := newFace(t, openaiusage.Config{Key: key})
	f.sim.SetOpenAIAdminKey("sk-admin-another")
	// when it is read, then OpenAI's 401 is an APIError, not retried, and
	// the key is nowhere in it.
	_, err := f.r.Sums(t.Context(), usageQuery(tokens, day0, day0.Add(time.Hour), time.Hour))
	var ae *openaiusage.APIError
	if !errors.As(err, &ae) || ae.Status != 401 || ae.Code != "invalid_api_key" || !errors.Is(err, sums.ErrRead) {
		t.Fatalf("err = %v, want a 401 APIError", err)
	}
	if s := f.r.Stats(); s.Calls != 1 || s.Retries != 0 {
		t.Fatalf("stats %+v, want one call", s)
	}
	if containsKey(err.Error(), key) {
		t.Fatalf("the error names the key: %v", err)
	}
}
