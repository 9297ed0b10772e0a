package openmeter_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/openmeter"
	"github.com/hookline/hookline/internal/sums"
)

func TestReaderSumsAMeterPerHourForOneSubject(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	if err := r.om.AddMeter(providersimMeter()); err != nil {
		t.Fatal(err)
	}
	// Given usage in two hours for wl-a, and some for wl-b
	r.ingest(t, tokens("h-1", "wl-a", "1.5", t0.Add(10*time.Minute)), tokens("h-2", "wl-a", "2", t0.Add(59*time.Minute+59*time.Second)),
		tokens("h-3", "wl-a", "4", t0.Add(2*time.Hour)), tokens("h-4", "wl-b", "100", t0.Add(time.Minute)))
	reader, err := openmeter.NewReader(openmeter.Config{BaseURL: r.om.URL(), APIKey: "om_key"})
	if err != nil {
		t.Fatal(err)
	}
	q := sums.Query{Meter: sums.Meter{Name: "units", ProviderMeter: "tokens_total"}, Ref: "wl-a",
		Start: t0, End: t0.Add(3 * time.Hour), Width: time.Hour}
	// When its sums are read
	got, err := reader.Sums(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	// Then each hour with usage is one sum; the empty hour is not shown.
	want := []sums.Sum{{Start: t0, End: t0.Add(time.Hour), Value: 3.5}, {Start: t0.Add(2 * time.Hour), End: t0.Add(3 * time.Hour), Value: 4}}
	if !slices.Equal(got, want) {
		t.Fatalf("sums %+v, want %+v", got, want)
	}
	// A width OpenMeter has no window for is refused before any call.
	q.Width = 2 * time.Hour
	if _, err := reader.Sums(context.Background(), q); !errors.Is(err, sums.ErrRead) {
		t.Fatalf("2h windows: %v", err)
	}
}
