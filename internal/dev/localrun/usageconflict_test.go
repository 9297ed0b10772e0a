package localrun_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/testkit"
	"github.com/hookline/hookline/internal/usagein"
)

// TestARevisedCloudEventIsAcknowledgedAndTheFirstValueCounts: a producer
// re-sends a CloudEvent under the same (source, id) with another value.
// Standard Webhooks and Svix senders retry every 4xx but 410 for days,
// so the door answers 2xx, counts the first value, records the conflict
// on the event's intake record, where event explain shows it, and counts
// it as UsageConflict.
func TestARevisedCloudEventIsAcknowledgedAndTheFirstValueCounts(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOOKLINE_SOURCES": formatSources, "USAGE_MAPPINGS": formatMappings, "HOOKLINE_METERS_SECRETS": metersSecret}
	metrics := &testkit.SyncBuffer{}
	sys, err := localrun.Start(context.Background(), localrun.Config{Addr: "127.0.0.1:0", Metrics: metrics, ScheduleEvery: time.Second,
		Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Close() })
	ledger := withWorkload(t, sys, "wl-rev", 1_000_000)
	ctx := context.Background()
	ev := providersim.UsageCloudEvent{Source: "/meter/rev", ID: "e-rev", Type: "com.example.tokens", Subject: "wl-rev",
		Time: time.Now().UTC().Add(-time.Minute), Value: "2"}

	// Given an event accepted and counted at its first value (2 at scale 1000),
	if c, got := ceSend(t, sys, "msg_rev_1", false, false, ev); c != 200 || !strings.Contains(got, `"accepted"`) {
		t.Fatalf("first: %d %s", c, got)
	}
	waitTotal(t, ledger, "wl-rev", 2000)

	// when the producer re-sends it, as a new message, with a revised value,
	revised := ev
	revised.Value = "5"
	c, got := ceSend(t, sys, "msg_rev_2", false, false, revised)
	// then it is acknowledged, not refused,
	if c < 200 || c > 299 {
		t.Fatalf("revised value: %d %s, want a 2xx (senders retry a 4xx for days)", c, got)
	}
	// and the same revision in a batch is acknowledged too, beside a new event.
	fresh := ev
	fresh.ID, fresh.Value = "e-rev-2", "1"
	c, got = ceSend(t, sys, "msg_rev_3", true, false, revised, fresh)
	if c != 200 || !strings.Contains(got, `"accepted":1,`) || !strings.Contains(got, `"refused":0,`) || !strings.Contains(got, `"conflict":1`) {
		t.Fatalf("batch with the revision: %d %s, want one accepted, one conflict, none refused", c, got)
	}
	waitTotal(t, ledger, "wl-rev", 3000)
	waitRuns(t, sys, 1)

	// The total counts the first value only,
	if w, err := ledger.Spend.Workloads.Get(ctx, "wl-rev"); err != nil || w.Total != 3000 {
		t.Fatalf("total %d (%v), want 3000: the first value and the new event", w.Total, err)
	}
	// explain shows the conflict on the event's intake record,
	store, err := intake.New(intake.Config{DynamoDB: sys.AWS.DynamoDB, SQS: sys.AWS.SQS, Table: sys.AWS.TableName("IntakeTable")})
	if err != nil {
		t.Fatal(err)
	}
	key := usagein.CloudEventKey("meters", "/meter/rev", "e-rev")
	r, err := ops.ExplainEvent(ctx, ops.ExplainSources{Spend: ledger.Spend.Explainer, Intake: store, UsageSource: "meters"}, key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if r.Intake == nil || r.Intake.Conflict == nil || r.Intake.Conflict.Count != 2 ||
		!strings.Contains(text.String(), "2 conflicting deliveries") || !strings.Contains(text.String(), "carried 5000 units") ||
		!strings.Contains(text.String(), "the first value, 2000 units, is what counts") {
		t.Fatalf("explain %s:\n%s\nwant 2 conflicting deliveries, the last of 5000 units", key, text.String())
	}
	// and each conflict is counted for the source.
	n := 0
	for _, line := range strings.Split(metrics.String(), "\n") {
		if strings.Contains(line, `"Name":"UsageConflict"`) && strings.Contains(line, `"Source":"meters"`) {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("UsageConflict emitted %d times, want 2:\n%s", n, metrics.String())
	}
}
