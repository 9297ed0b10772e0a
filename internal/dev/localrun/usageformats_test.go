package localrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/app/spendledger"
	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/testkit"
	"github.com/hookline/hookline/internal/usagein"
)

// The usage door against the running system, driven over HTTP as
// producers drive it: a CloudEvents source beside hookline's own, each
// with its mapping and time rule (USAGE_MAPPINGS), as docs/providers.md
// configures them.
const (
	formatSources = `[{"name":"payments","scheme":"standard-webhooks","secret_env":"HOOKLINE_PAYMENTS_SECRETS","queue":"payments"},` +
		`{"name":"usage","scheme":"standard-webhooks","secret_env":"HOOKLINE_USAGE_SECRETS","queue":"usage"},` +
		`{"name":"meters","scheme":"standard-webhooks","secret_env":"HOOKLINE_METERS_SECRETS","queue":"usage"}]`
	formatMappings = `{"usage": {"max_age": "840h"},
	  "meters": {"format": "cloudevents", "usage_types": ["com.example.tokens"], "scale": 1000, "unit": "units", "max_age": "840h"}}`
	metersSecret = "whsec_aG9va2xpbmUtbG9jYWwtbWV0ZXJzLWtleSEhIQ=="
)

// ceSend posts one structured event, or a batch, to the meters source
// once under msgID, signed as a producer's Standard Webhooks library
// signs (or under Svix's header names), and returns the answer.
func ceSend(t *testing.T, sys *localrun.System, msgID string, batch, svix bool, evs ...providersim.UsageCloudEvent) (int, string) {
	t.Helper()
	body, contentType, err := providersim.CloudEventsBody(evs, batch)
	if err != nil {
		t.Fatal(err)
	}
	return send(t, sys, "meters", func(_ string, ts time.Time, b []byte) (http.Header, error) {
		return providersim.StandardSigner(metersSecret, contentType, svix)(msgID, ts, b)
	}, body)
}

func TestUsageInTheShapesProducersSend(t *testing.T) {
	t.Parallel()
	opts := []drillOption{everySecond(),
		env(map[string]string{"HOOKLINE_SOURCES": formatSources, "USAGE_MAPPINGS": formatMappings, "HOOKLINE_METERS_SECRETS": metersSecret})}
	for _, id := range []string{"wl-ce", "wl-old", "wl-before"} {
		opts = append(opts, workload(spend.NewWorkload{ID: id, Cap: 1_000_000_000}))
	}
	sys, ledger := startDrill(t, opts...)
	ctx := context.Background()
	now := time.Now().UTC()
	ev := func(source, id, value string) providersim.UsageCloudEvent {
		return providersim.UsageCloudEvent{Source: source, ID: id, Type: "com.example.tokens", Subject: "wl-ce", Time: now.Add(-time.Minute), Value: value}
	}
	expect := func(what string, code int, got string, wantCode int, wantBody string) {
		t.Helper()
		if code != wantCode || !strings.Contains(got, wantBody) {
			t.Fatalf("%s: %d %s, want %d with %s", what, code, got, wantCode, wantBody)
		}
	}

	// A structured event counts once across retries, at its scale: 12.5
	// at scale 1000 is 12500.
	e1 := ev("/meter/a", "e-1", "12.5")
	c, got := ceSend(t, sys, "msg_e1", false, false, e1)
	expect("structured", c, got, 200, `"accepted"`)
	c, got = ceSend(t, sys, "msg_e1_retry", false, false, e1)
	expect("structured retry", c, got, 200, `"duplicate"`)
	// The same id under another source is another event.
	c, got = ceSend(t, sys, "msg_e1_b", false, false, ev("/meter/b", "e-1", "1"))
	expect("same id, other source", c, got, 200, `"accepted"`)
	// A batch counts each event once across retries.
	batch := []providersim.UsageCloudEvent{ev("/meter/a", "b-1", "0.25"), ev("/meter/a", "b-2", "0.25"), ev("/meter/a", "b-3", "0.25")}
	c, got = ceSend(t, sys, "msg_batch", true, false, batch...)
	expect("batch", c, got, 200, `"accepted":3,"duplicate":0,"refused":0`)
	c, got = ceSend(t, sys, "msg_batch_retry", true, false, batch...)
	expect("batch retry", c, got, 200, `"accepted":0,"duplicate":3,"refused":0`)
	// An out-of-scale value is a 400 naming the field, alone,
	c, got = ceSend(t, sys, "msg_fine", false, false, ev("/meter/a", "e-fine", "0.0001"))
	expect("out of scale", c, got, 400, `"field":"data.value"`)
	// and a refused item inside a 200 in a batch.
	c, got = ceSend(t, sys, "msg_mixed", true, false, ev("/meter/a", "b-4", "2"), ev("/meter/a", "b-5", "0.0001"))
	expect("mixed batch", c, got, 200, `"accepted":1,"duplicate":0,"refused":1,"too_old":0,"refused_items":[{"index":1,"error":"invalid_usage","field":"[1].data.value"`)
	// A body under svix-* headers is accepted.
	c, got = ceSend(t, sys, "msg_svix", false, true, ev("/meter/a", "e-svix", "3"))
	expect("svix headers", c, got, 200, `"accepted"`)
	// A zero reading and another type are acknowledged and count nothing.
	c, got = ceSend(t, sys, "msg_zero", false, false, ev("/meter/a", "e-zero", "0"))
	expect("zero", c, got, 200, `"accepted"`)
	other := ev("/meter/a", "e-login", "5")
	other.Type = "com.example.login"
	c, got = ceSend(t, sys, "msg_login", false, false, other)
	expect("other type", c, got, 200, `"accepted"`)
	// A 20-day-old event on a source that allows 35 days counts.
	old := ev("/meter/a", "e-old", "4")
	old.Time = now.Add(-20 * 24 * time.Hour)
	c, got = ceSend(t, sys, "msg_old", false, false, old)
	expect("20 days old", c, got, 200, `"accepted"`)

	// 12500 + 1000 + 750 + 2000 + 3000 + 4000
	const wantCE = 23250
	waitTotal(t, ledger, "wl-ce", wantCE)

	// A usage.recorded record 20 days old on hookline's own source, which
	// its mapping allows 35 days back, counts, and the reconciler's runs
	// do not page it unseen: its horizon counts from when it was seen.
	body := usageRecorded("evt_old20", "ur_old20", "wl-old", 7, now.Add(-20*24*time.Hour))
	if code, got := postSigned(t, sys, "usage", "msg_old20", body); code != 200 {
		t.Fatalf("usage.recorded 20 days old: %d %s", code, got)
	}
	waitTotal(t, ledger, "wl-old", 7)

	// A usage.recorded delivery the build before envelopes accepted (its
	// intake record holds the body itself, and it queued the body) is a
	// duplicate after the change, and counts once.
	before := usageRecorded("evt_before", "ur_before", "wl-before", 9, now.Add(-time.Minute))
	store, err := intake.New(intake.Config{DynamoDB: sys.AWS.DynamoDB, SQS: sys.AWS.SQS, Table: sys.AWS.TableName("IntakeTable")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Accept(ctx, intake.Event{Source: "usage", EventID: "msg_before", QueueURL: sys.AWS.QueueURL("UsageQueue"),
		Payload: before, ProviderTimestamp: now}); err != nil {
		t.Fatal(err)
	}
	waitTotal(t, ledger, "wl-before", 9)
	if code, got := postSigned(t, sys, "usage", "msg_before", before); code != 200 || !strings.Contains(got, "duplicate") {
		t.Fatalf("retry after the change: %d %s, want a duplicate", code, got)
	}

	// After two more reconciliation runs, nothing was paged unseen, and
	// every total is as counted once.
	waitRuns(t, sys, 2)
	for _, p := range sys.Sim.Pager.Pages() {
		if p.Payload != nil && strings.HasPrefix(p.Payload.Summary, "spend unseen") {
			t.Fatalf("paged: %s", p.Payload.Summary)
		}
	}
	for id, want := range map[string]int64{"wl-ce": wantCE, "wl-old": 7, "wl-before": 9} {
		if w, err := ledger.Spend.Workloads.Get(ctx, id); err != nil || w.Total != want {
			t.Fatalf("%s: total %d (%v), want %d", id, w.Total, err, want)
		}
	}
	// The CloudEvent's entry is under its scoped key, with its meter.
	e, err := ledger.Spend.Ledger.Entry(ctx, usagein.CloudEventKey("meters", "/meter/a", "e-1"))
	if err != nil || e.Units != 12500 || e.Meter != "com.example.tokens" || e.Source != "meters" {
		t.Fatalf("entry %+v, %v", e, err)
	}
}

// usageRecorded is a usage.recorded body.
func usageRecorded(id, record, ref string, units int64, at time.Time) []byte {
	b, _ := json.Marshal(map[string]any{"id": id, "type": "usage.recorded",
		"data": map[string]any{"record_id": record, "workload_ref": ref, "units": units, "occurred_at": at.Format(time.RFC3339)}})
	return b
}

// waitTotal waits for workload id's total to reach want.
func waitTotal(t *testing.T, ledger spendledger.Ledger, id string, want int64) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, fmt.Sprintf("%s counted %d", id, want), func() bool {
		w, err := ledger.Spend.Workloads.Get(context.Background(), id)
		return err == nil && w.Total >= want
	})
}

// waitRuns waits for n reconciliation runs to finish after now.
func waitRuns(t *testing.T, sys *localrun.System, n int) {
	t.Helper()
	store, err := reconcile.NewStore(reconcile.StoreConfig{DB: sys.AWS.DynamoDB, Table: sys.AWS.TableName("LedgerTable")})
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now()
	testkit.Eventually(t, 60*time.Second, fmt.Sprintf("%d reconciliation runs", n), func() bool {
		runs, err := store.Runs(context.Background(), 10)
		done := 0
		for _, r := range runs {
			if r.StartedAt.After(since) && r.Outcome == "ok" {
				done++
			}
		}
		return err == nil && done >= n
	})
}
