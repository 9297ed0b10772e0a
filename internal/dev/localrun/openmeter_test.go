package localrun_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/testkit"
	"github.com/hookline/hookline/internal/usagein"
)

// OpenMeter as the reconciler's export, against the running system: a
// producer tees its CloudEvents to OpenMeter and to the door's meters
// source (docs/providers.md, "OpenMeter"), and OpenMeter notifies its
// thresholds on the om-alerts source.
// omSources are the usage formats' sources and OpenMeter's notifications.
var omSources = strings.TrimSuffix(formatSources, "]") +
	`,{"name":"om-alerts","scheme":"standard-webhooks","secret_env":"HOOKLINE_OM_ALERTS_SECRETS","queue":"usage"}]`

const (
	omMappings = `{"meters": {"format": "cloudevents", "usage_types": ["com.example.tokens"], "scale": 1000, "unit": "units",
	  "max_age": "840h", "reconciled": true}, "om-alerts": {"format": "openmeter-alerts"}}`
	omAlertsSecret = "whsec_aG9va2xpbmUtbG9jYWwtb3BlbWV0ZXIta2V5IQ=="
)

// omSumSources is the OpenMeter sums source of the meters source's
// tokens: what a threshold is compared with. Its references are aliases
// starting om:, which no workload here has, so the settle-time cross-check
// reads nothing in this run.
func omSumSources(url string, start time.Time) string {
	return fmt.Sprintf(`{"om": {"provider": "openmeter", "usage_source": "meters", "account": "ns_default", "start": %q,
	  "base_url": %q, "alias_prefix": "om:",
	  "meters": {"com.example.tokens": {"provider_meter": "tokens_total", "aggregation": "sum", "scale": 1000}}}}`,
		start.Format(time.RFC3339), url)
}

func TestOpenMeterExportFindsWhatTheDoorMissedOnce(t *testing.T) {
	t.Parallel()
	om := providersim.NewOpenMeter(providersim.OpenMeterConfig{APIKey: "om_local_key"})
	if err := om.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { om.Close() })
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	env := map[string]string{"HOOKLINE_SOURCES": omSources, "USAGE_MAPPINGS": omMappings, "HOOKLINE_METERS_SECRETS": metersSecret,
		"HOOKLINE_OM_ALERTS_SECRETS": omAlertsSecret, "USAGE_EXPORT": "openmeter", "USAGE_EXPORT_SOURCE": "meters",
		"OPENMETER_URL": om.URL(), "OPENMETER_API_KEY": "om_local_key", "SUM_SOURCES": omSumSources(om.URL(), day.Add(-24*time.Hour))}
	sys, err := localrun.Start(context.Background(), localrun.Config{Addr: "127.0.0.1:0", ScheduleEvery: time.Second,
		Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Close() })
	ledger, err := sys.Ledger()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := ledger.Spend.Workloads.CreateWorkload(ctx, spend.NewWorkload{ID: "wl-om", Owner: "o", Route: "rk", Cap: 1_000_000_000}); err != nil {
		t.Fatal(err)
	}
	ev := func(id, value string) providersim.UsageCloudEvent {
		return providersim.UsageCloudEvent{Source: "/meter/om", ID: id, Type: "com.example.tokens", Subject: "wl-om",
			Time: now.Add(-time.Minute).Truncate(time.Second), Value: value}
	}
	ingest := func(e providersim.UsageCloudEvent) {
		t.Helper()
		if _, err := om.Ingest(e); err != nil {
			t.Fatal(err)
		}
	}

	// Given a CloudEvent sent to the door and to OpenMeter,
	both := ev("om-both", "2")
	if code, got := ceSend(t, sys, "msg_om_both", false, false, both); code != 200 {
		t.Fatalf("door: %d %s", code, got)
	}
	ingest(both)
	// one only OpenMeter got,
	ingest(ev("om-poll", "3"))
	// and one OpenMeter stores only after the reconciler's windows on its
	// ingestedAt have closed.
	if _, err := om.IngestLate(ev("om-late", "5"), time.Hour); err != nil {
		t.Fatal(err)
	}

	// When the reconciler runs
	waitTotal(t, ledger, "wl-om", 5000)
	waitRuns(t, sys, 2)
	// Then the first is counted once, the second once by the poll, and
	// the late one not yet;
	total := func() int64 {
		w, err := ledger.Spend.Workloads.Get(ctx, "wl-om")
		if err != nil {
			t.Fatal(err)
		}
		return w.Total
	}
	if got := total(); got != 5000 {
		t.Fatalf("total %d, want 5000 (2000 + 3000)", got)
	}
	// once stored, the late one is found by a later run, and still nothing
	// is counted twice.
	if n := om.StoreLate(); n != 1 {
		t.Fatalf("stored %d late events", n)
	}
	waitTotal(t, ledger, "wl-om", 10000)
	waitRuns(t, sys, 2)
	if got := total(); got != 10000 {
		t.Fatalf("total %d, want 10000 (2000 + 3000 + 5000)", got)
	}
	// hookline event explain names the record the door never got as found
	// by the poll, and the one it got as seen by both paths.
	for _, c := range []struct{ id, want string }{{"om-poll", "via poll,"}, {"om-both", "via webhook+poll,"}} {
		key := usagein.CloudEventKey("meters", "/meter/om", c.id)
		x, err := ledger.Spend.Explainer.ExplainEvent(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		var text bytes.Buffer
		if err := ops.NewEventRunbook(key, x, time.Now()).WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), "record "+key+", ") || !strings.Contains(text.String(), c.want) {
			t.Fatalf("explain %s:\n%s\nwant %q", c.id, text.String(), c.want)
		}
	}
	// The export read OpenMeter as its spec says: nothing was refused.
	if ref := om.Refusals(); len(ref) > 0 {
		t.Fatalf("OpenMeter refused: %v", ref)
	}

	// Given a threshold at 1000 tokens today, while the ledger's webhooks
	// hold 2 (the poll's records are no bucket's)
	body, err := providersim.OpenMeterThreshold{ID: "01J0THRE5H0000000000000000", Subject: "wl-om", MeterSlug: "tokens_total",
		Usage: "1000", PeriodFrom: day, PeriodTo: day.Add(24 * time.Hour), At: now}.Body()
	if err != nil {
		t.Fatal(err)
	}
	// When Svix delivers it twice, under its own header names
	for i, msg := range []string{"msg_om_alert", "msg_om_alert_retry"} {
		sign := providersim.StandardSigner(omAlertsSecret, "application/json", true)
		if code, got := send(t, sys, "om-alerts", func(_ string, ts time.Time, b []byte) (http.Header, error) { return sign(msg, ts, b) }, body); code != 200 {
			t.Fatalf("delivery %d: %d %s", i, code, got)
		}
	}
	// Then it pages the owner once.
	key := "usage-alert#om#01J0THRE5H0000000000000000"
	testkit.Eventually(t, 30*time.Second, "the threshold paged", func() bool { return slices.Contains(pageKeys(sys), key) })
	waitRuns(t, sys, 2)
	if n := countOf(pageKeys(sys), key); n != 1 {
		t.Fatalf("threshold paged %d times, want once", n)
	}
}

func pageKeys(sys *localrun.System) []string {
	var out []string
	for _, p := range sys.Sim.Pager.Pages() {
		out = append(out, p.DedupKey)
	}
	return out
}

func countOf(keys []string, key string) int {
	n := 0
	for _, k := range keys {
		if k == key {
			n++
		}
	}
	return n
}
