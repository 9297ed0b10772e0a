package ops_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
)

// noIntervalChanges is a workload without recorded interval changes.
type noIntervalChanges struct{}

func (noIntervalChanges) IntervalChanges(context.Context, string, int) ([]reconcile.IntervalChange, error) {
	return nil, nil
}

// TestARunbookFindsTheBucketRevisionThatCausedItsAction: a workload paused
// by a poll of a provider's sums (OpenAI's, which sends no webhook) names
// the bucket revision that paused it, what it added and the bucket it
// counted, rather than a ledger entry it cannot find.
func TestARunbookFindsTheBucketRevisionThatCausedItsAction(t *testing.T) {
	t.Parallel()
	// given an OpenAI sums source and a workload of project proj_demo
	h := newHarness(t, harnessOptions{vars: map[string]string{"SUM_SOURCES": `{"openai-local": {"provider": "openai",
		"usage_source": "usage", "account": "org_local", "livemode": true, "start": "2026-11-30T00:00:00Z", "settle": "2h",
		"meters": {"tokens": {"endpoint": "completions", "fields": {"input_tokens": 1, "output_tokens": 4}}}}}`}})
	ctx := context.Background()
	_, err := h.spend.Workloads.CreateWorkload(ctx, spend.NewWorkload{ID: "workload-11", Owner: "llm-team", RoutingKey: "rk-llm", Cap: 1000})
	must(t, err)
	// when a poll shows the hour's bucket at 1100, over the cap
	k := spend.BucketKey{WorkloadID: "workload-11", Source: "openai-local", Account: "org_local", Mode: "live", Meter: "tokens",
		Start: time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)}
	obs, err := h.spend.Buckets.Observe(ctx, spend.Observation{Key: k, Value: 1100, RunID: "run-1"})
	must(t, err)
	if len(obs.Decisions) == 0 || !strings.HasSuffix(obs.Decisions[0].RecordID, "#rev1") {
		t.Fatalf("the poll took decisions %+v, want a pause by the bucket's first revision", obs.Decisions)
	}
	r, err := ops.ExplainWorkload(ctx, ops.ExplainSources{Spend: h.spend.Explainer, Intervals: noIntervalChanges{}}, "workload-11", time.Now())
	must(t, err)
	var text bytes.Buffer
	must(t, r.WriteText(&text))
	// then the runbook names the revision and the bucket it counted
	if strings.Contains(text.String(), "not found") {
		t.Errorf("the runbook does not find its cause:\n%s", text.String())
	}
	want := "caused by      record bucket:openai-local/org_local/live/tokens/workload-11@2026-11-30T03:00:00Z#rev1: +1100 units " +
		"found by the reconciler's poll of the provider's sums"
	if !strings.Contains(text.String(), want) {
		t.Errorf("the runbook lacks\n%s\nin:\n%s", want, text.String())
	}
	if r.CauseDelta == nil || r.CauseDelta.Amount != 1100 {
		t.Errorf("the runbook's cause_delta is %+v, want the revision's +1100", r.CauseDelta)
	}
}
