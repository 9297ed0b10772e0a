package spend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// batchReads counts the reads a batch makes, and fails the BatchGetItem
// calls of one table from the failFrom-th on.
type batchReads struct {
	DB
	mu        sync.Mutex
	gets      int
	batchGets map[string]int // by table
	failTable string
	failFrom  int
}

func (d *batchReads) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	d.mu.Lock()
	d.gets++
	d.mu.Unlock()
	return d.DB.GetItem(ctx, in, opts...)
}

func (d *batchReads) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	d.mu.Lock()
	fail := false
	for table := range in.RequestItems {
		d.batchGets[table]++
		fail = fail || (table == d.failTable && d.batchGets[table] >= d.failFrom)
	}
	d.mu.Unlock()
	if fail {
		return nil, errors.New("batch get: connection reset")
	}
	return d.DB.BatchGetItem(ctx, in, opts...)
}

// readsFixture is a sums fixture over a batchReads at 01:30 with
// workloads wl-0..wl-(n-1), each of cap capUnits.
func readsFixture(t *testing.T, n int, capUnits int64) (*fixture, *batchReads, *localaws.Env) {
	t.Helper()
	env := localaws.StartForTest(t)
	db := &batchReads{DB: env.DynamoDB, batchGets: map[string]int{}}
	f := newSumsFixture(t, env, db)
	f.now = sumStart.Add(90 * time.Minute)
	for w := range n {
		f.workload(t, fmt.Sprintf("wl-%d", w), capUnits, 0)
	}
	db.gets, db.batchGets = 0, map[string]int{}
	return f, db, env
}

// TestApplyBatchReadsItsWorkloadsTogetherForTheCapChecks: a batch of
// records of ten workloads, each in its own bucket, reads each head just
// before its transaction, and the ten workloads for their cap checks with
// one BatchGetItem once all have committed, not one read each.
func TestApplyBatchReadsItsWorkloadsTogetherForTheCapChecks(t *testing.T) {
	t.Parallel()
	f, db, env := readsFixture(t, 10, 1000)
	var us []Usage
	for w := range 10 {
		us = append(us, bucketed(fmt.Sprintf("ur_%d", w), fmt.Sprintf("wl-%d", w), int64(w+1)))
	}
	res, errs := f.s.Ledger.ApplyBatch(context.Background(), us)
	noErrors(t, errs)
	for w, r := range res {
		if r.Outcome != Applied || r.Total != int64(w+1) {
			t.Fatalf("record %d: %s with total %d, want applied with %d", w, r.Outcome, r.Total, w+1)
		}
	}
	if workloads := env.TableName("WorkloadsTable"); db.gets != 10 || db.batchGets[workloads] != 2 {
		t.Fatalf("%d single reads and %d batch reads of the workloads; want 10 (the heads) and 2 (references, caps)",
			db.gets, db.batchGets[workloads])
	}
}

// TestApplyBatchChecksAWorkloadsCapOnceForAllItsGroups: records of one
// workload in a plain group and in two buckets commit in three
// transactions; the one cap check after them pauses once, in the name
// of the record that crossed, and every record reports the final total.
func TestApplyBatchChecksAWorkloadsCapOnceForAllItsGroups(t *testing.T) {
	t.Parallel()
	f, _, _ := readsFixture(t, 1, 100)
	var us []Usage
	for i := range 4 {
		us = append(us, Usage{RecordID: fmt.Sprintf("ur_plain_%d", i), WorkloadRef: "wl-0", Units: 20,
			OccurredAt: f.now.Add(-time.Minute), ObservedAt: f.now, Path: PathWebhook, EventID: fmt.Sprintf("evt_plain_%d", i)})
	}
	early, late := bucketed("ur_b1", "wl-0", 15), bucketed("ur_b2", "wl-0", 15)
	late.OccurredAt = early.OccurredAt.Add(-time.Hour) // the bucket of hour 0
	us = append(us, early, late)
	res, errs := f.s.Ledger.ApplyBatch(context.Background(), us)
	noErrors(t, errs)
	var paused []string
	for i, r := range res {
		if r.Total != 110 {
			t.Errorf("%s reports total %d, want 110", us[i].RecordID, r.Total)
		}
		for _, d := range r.Decisions {
			paused = append(paused, us[i].RecordID+":"+d.Action)
		}
	}
	// 80 from the plain group, then ur_b1 brings 95 and ur_b2 110
	if len(paused) != 1 || paused[0] != "ur_b2:"+ActionPause {
		t.Fatalf("decisions %v, want one pause on ur_b2", paused)
	}
}

// TestApplyBatchWhoseCapCheckCannotReadIsRetriedIntoAPause: records that
// committed but whose workload could not be read for the cap check come
// back with an error; the queue's retry finds them applied (duplicates)
// and takes the cap action then.
func TestApplyBatchWhoseCapCheckCannotReadIsRetriedIntoAPause(t *testing.T) {
	t.Parallel()
	f, db, env := readsFixture(t, 1, 10)
	db.failTable, db.failFrom = env.TableName("WorkloadsTable"), 2 // the first resolves the references
	us := []Usage{bucketed("ur_a", "wl-0", 6), bucketed("ur_bb", "wl-0", 6)}
	_, errs := f.s.Ledger.ApplyBatch(context.Background(), us)
	if errs[0] == nil || errs[1] == nil {
		t.Fatalf("errors %v, want both records to report the failed cap check", errs)
	}
	db.failTable = ""
	res, errs := f.s.Ledger.ApplyBatch(context.Background(), us)
	noErrors(t, errs)
	w, err := f.s.Workloads.Get(context.Background(), "wl-0")
	if err != nil || w.Total != 12 || w.Status != StatusPaused {
		t.Fatalf("workload %+v, %v; want total 12 and paused", w, err)
	}
	if res[0].Outcome != Duplicate || res[1].Outcome != Duplicate {
		t.Fatalf("retry outcomes %s, %s; want duplicates", res[0].Outcome, res[1].Outcome)
	}
}

// TestApplyBatchFoldsABucketsSecondChunkOnTheHeadItWrote: 50 records of
// one bucket fold in two transactions (40 and 10); the second starts from
// the head the first wrote, without reading it again, and the bucket
// counts every record once.
func TestApplyBatchFoldsABucketsSecondChunkOnTheHeadItWrote(t *testing.T) {
	t.Parallel()
	f, db, _ := readsFixture(t, 1, 1_000_000)
	var us []Usage
	for i := range 50 {
		us = append(us, bucketed(fmt.Sprintf("ur_%02d", i), "wl-0", 3))
	}
	_, errs := f.s.Ledger.ApplyBatch(context.Background(), us)
	noErrors(t, errs)
	if db.gets != 1 {
		t.Fatalf("%d single reads for two chunks of one bucket, want 1 (its head, once)", db.gets)
	}
	heads, err := f.s.Explainer.Buckets(context.Background(), "wl-0", 0)
	if err != nil || len(heads) != 1 || heads[0].W != 150 || heads[0].Version != 2 || f.total(t, "wl-0") != 150 {
		t.Fatalf("buckets %+v, %v, total %d; want W 150 at version 2 and a total of 150", heads, err, f.total(t, "wl-0"))
	}
}
