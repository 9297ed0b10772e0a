package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/spend"
)

func TestPollTripNamesTheWebhookEventAndTheRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Given a webhook for ur_ghost_1 deferred under an unknown reference,
	// then an alias that maps the reference to a workload with cap 100
	f := newFixture(t, options{})
	f.workload(t, "w-ghost", 100)
	occurred := t0.Add(-5 * time.Minute)
	f.usage(t, "ur_ghost_1", "ghost", 150, occurred, published)
	if res := f.webhook(t, "ur_ghost_1", "ghost", 150, occurred); res.Outcome != spend.Deferred {
		t.Fatalf("webhook outcome = %s, want deferred", res.Outcome)
	}
	if err := f.spend.Workloads.AddAlias(ctx, "ghost", "w-ghost"); err != nil {
		t.Fatal(err)
	}

	// When the reconciler's poll attributes the record and trips the cap
	f.run(t)

	// Then the page names the webhook event and the record, in the line
	// and as fields
	page, err := f.outbox.Get(ctx, spend.DedupKey("w-ghost", spend.ActionPause, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	line := page.Event.Payload.Summary
	if !strings.Contains(line, " event=evt_usage_ur_ghost_1 record=ur_ghost_1 ") {
		t.Errorf("page line = %q, want event=evt_usage_ur_ghost_1 record=ur_ghost_1", line)
	}
	d := page.Event.Payload.CustomDetails
	if d["event"] != "evt_usage_ur_ghost_1" || d["record"] != "ur_ghost_1" {
		t.Errorf("page fields event=%v record=%v", d["event"], d["record"])
	}
}

func TestRepauseByAPollDuplicateNamesTheWebhookEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Given a workload paused by a webhook record that the export also has
	f := newFixture(t, options{})
	f.workload(t, "w-dup", 100)
	occurred := t0.Add(-5 * time.Minute)
	f.usage(t, "ur_dup_1", "w-dup", 150, occurred, published)
	f.webhook(t, "ur_dup_1", "w-dup", 150, occurred)
	// and resumed on purpose over its cap
	w, err := f.spend.Caps.ForceResume(ctx, "w-dup", "ana", "drain")
	if err != nil {
		t.Fatal(err)
	}

	// When the poll sees the record again and pauses the workload again
	f.run(t)

	// Then that page, too, names the webhook event beside the record
	page, err := f.outbox.Get(ctx, spend.DedupKey("w-dup", spend.ActionPause, w.CapEpoch, 0))
	if err != nil {
		t.Fatal(err)
	}
	if line := page.Event.Payload.Summary; !strings.Contains(line, " event=evt_usage_ur_dup_1 record=ur_dup_1 ") {
		t.Errorf("page line = %q, want event=evt_usage_ur_dup_1 record=ur_dup_1", line)
	}
}
