package ops_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/spend"
)

// TestEventRunbookShowsTheIntakeRecordsAttribution: event explain reads
// the usage event's intake record too, so that an event accepted at the
// door but not yet in the ledger (still queued, or dead-lettered) is
// found, and an attributed one says so.
func TestEventRunbookShowsTheIntakeRecordsAttribution(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	src := ops.ExplainSources{Spend: h.spend.Explainer, Intake: h.intake, UsageSource: "usage"}
	body := []byte(`{"id":"evt_in_1","type":"usage.recorded","data":{"record_id":"ur_in_1","workload_ref":"wl-in","units":3,"occurred_at":"2026-12-01T00:00:00Z"}}`)
	if _, err := h.intake.Accept(ctx, intake.Event{Source: "usage", EventID: "evt_in_1", QueueURL: h.env.QueueURL("usage"), Payload: body}); err != nil {
		t.Fatal(err)
	}

	// Given an event accepted at the door and not yet attributed
	r, err := ops.ExplainEvent(ctx, src, "evt_in_1", time.Now())
	// Then explain finds its intake record and says it is not attributed yet
	if err != nil {
		t.Fatalf("explain of a queued event: %v", err)
	}
	if got := text(t, r); !strings.Contains(got, "intake usage#evt_in_1: received ") || !strings.Contains(got, "not attributed yet") {
		t.Fatalf("text:\n%s", got)
	}

	// Given the spend worker then marked it attributed
	marks, err := intake.NewAttributions(h.env.DynamoDB, h.env.TableName("IntakeTable"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := marks.Mark(ctx, intake.Mark{Source: "usage", EventID: "evt_in_1", State: intake.Attributed, Workload: "wl-in"}); !ok || err != nil {
		t.Fatalf("mark = %v, %v", ok, err)
	}
	r, err = ops.ExplainEvent(ctx, src, "evt_in_1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, r); !strings.Contains(got, "attribution attributed to wl-in at ") {
		t.Fatalf("text:\n%s", got)
	}
	if r.Intake == nil || r.Intake.Attribution != "attributed" {
		t.Fatalf("runbook intake = %+v", r.Intake)
	}

	// And an ID that neither the intake nor the ledger knows is not found
	if _, err := ops.ExplainEvent(ctx, src, "evt_nobody", time.Now()); !errors.Is(err, spend.ErrNotFound) {
		t.Fatalf("unknown event: err = %v, want spend.ErrNotFound", err)
	}
}

func text(t *testing.T, r ops.EventRunbook) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
