package reconcile_test

import (
	"context"
	"testing"
	"time"
)

// TestASkippedSumsRunReadsBack: a run of a source that is not due, with
// no workload asked for, is recorded as skipped with no tiers. Its record
// stored the tiers as an empty map, which the local DynamoDB hands back
// as a member-less value that the SDK decodes as another attribute's
// value: every later listing of the source's runs failed ("cannot
// unmarshal number into ... map[string]reconcile.tierShareItem"), and an
// OpenAI drill under load waited two minutes for a run it could not read.
func TestASkippedSumsRunReadsBack(t *testing.T) {
	t.Parallel()
	f := newSumsFixture(t)
	f.workload(t, "wl-1", 1_000_000, "cus_wl-1")
	f.run(t)
	f.now = f.now.Add(time.Second) // not due again for a whole interval
	runs := f.run(t)
	if len(runs) == 0 || runs[0].Outcome != "skipped" {
		t.Fatalf("runs %+v, want a skipped one", runs)
	}
	listed, err := f.rec.Runs(context.Background(), runs[0].Source, 10)
	if err != nil || len(listed) != 2 || listed[0].Outcome != "skipped" {
		t.Fatalf("listed %+v, %v; want the skipped run and the one before it", listed, err)
	}
}
