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
// tokens, hourly, settled two hours after a bucket ends: the cross-check
// of what the export and the door counted, and what a threshold is
// compared with. It names no base_url, so the local run points it at its
// OpenMeter face, and no alias_prefix, so a workload's references are
// all its aliases: the subjects the door and the export resolve.
func omSumSources(start time.Time) string {
	return fmt.Sprintf(`{"om": {"provider": "openmeter", "usage_source": "meters", "account": "ns_default", "start": %q,
	  "settle": "2h", "lag": "1s", "interval": "1s",
	  "meters": {"com.example.tokens": {"provider_meter": "tokens_total", "aggregation": "sum", "scale": 1000}}}}`,
		start.Format(time.RFC3339))
}

func TestOpenMeterExportFindsWhatTheDoorMissedOnce(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	// OPENMETER_URL is not set: the export reads the run's own face, as
	// the sums source does.
	clock := &localrun.Clock{}
	sys, ledger := startDrill(t, env(map[string]string{"HOOKLINE_SOURCES": omSources, "USAGE_MAPPINGS": omMappings,
		"HOOKLINE_METERS_SECRETS": metersSecret, "HOOKLINE_OM_ALERTS_SECRETS": omAlertsSecret, "USAGE_EXPORT": "openmeter",
		"USAGE_EXPORT_SOURCE": "meters", "SUM_SOURCES": omSumSources(day.Add(-24 * time.Hour))}),
		everySecond(), onClock(clock), workload(spend.NewWorkload{ID: "wl-om", Cap: 1_000_000_000}, "cust-om"))
	om := sys.OpenMeter
	if err := om.AddMeter(providersim.OpenMeterMeter{Slug: "tokens_total", EventType: "com.example.tokens", Aggregation: "SUM"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	at := now.Add(-time.Minute).Truncate(time.Second)
	evAt := func(id, value string, at time.Time) providersim.UsageCloudEvent {
		return providersim.UsageCloudEvent{Source: "/meter/om", ID: id, Type: "com.example.tokens", Subject: "cust-om", Time: at, Value: value}
	}
	ev := func(id, value string) providersim.UsageCloudEvent { return evAt(id, value, at) }
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
	waitTotal(t, ledger, "wl-om", 2000) // the door's path first, as the explain below says
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

	// Given a threshold at 1000 tokens today, while the ledger's bucket
	// holds 10 (each record once, whichever path found it)
	body, err := providersim.OpenMeterThreshold{ID: "01J0THRE5H0000000000000000", Subject: "cust-om", MeterSlug: "tokens_total",
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

	// Given, two hours earlier, an event OpenMeter counted twice (its
	// dedupe is off by default), which the export finds once
	dupHour := at.Truncate(time.Hour).Add(-2 * time.Hour)
	dup := evAt("om-dup", "4", dupHour.Add(10*time.Minute))
	ingest(dup)
	ingest(dup)
	waitTotal(t, ledger, "wl-om", 10000+8000)
	// When both hours pass their settle horizon
	clock.Advance(3*time.Hour + time.Minute)
	settled := func(start time.Time) spend.Bucket {
		t.Helper()
		var got spend.Bucket
		testkit.Eventually(t, settleBound, "the bucket of "+start.Format(time.RFC3339)+" settled", func() bool {
			bs, err := ledger.Spend.Explainer.Buckets(ctx, "wl-om", 0)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(bs, func(b spend.Bucket) bool { return b.Start.Equal(start) && b.Settled })
			if i >= 0 {
				got = bs[i]
			}
			return i >= 0
		})
		return got
	}
	// then the hour whose records the meter query sums alike settles with
	// no gap, and the one it shows higher with its gap, paged once;
	if b := settled(at.Truncate(time.Hour)); b.Gap != 0 || b.W != 10000 || b.Counted != 10000 {
		t.Fatalf("the hour both paths agree on: %+v, want W=P=10000 and no gap", b)
	}
	if b := settled(dupHour); b.Gap != 4000 || b.W != 4000 || b.Counted != 8000 {
		t.Fatalf("the duplicate's hour: %+v, want W=4000, counted 8000, gap +4000", b)
	}
	waitRuns(t, sys, 2)
	gaps := prefixed(pageKeys(sys), "bucket-gap#wl-om#")
	if len(gaps) != 1 {
		t.Fatalf("gap pages %v, want one", gaps)
	}
	// nothing was counted twice, and the webhook record the export
	// confirmed is never paged as unseen.
	if got := total(); got != 18000 {
		t.Fatalf("total %d, want 18000", got)
	}
	if unseen := prefixed(pageKeys(sys), "spend-unseen:"); len(unseen) > 0 {
		t.Fatalf("unseen pages %v, want none", unseen)
	}
}

// prefixed are the keys that start with prefix.
func prefixed(keys []string, prefix string) []string {
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
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

func TestTheLocalRunStartsItsOpenMeterFace(t *testing.T) {
	t.Parallel()
	// Given a local run started as make run starts it
	var out bytes.Buffer
	sys, err := localrun.Start(context.Background(), localrun.Config{Addr: "127.0.0.1:0", Out: &out, NoWorkers: true})
	if err != nil {
		t.Fatal(err)
	}
	// Then it describes its OpenMeter face, which answers with the local key
	url := sys.OpenMeter.URL()
	if !strings.Contains(out.String(), "openmeter "+url+"\n") {
		t.Fatalf("description:\n%s\nwant the line openmeter %s", out.String(), url)
	}
	req, err := http.NewRequest(http.MethodGet, url+"/api/v2/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+providersim.OpenMeterAPIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v2/events: %d", resp.StatusCode)
	}
	// and the run stops it with the rest.
	if err := sys.Close(); err != nil {
		t.Fatal(err)
	}
}
