package openmeter_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/openmeter"
	"github.com/hookline/hookline/internal/sums"
	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/provider"
)

// stepClock is a manual clock that moves only when the client waits on
// it, recording each wait.
type stepClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Wait(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return nil
}

func TestNoCallBeforeRetryAfterRunsOut(t *testing.T) {
	const events = `{"items":[]}`
	const query = `{"data":[]}`
	for _, tc := range []struct {
		name string
		read func(t *testing.T, cfg openmeter.Config) error
		body string
	}{
		{name: "the export", body: events, read: func(t *testing.T, cfg openmeter.Config) error {
			c, err := openmeter.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return c.ListUsage(t.Context(), t0, t0.Add(time.Minute), func([]provider.UsageRecord) error { return nil })
		}},
		{name: "the meter query", body: query, read: func(t *testing.T, cfg openmeter.Config) error {
			r, err := openmeter.NewReader(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Sums(t.Context(), sums.Query{Meter: sums.Meter{ProviderMeter: "tokens_total"}, Ref: "wl",
				Start: t0, End: t0.Add(time.Hour), Width: time.Hour})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Given an OpenMeter that answers 503 with Retry-After: 1, then
			// an empty answer, and a clock that moves only when the client
			// waits,
			clock := &stepClock{now: t0}
			var mu sync.Mutex
			var at []time.Time
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				mu.Lock()
				at = append(at, clock.Now())
				n := len(at)
				mu.Unlock()
				if n == 1 {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				w.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			ms, _ := usagein.ParseMappings([]byte(mappings))
			cfg := openmeter.Config{BaseURL: srv.URL, Source: "meters", Mapping: ms.For("meters"), Wait: clock.Wait}
			// when it is read,
			if err := tc.read(t, cfg); err != nil {
				t.Fatal(err)
			}
			// then the one wait is the second OpenMeter asked for, and no
			// request came before it ran out.
			if !slices.Equal(clock.waits, []time.Duration{time.Second}) {
				t.Fatalf("waits %v, want [1s]", clock.waits)
			}
			if len(at) != 2 || at[1].Sub(at[0]) < time.Second {
				t.Fatalf("requests at %v: the retry came before Retry-After ran out", at)
			}
		})
	}
}
