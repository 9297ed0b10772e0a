package reconcilerfn

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/paced"
	"github.com/hookline/hookline/internal/sums"
)

func TestSumSourcesOfOneProviderShareItsRetryAfter(t *testing.T) {
	// Given an OpenMeter that answers every call 429 Retry-After: 30, and
	// two sums sources reading it,
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	srcs := sums.Sources{
		"om-a": {Name: "om-a", Provider: "openmeter", Meters: map[string]sums.Meter{"a": {Name: "a", ProviderMeter: "a"}}},
		"om-b": {Name: "om-b", Provider: "openmeter", Meters: map[string]sums.Meter{"b": {Name: "b", ProviderMeter: "b"}}},
	}
	readers, err := sumReaders(app.Deps{Lookup: lookupOf(map[string]string{"OPENMETER_URL": srv.URL})}, config.Reconciler{Spend: config.Spend{Sums: srcs}})
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) error {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		_, err := readers[name].Sums(ctx, sums.Query{Source: srcs[name], Meter: srcs[name].Meters[name[3:]], Ref: "s",
			Start: start, End: start.Add(time.Hour), Width: time.Hour})
		return err
	}
	// when one source's read is told to wait 30 s,
	if err := read("om-a"); !errors.Is(err, paced.ErrHeld) || calls.Load() != 1 {
		t.Fatalf("om-a: %d calls, err %v; want one call, then held", calls.Load(), err)
	}
	// then the other source's read does not call OpenMeter before the
	// wait runs out: it is held too.
	err = read("om-b")
	if n := calls.Load(); n != 1 || !errors.Is(err, paced.ErrHeld) {
		t.Fatalf("om-b: OpenMeter got %d calls in all, err %v; want none after the Retry-After", n, err)
	}
}
