package reconcile_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
)

// TestFoldWritesAHotWorkloadOncePerBatch: the fold applies the records of
// one workload in batches, so a busy workload's item (DynamoDB serves one
// item at most 1,000 write units a second, and a transaction costs twice)
// takes one transaction per batch, not one per record, while the webhook
// path writes the same item.
func TestFoldWritesAHotWorkloadOncePerBatch(t *testing.T) {
	t.Parallel()
	// Given a workload, and 400 records of it in the export that the
	// webhook path never saw
	f := newFixture(t, options{pageSize: 100})
	f.workload(t, "hot", 1_000_000)
	const n = 400
	occurred := f.clock.Now().Add(-10 * time.Minute)
	for i := range n {
		f.usage(t, fmt.Sprintf("ur_%03d", i), "hot", 1, occurred, providersim.UsageOptions{})
	}
	before := f.env.Calls.Snapshot()["DynamoDB.TransactWriteItems"]

	// When the reconciler folds them
	run := f.run(t)

	// Then every record is counted once, exactly
	if got := f.total(t, "hot"); got != n {
		t.Fatalf("total = %d, want %d", got, n)
	}
	if run.Counts.Missed != n {
		t.Fatalf("missed = %d, want %d", run.Counts.Missed, n)
	}
	// and the workload's item took far fewer transactions than records
	txs := f.env.Calls.Snapshot()["DynamoDB.TransactWriteItems"] - before
	if txs > n/4 {
		t.Fatalf("%d transactions for %d records of one workload, want at most %d: the fold writes the hot item once per record", txs, n, n/4)
	}
}
