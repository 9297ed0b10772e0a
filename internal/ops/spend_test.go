package ops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/testkit"
)

func usageBody(recordID, ref string, units int64) string {
	return fmt.Sprintf(`{"id":"evt_usage_%s","type":"usage.recorded","created":"2026-11-30T03:00:00Z","data":{"record_id":%q,"workload_ref":%q,"units":%d,"occurred_at":"2026-11-30T03:00:00Z","published_at":"2026-11-30T03:00:00Z"}}`,
		recordID, recordID, ref, units)
}

// overCap creates workload-7 (cap 1000) and applies two records that take
// it to 1012, which pauses it.
func overCap(t *testing.T, h *harness) {
	t.Helper()
	ctx := context.Background()
	_, err := h.spend.Workloads.CreateWorkload(ctx, spend.NewWorkload{ID: "workload-7", Owner: "team-images", RoutingKey: "secret-route-key", Cap: 1000, Step: 100})
	must(t, err)
	observed := time.Date(2026, 11, 30, 3, 17, 0, 0, time.UTC)
	for i, units := range []int64{900, 112} {
		_, err := h.spend.Ledger.Apply(ctx, spend.Usage{RecordID: fmt.Sprintf("rec_%d", i+1), WorkloadRef: "workload-7", Units: units,
			OccurredAt: observed, ObservedAt: observed, Path: spend.PathWebhook, EventID: fmt.Sprintf("evt_%d", i+1)})
		must(t, err)
	}
}

func TestPeekUsageReportsLedgerState(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	overCap(t, h)
	// given dead-lettered usage: one the ledger holds as is, one it holds
	// with other units, one it has never seen
	h.deadLetter(t, "usage-dlq", "usage", "evt_usage_rec_1", usageBody("rec_1", "workload-7", 900))
	h.deadLetter(t, "usage-dlq", "usage", "evt_usage_rec_2", usageBody("rec_2", "workload-7", 5))
	h.deadLetter(t, "usage-dlq", "usage", "evt_usage_rec_9", usageBody("rec_9", "workload-7", 1))
	testkit.Eventually(t, 30*time.Second, "three counted", func() bool { vis, _ := h.counts(t, "usage-dlq"); return vis == 3 })
	// when the operator peeks
	msgs, err := h.ops.Peek(context.Background(), "usage-dlq", 10)
	must(t, err)
	// then each carries the ledger's state, and only the identical one may
	// be skipped
	states := statesByEvent(msgs, func(m ops.Message) (string, string) {
		return m.Status.Key, fmt.Sprint(m.Status.State, " ", m.Status.Done)
	})
	want := map[string]string{"rec_1": "APPLIED true", "rec_2": "DIFFERS false", "rec_9": "none false"}
	if !equalMaps(states, want) {
		t.Fatalf("states %v, want %v", states, want)
	}
}

func TestRunbookOfAPausedWorkload(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	overCap(t, h)
	ctx := context.Background()
	next := time.Now().Add(4 * time.Minute).UTC().Truncate(time.Second)
	started := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	must(t, h.spend.Recon.PutReconRun(ctx, spend.ReconRun{WorkloadID: "workload-7", StartedAt: started.Add(-10 * time.Minute),
		FinishedAt: started.Add(-10 * time.Minute), Records: 1, Missed: 1, Reattributed: 1, NextReconAt: started}))
	must(t, h.spend.Recon.PutReconRun(ctx, spend.ReconRun{WorkloadID: "workload-7", StartedAt: started, FinishedAt: started,
		Records: 2, Duplicates: 2, NextReconAt: next}))
	x, err := h.spend.Explainer.Explain(ctx, "workload-7")
	must(t, err)
	// when the runbook is built and printed
	r := ops.NewRunbook(x, time.Now())
	var text bytes.Buffer
	must(t, r.WriteText(&text))
	js, err := json.Marshal(r)
	must(t, err)
	// then it names the action, the record that caused it, total and cap,
	// the last accepted event, the reconciliation runs and the proof time
	for _, want := range []string{
		"spend cap action=pause workload=workload-7 attributed=1012 cap=1000 event=evt_2",
		"record rec_2 (event evt_2), 112 units via webhook",
		"1012 of cap 1000 (over by 12)",
		"last accepted  event evt_2, record rec_2",
		"status=paused",
		"reconciliation proves or disproves the total at " + next.Format(time.RFC3339),
		"5m0s (changed)",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("runbook lacks %q:\n%s", want, text.String())
		}
	}
	// and the routing key is never shown
	if strings.Contains(text.String(), "secret-route-key") || strings.Contains(string(js), "secret-route-key") {
		t.Fatal("runbook shows the routing key")
	}
	// when the event that tipped it is explained
	ex, err := h.spend.Explainer.ExplainEvent(ctx, "evt_2")
	must(t, err)
	text.Reset()
	must(t, ops.NewEventRunbook("evt_2", ex, time.Now()).WriteText(&text))
	// then it shows the entry, the decision it took and the workload
	for _, want := range []string{"event evt_2: record rec_2, 112 units attributed to workload-7", "this event took: spend cap action=pause", "workload-7  status=paused"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("event runbook lacks %q:\n%s", want, text.String())
		}
	}
}

// TestRunbookJSONKeepsTheEarlierCountNames: a script written against an
// earlier build reads a run's missed and reattributed records under the
// names that build printed, applied and redriven, as well as under the
// new ones.
func TestRunbookJSONKeepsTheEarlierCountNames(t *testing.T) {
	t.Parallel()
	run := spend.ReconRun{WorkloadID: "workload-7", StartedAt: time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC),
		Records: 5, Missed: 3, Reattributed: 2}
	// when a runbook with the run is printed as JSON
	js, err := json.Marshal(ops.NewRunbook(spend.Explanation{ReconRuns: []spend.ReconRun{run}}, run.StartedAt))
	must(t, err)
	var got struct {
		ReconRuns []map[string]any `json:"recon_runs"`
	}
	must(t, json.Unmarshal(js, &got))
	// then the run carries each count under both names
	if len(got.ReconRuns) != 1 {
		t.Fatalf("recon_runs = %v", got.ReconRuns)
	}
	for name, want := range map[string]float64{"missed": 3, "applied": 3, "reattributed": 2, "redriven": 2} {
		if n, _ := got.ReconRuns[0][name].(float64); n != want {
			t.Errorf("%s = %v, want %v in %s", name, got.ReconRuns[0][name], want, js)
		}
	}
}
