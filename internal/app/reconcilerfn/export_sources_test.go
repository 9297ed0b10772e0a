package reconcilerfn

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/spendledger"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/provider"
)

func TestTheOpenMeterExportReadsEachMeterWithItsOwnMapping(t *testing.T) {
	// Given two door sources teed to OpenMeter, tokens at scale 1000 and
	// GPU hours at scale 3600 (seconds), and an event of each that only
	// OpenMeter holds,
	t0 := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	clock := providersim.NewManualClock(t0)
	om := providersim.NewOpenMeter(providersim.OpenMeterConfig{Now: clock.Now, APIKey: "om_key"})
	if err := om.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { om.Close() })
	for _, ev := range []providersim.UsageCloudEvent{
		{Source: "/meter/a", ID: "tok-1", Type: "com.example.tokens", Subject: "wl", Time: t0, Value: "2.5"},
		{Source: "/meter/g", ID: "gpu-1", Type: "com.example.gpu_hours", Subject: "wl", Time: t0, Value: "0.5"},
	} {
		if _, err := om.Ingest(ev); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"USAGE_EXPORT": "openmeter", "OPENMETER_URL": om.URL(), "OPENMETER_API_KEY": "om_key",
		"USAGE_EXPORT_SOURCE": "meters,gpu",
		"USAGE_MAPPINGS": `{"meters": {"format": "cloudevents", "usage_types": ["com.example.tokens"], "scale": 1000, "unit": "units"},
		                   "gpu": {"format": "cloudevents", "usage_types": ["com.example.gpu_hours"], "scale": 3600, "unit": "units"}}`}
	// when the reconciler's export reads the window,
	exp, err := newExport(app.Deps{Lookup: lookupOf(env)}, config.Reconciler{Spend: config.Spend{ReconRoutingKey: "rk"}}, spendledger.Ledger{})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	var got []provider.UsageRecord
	if err := exp.ListUsage(context.Background(), t0.Add(-time.Minute), t0.Add(time.Hour), func(recs []provider.UsageRecord) error {
		got = append(got, recs...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// then each event is counted under its own source, meter and scale,
	// with the key the door gives it.
	want := map[string]provider.UsageRecord{
		usagein.CloudEventKey("meters", "/meter/a", "tok-1"): {Units: 2500, Source: "meters", Meter: "com.example.tokens"},
		usagein.CloudEventKey("gpu", "/meter/g", "gpu-1"):    {Units: 1800, Source: "gpu", Meter: "com.example.gpu_hours"},
	}
	if len(got) != len(want) {
		t.Fatalf("records %+v, want %d", got, len(want))
	}
	for _, rec := range got {
		w, ok := want[rec.RecordID]
		if !ok || rec.Units != w.Units || rec.Source != w.Source || rec.Meter != w.Meter || rec.Invalid != nil {
			t.Fatalf("record %+v, want %+v", rec, w)
		}
	}
}
