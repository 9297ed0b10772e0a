package spend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// headWrites counts the committed transactions that write a bucket's
// head.
type headWrites struct {
	DB
	mu     sync.Mutex
	n      int
	deltas int // delta items those transactions wrote
}

func (d *headWrites) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := d.DB.TransactWriteItems(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, it := range in.TransactItems {
		if it.Put == nil || !strings.HasPrefix(stringAttr(it.Put.Item, "pk"), "BKT#") {
			continue
		}
		switch sk := stringAttr(it.Put.Item, "sk"); {
		case sk == skHead:
			d.n++
		case strings.HasPrefix(sk, prefixDeltaRecord):
			d.deltas++
		}
	}
	return out, err
}

// bucketed is a webhook record of meter api of source stripe-test's
// usage source, in the bucket of hour 1.
func bucketed(rec, ref string, units int64) Usage {
	at := sumStart.Add(time.Hour + time.Duration(len(rec))*time.Second)
	return Usage{RecordID: rec, WorkloadRef: ref, Units: units, OccurredAt: at, ObservedAt: at.Add(time.Second),
		Path: PathWebhook, EventID: "evt_" + rec, Source: "meters", Meter: "api"}
}

// bucketFixture is a sums fixture over db at 01:30 with workload id of
// cap capUnits, and the key of its api bucket of hour 1.
func bucketFixture(t *testing.T, db DB, env *localaws.Env, id string, capUnits int64) (*fixture, BucketKey) {
	t.Helper()
	f := newSumsFixture(t, env, db)
	f.now = sumStart.Add(90 * time.Minute)
	f.workload(t, id, capUnits, 1_000_000)
	src := testSources(t)["stripe-test"]
	return f, KeyOf(src, src.Meters["api"], id, sumStart.Add(time.Hour))
}

func TestApplyBatchWritesAHotBucketsHeadOncePerBatch(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	db := &headWrites{DB: env.DynamoDB}
	f, k := bucketFixture(t, db, env, "wl-hot", 200)
	ctx := context.Background()
	// given a bucket the provider showed at 50, and one record applied
	if _, err := f.s.Buckets.Observe(ctx, Observation{Key: k, Value: 50, RunID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	f.apply(t, bucketed("ur_first", "wl-hot", 10))
	db.n = 0
	// when one batch brings 30 records of that bucket, the first again
	// among them, crossing the cap of 200 on the way
	us := []Usage{bucketed("ur_first", "wl-hot", 10)}
	for i := range 30 {
		us = append(us, bucketed(fmt.Sprintf("ur_hot_%02d", i), "wl-hot", 7))
	}
	res, errs := f.s.Ledger.ApplyBatch(ctx, us)
	noErrors(t, errs)
	// then the head is written once, W counts each record once, the total
	// is max(W, P*), and the record that crossed the cap pauses once
	if db.n != 1 || db.deltas != 1 {
		t.Fatalf("head written by %d committed transactions with %d record deltas, want 1 and 1", db.n, db.deltas)
	}
	if res[0].Outcome != Duplicate {
		t.Fatalf("the repeat = %s, want duplicate", res[0].Outcome)
	}
	heads, err := f.s.Explainer.Buckets(ctx, "wl-hot", 0)
	if err != nil || len(heads) != 1 {
		t.Fatalf("buckets = %+v, %v", heads, err)
	}
	if h := heads[0]; h.W != 220 || h.PStar != 50 || h.Counted != 220 || f.total(t, "wl-hot") != 220 {
		t.Fatalf("head W=%d P*=%d counted=%d, total %d; want 220, 50, 220 and 220", h.W, h.PStar, h.Counted, f.total(t, "wl-hot"))
	}
	// and the one delta is the batch's increase, naming the 25 records
	// that raised the count (W passed P* = 50 with ur_hot_05)
	d, _, err := f.s.Explainer.BucketDelta(ctx, recordDeltaID(k, "ur_hot_05"))
	if err != nil || d.Amount != 170 || len(d.Records) != 25 || d.Records[0] != "ur_hot_05" {
		t.Fatalf("the batch's delta = %+v, %v; want 170 units from 25 records, ur_hot_05 first", d, err)
	}
	var paused []string
	for i, r := range res {
		for _, d := range r.Decisions {
			if d.Action == ActionPause {
				paused = append(paused, us[i].RecordID)
			}
		}
	}
	// 50 counted before the batch (P*), W 10: the 28th new record brings
	// W to 206, the first count past 200
	if len(paused) != 1 || paused[0] != "ur_hot_27" {
		t.Fatalf("pause decisions on %v, want one on ur_hot_27", paused)
	}
}

// interleaved runs before, once, just ahead of the first transaction
// that writes a bucket's head: another writer's change lands first.
type interleaved struct {
	DB
	before func()
	always bool // run before ahead of every such transaction
	inside bool // before is running: its own writes go through
}

func (d *interleaved) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		if fn := d.before; fn != nil && !d.inside && it.Put != nil && stringAttr(it.Put.Item, "sk") == skHead {
			if !d.always {
				d.before = nil
			}
			d.inside = true
			fn()
			d.inside = false
			break
		}
	}
	return d.DB.TransactWriteItems(ctx, in, opts...)
}

func TestApplyBatchFoldsAgainOnAHeadChangedMeanwhile(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	db := &interleaved{DB: env.DynamoDB}
	f, k := bucketFixture(t, db, env, "wl-race", 1_000_000)
	ctx := context.Background()
	// given a poll that shows 100 for the bucket between the batch's read
	// of the head and its transaction
	db.before = func() {
		if _, err := f.s.Buckets.Observe(ctx, Observation{Key: k, Value: 100, RunID: "run-race"}); err != nil {
			t.Error(err)
		}
	}
	// when a batch of ten records of 8 units folds into the bucket
	var us []Usage
	for i := range 10 {
		us = append(us, bucketed(fmt.Sprintf("ur_race_%d", i), "wl-race", 8))
	}
	_, errs := f.s.Ledger.ApplyBatch(ctx, us)
	noErrors(t, errs)
	// then it folds again on the new head: W 80 under P* 100 adds nothing
	heads, err := f.s.Explainer.Buckets(ctx, "wl-race", 0)
	if err != nil || len(heads) != 1 {
		t.Fatalf("buckets = %+v, %v", heads, err)
	}
	if h := heads[0]; h.W != 80 || h.PStar != 100 || h.Counted != 100 || f.total(t, "wl-race") != 100 {
		t.Fatalf("head W=%d P*=%d counted=%d, total %d; want 80, 100, 100 and 100", h.W, h.PStar, h.Counted, f.total(t, "wl-race"))
	}
}

func TestApplyBatchGivesUpOnAHeadThatNeverHoldsStill(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	db := &interleaved{DB: env.DynamoDB, always: true}
	f, k := bucketFixture(t, db, env, "wl-busy", 1_000_000)
	ctx := context.Background()
	// given a poll that raises the bucket ahead of every transaction
	p := int64(0)
	db.before = func() {
		p++
		if _, err := f.s.Buckets.Observe(ctx, Observation{Key: k, Value: 1000 * p, RunID: fmt.Sprint("run-", p)}); err != nil {
			t.Error(err)
		}
	}
	// when a batch folds into it
	us := []Usage{bucketed("ur_busy_1", "wl-busy", 5), bucketed("ur_busy_2", "wl-busy", 5)}
	_, errs := f.s.Ledger.ApplyBatch(ctx, us)
	// then each record is a retryable error, and nothing of the batch is counted
	for i, err := range errs {
		if !errors.Is(err, ErrBucketContended) || IsRefused(err) {
			t.Fatalf("record %d: err = %v, want ErrBucketContended", i, err)
		}
	}
	if _, err := f.s.Ledger.Entry(ctx, "ur_busy_1"); err == nil {
		t.Fatal("ur_busy_1 has an entry after a contended batch")
	}
}

func TestApplyBatchOfABucketClassifiesRepeatsAndRetiredWorkloads(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	f := newSumsFixture(t, env, env.DynamoDB)
	f.now = sumStart.Add(90 * time.Minute)
	ctx := context.Background()
	f.workload(t, "wl-seen", 1_000_000, 1_000_000)
	f.workload(t, "wl-gone", 1_000_000, 1_000_000)
	seen := []Usage{bucketed("ur_s1", "wl-seen", 4), bucketed("ur_s2", "wl-seen", 6)}
	for _, u := range seen {
		f.apply(t, u)
	}
	if err := f.s.Workloads.Retire(ctx, "wl-gone"); err != nil {
		t.Fatal(err)
	}
	// given a batch of records all applied before, and one of a workload
	// retired after its reference was resolved
	gone := bucketed("ur_g1", "wl-gone", 3)
	res, errs := f.s.Ledger.ApplyBatchResolved(ctx, append(seen, gone), map[string]string{"wl-seen": "wl-seen", "wl-gone": "wl-gone"})
	noErrors(t, errs)
	// then the repeats are duplicates, and the retired workload's record
	// gets Apply's outcome for it
	if res[0].Outcome != Duplicate || res[1].Outcome != Duplicate {
		t.Fatalf("repeats = %s, %s; want duplicates", res[0].Outcome, res[1].Outcome)
	}
	want, err := f.s.Ledger.Apply(ctx, bucketed("ur_g2", "wl-gone", 3))
	if err != nil || res[2].Outcome != want.Outcome {
		t.Fatalf("retired workload's record = %s, want Apply's %s (%v)", res[2].Outcome, want.Outcome, err)
	}
	if got := f.total(t, "wl-seen"); got != 10 {
		t.Fatalf("total = %d, want 10", got)
	}
}
