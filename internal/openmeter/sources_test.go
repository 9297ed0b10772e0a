package openmeter_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/openmeter"
	"github.com/hookline/hookline/internal/usagein"
)

const gpuMappings = `{"gpu": {"format": "cloudevents", "usage_types": ["com.example.gpu_hours"], "scale": 3600, "unit": "units", "max_age": "840h"},
 "twin": {"format": "cloudevents", "usage_types": ["com.example.tokens"], "unit": "units"}}`

func TestEachMeterIsReadWithItsOwnMapping(t *testing.T) {
	ms, err := usagein.ParseMappings([]byte(gpuMappings))
	if err != nil {
		t.Fatal(err)
	}
	// Given tokens (scale 1000) and GPU hours (scale 3600) in OpenMeter,
	// each a door source of its own,
	r := newRig(t, func(c *openmeter.Config) {
		c.More = []openmeter.ExportSource{{Name: "gpu", Mapping: ms.For("gpu")}}
	})
	r.ingest(t, tokens("t1", "wl", "1.5", t0),
		providersim.UsageCloudEvent{Source: "/meter/g", ID: "g1", Type: "com.example.gpu_hours", Subject: "wl", Time: t0, Value: "0.25"},
		providersim.UsageCloudEvent{Source: "/meter/x", ID: "x1", Type: "com.example.other", Subject: "wl", Time: t0, Value: "9"})
	r.clock.Advance(time.Hour)
	// when the window is listed,
	got := r.list(t, t0.Add(-time.Minute), t0.Add(time.Hour))
	// then each is scaled by its own source's mapping and keyed as its
	// door source keys it; a type no source counts is skipped.
	want := map[string]struct {
		units         int64
		source, meter string
	}{
		key("t1"): {1500, "meters", "com.example.tokens"},
		usagein.CloudEventKey("gpu", "/meter/g", "g1"): {900, "gpu", "com.example.gpu_hours"},
	}
	if len(got) != len(want) {
		t.Fatalf("records %v, want %d", ids(got), len(want))
	}
	for _, rec := range got {
		w, ok := want[rec.RecordID]
		if !ok || rec.Units != w.units || rec.Source != w.source || rec.Meter != w.meter || rec.Invalid != nil {
			t.Fatalf("record %+v, want %+v", rec, w)
		}
	}
}

func TestATypeTwoSourcesClaimIsRefused(t *testing.T) {
	ms, _ := usagein.ParseMappings([]byte(mappings))
	more, _ := usagein.ParseMappings([]byte(gpuMappings))
	_, err := openmeter.New(openmeter.Config{BaseURL: "https://om.example", Source: "meters", Mapping: ms.For("meters"),
		More: []openmeter.ExportSource{{Name: "twin", Mapping: more.For("twin")}, {Name: "", Mapping: more.For("gpu")}}})
	for _, want := range []string{`"com.example.tokens" is claimed by sources "meters" and "twin"`, "More[1]: Name is required"} {
		if !errors.Is(err, openmeter.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Fatalf("err %v: want %q", err, want)
		}
	}
}
