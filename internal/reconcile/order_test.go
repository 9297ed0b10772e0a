package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestOneWorkloadFoldsInExportOrder(t *testing.T) {
	t.Parallel()
	// Given one workload with cap 100 and 40 records of 10 units in one
	// export page, beside 40 records of other workloads, folded with 8
	// records in flight
	f := newFixture(t, options{concurrency: 8})
	f.workload(t, "w1", 100)
	for w := range 4 {
		f.workload(t, fmt.Sprintf("o%d", w), 1<<40)
	}
	occurred := t0.Add(-20 * time.Minute)
	for i := range 40 {
		f.usage(t, id("ord", i), "w1", 10, occurred.Add(time.Duration(i)*time.Second), published)
		f.usage(t, id("other", i), fmt.Sprintf("o%d", i%4), 1, occurred.Add(time.Duration(i)*time.Second), published)
	}

	// When the reconciler folds them
	run := f.run(t)

	// Then the pause names the 11th record of w1 in export order, the first
	// whose units carried the total past the cap, as it would on a
	// sequential fold. Its attributed total is the total when the pause
	// was decided: the fold applies a workload's waiting records in one
	// batch, so it may include records after the crossing one.
	if run.Missed != 80 {
		t.Fatalf("run = %+v", run.Counts)
	}
	ds, err := f.spend.Explainer.Decisions(context.Background(), "w1", 1)
	if err != nil || len(ds) != 1 {
		t.Fatalf("decisions = %+v, %v", ds, err)
	}
	if ds[0].RecordID != id("ord", 10) || ds[0].Attributed < 110 || ds[0].Attributed > 400 {
		t.Fatalf("pause caused by %s at %d, want %s at 110 to 400", ds[0].RecordID, ds[0].Attributed, id("ord", 10))
	}
}
