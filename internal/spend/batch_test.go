package spend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/testkit"
)

// batchConflicting cancels, as DynamoDB does, the next n transactions that add
// to a workload's total with reason TransactionConflict on that item,
// before they reach the local DynamoDB, and counts the attempts.
type batchConflicting struct {
	DB
	mu       sync.Mutex
	n        int
	attempts int
}

func (c *batchConflicting) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	pos := -1
	for i, ti := range in.TransactItems {
		if ti.Update != nil && strings.HasPrefix(aws.ToString(ti.Update.UpdateExpression), "ADD") {
			pos = i
		}
	}
	c.mu.Lock()
	if pos >= 0 {
		c.attempts++
	}
	cancel := pos >= 0 && c.n > 0
	if cancel {
		c.n--
	}
	c.mu.Unlock()
	if !cancel {
		return c.DB.TransactWriteItems(ctx, in, opts...)
	}
	return nil, testkit.Conflict(len(in.TransactItems), pos)
}

func batchOf(ref string, n int, units int64) []Usage {
	var us []Usage
	for i := range n {
		us = append(us, usage(fmt.Sprintf("ur_%s_%d", ref, i), ref, units))
	}
	return us
}

func noErrors(t *testing.T, errs []error) {
	t.Helper()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
}

func TestApplyBatchRetriesATransactionConflict(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	db := &batchConflicting{DB: env.DynamoDB}
	f := newFixtureWith(t, env, db, nil)
	f.workload(t, "hot", 1000, 0)
	// given a batch whose transaction meets two conflicting transactions
	db.n = 2
	res, errs := f.s.Ledger.ApplyBatch(context.Background(), batchOf("hot", 10, 7))
	// then it is retried until it commits, once, with every record applied
	noErrors(t, errs)
	for i, r := range res {
		if r.Outcome != Applied || r.Total != 70 {
			t.Fatalf("record %d = %s total %d, want applied with total 70", i, r.Outcome, r.Total)
		}
	}
	if db.attempts != 3 || f.total(t, "hot") != 70 {
		t.Fatalf("attempts = %d, total = %d; want 3 attempts and 70", db.attempts, f.total(t, "hot"))
	}
}

func TestApplyBatchGivesUpOnEndlessContentionWithoutApplying(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	db := &batchConflicting{DB: env.DynamoDB, n: 1 << 30}
	f := newFixtureWith(t, env, db, nil)
	f.workload(t, "hot", 1000, 0)
	// given a workload item every transaction conflicts on
	_, errs := f.s.Ledger.ApplyBatch(context.Background(), batchOf("hot", 3, 7))
	// then each record's outcome is a retryable error, not a refusal, and nothing is counted
	for i, err := range errs {
		if !errors.Is(err, ErrBatchContended) || IsRefused(err) {
			t.Fatalf("record %d: err = %v, want ErrBatchContended", i, err)
		}
	}
	if db.attempts != batchRetry.Attempts || f.total(t, "hot") != 0 {
		t.Fatalf("attempts = %d, total = %d; want %d attempts and 0", db.attempts, f.total(t, "hot"), batchRetry.Attempts)
	}
}

func TestApplyBatchGivesEachRecordApplysOutcome(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.workload(t, "a", 1000, 0)
	f.workload(t, "b", 1000, 0)
	f.workload(t, "old", 1000, 0)
	if err := f.s.Workloads.Retire(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	f.apply(t, usage("ur_seen", "a", 5))
	bad := usage("ur_bad", "a", 0)
	changed := usage("ur_seen", "a", 6) // the same record, another amount
	// given one batch mixing workloads, an unknown and a retired one, a
	// refused record, a duplicate, a disagreement and a repeat within it
	us := []Usage{usage("ur_a1", "a", 10), usage("ur_b1", "b", 20), usage("ur_x", "nobody", 1),
		usage("ur_o", "old", 3), bad, usage("ur_seen", "a", 5), usage("ur_a2", "a", 30), usage("ur_a1", "a", 10), changed}
	res, errs := f.s.Ledger.ApplyBatch(ctx, us)
	want := []Outcome{Applied, Applied, Deferred, Deferred, "", Duplicate, Applied, Duplicate, Disagreement}
	for i := range us {
		if i == 4 {
			if !IsRefused(errs[i]) {
				t.Errorf("zero units: err = %v, want a refusal", errs[i])
			}
			continue
		}
		if errs[i] != nil || res[i].Outcome != want[i] {
			t.Errorf("record %d (%s): %s, %v; want %s", i, us[i].RecordID, res[i].Outcome, errs[i], want[i])
		}
	}
	if res[3].Deferred == nil || res[3].Deferred.Reason != ReasonRetiredWorkload {
		t.Errorf("retired workload: %+v, want deferred as retired", res[3].Deferred)
	}
	// then the totals count each distinct record once
	if a, b := f.total(t, "a"), f.total(t, "b"); a != 45 || b != 20 {
		t.Errorf("totals a=%d b=%d, want 45 and 20", a, b)
	}
}

func TestApplyBatchPastMaxTotalRefusesOnlyTheRecordThatWouldPassIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.workload(t, "big", MaxTotal, 0)
	f.apply(t, usage("ur_base", "big", MaxTotal-10))
	// given a batch whose sum would carry the total past MaxTotal
	us := []Usage{usage("ur_fits", "big", 10), usage("ur_over", "big", 1)}
	res, errs := f.s.Ledger.ApplyBatch(context.Background(), us)
	// then the record that fits is applied and the one past it refused
	var oe *OverflowError
	if errs[0] != nil || res[0].Outcome != Applied || !errors.As(errs[1], &oe) || !IsRefused(errs[1]) {
		t.Fatalf("results %+v, %v; want the first applied, the second an *OverflowError", res, errs)
	}
	if got := f.total(t, "big"); got != MaxTotal {
		t.Fatalf("total = %d, want MaxTotal", got)
	}
}

func TestApplyBatchOfMoreThanOneTransaction(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.workload(t, "hot", 1000, 0)
	// given more records for one workload than one transaction takes
	res, errs := f.s.Ledger.ApplyBatch(context.Background(), batchOf("hot", MaxBatchRecords+5, 30))
	noErrors(t, errs)
	// then all count, and the cap is paged once, by the record that crossed it (the 34th: 34*30 = 1020)
	if got := f.total(t, "hot"); got != int64(MaxBatchRecords+5)*30 {
		t.Fatalf("total = %d", got)
	}
	var decided []string
	for _, r := range res {
		for _, d := range r.Decisions {
			decided = append(decided, d.RecordID)
		}
	}
	if len(decided) != 1 || decided[0] != "ur_hot_33" || len(f.pages(t, "spend-cap:hot:pause")) != 1 {
		t.Fatalf("decisions by %v, pages %d; want one pause by ur_hot_33", decided, len(f.pages(t, "spend-cap:hot:pause")))
	}
}

// failingReads fails every BatchGetItem, as an unreachable DynamoDB would.
type failingReads struct{ DB }

func (failingReads) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return nil, errors.New("dynamodb: connection refused")
}

func TestApplyBatchWhenTheAliasesCannotBeReadAppliesNothing(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	f := newFixtureWith(t, env, failingReads{env.DynamoDB}, nil)
	f.workload(t, "hot", 1000, 0)
	_, errs := f.s.Ledger.ApplyBatch(context.Background(), append(batchOf("hot", 2, 1), usage("ur_bad", "hot", 0)))
	// then the valid records fail for a retry, the invalid one is still refused
	if errs[0] == nil || errs[1] == nil || IsRefused(errs[0]) || !IsRefused(errs[2]) {
		t.Fatalf("errs = %v; want two retryable errors and one refusal", errs)
	}
	if f.total(t, "hot") != 0 {
		t.Fatalf("total = %d, want 0", f.total(t, "hot"))
	}
}

func TestApplyBatchStopsRetryingWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	db := &batchConflicting{DB: env.DynamoDB, n: 1 << 30}
	f := newFixtureWith(t, env, db, nil)
	f.workload(t, "hot", 1000, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, errs := f.s.Ledger.ApplyBatch(ctx, batchOf("hot", 2, 1))
	if errs[0] == nil || db.attempts > 1 {
		t.Fatalf("errs = %v after %d attempts; want an error after the first", errs, db.attempts)
	}
}

func TestApplyBatchEscalatesOnceByTheRecordThatPassedTheStep(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// given a workload paused at 110 over a cap of 100, escalating every 50
	f.workload(t, "hot", 100, 50)
	f.apply(t, usage("ur_first", "hot", 110))
	// when a batch carries it past 150 at its third record (110+20+20+20 = 170)
	res, errs := f.s.Ledger.ApplyBatch(context.Background(), batchOf("hot", 3, 20))
	noErrors(t, errs)
	var decided []string
	for _, r := range res {
		for _, d := range r.Decisions {
			decided = append(decided, d.Action+":"+d.RecordID)
		}
	}
	// then one escalation is paged, in the name of that record
	if len(decided) != 1 || decided[0] != "escalate:ur_hot_2" {
		t.Fatalf("decisions = %v; want [escalate:ur_hot_2]", decided)
	}
}

// failingAfter passes the first n TransactWriteItems through and fails the
// rest, as DynamoDB down (after the SDK's retries) would.
type failingAfter struct {
	DB
	mu sync.Mutex
	n  int
}

func (c *failingAfter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.mu.Lock()
	pass := c.n > 0
	c.n--
	c.mu.Unlock()
	if pass {
		return c.DB.TransactWriteItems(ctx, in, opts...)
	}
	return nil, errors.New("dynamodb down")
}

// TestApplyBatchAnswersForADuplicateWhenTheRestFails: a batch whose
// transaction is cancelled by a record already in the ledger takes that
// record out and runs again; when the second run fails, the duplicate
// must still get an answer (classified, or the error), never an empty
// result that the worker would acknowledge as applied to no workload.
func TestApplyBatchAnswersForADuplicateWhenTheRestFails(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	db := &failingAfter{DB: env.DynamoDB, n: 1 << 30}
	f := newFixtureWith(t, env, db, nil)
	f.workload(t, "hot", 1000, 0)
	us := batchOf("hot", 2, 7)
	// Given the first record already in the ledger (the first transaction),
	if _, err := f.s.Ledger.Apply(context.Background(), us[0]); err != nil {
		t.Fatal(err)
	}
	// when both come in one batch and the run without the duplicate fails,
	db.mu.Lock()
	db.n = 1
	db.mu.Unlock()
	res, errs := f.s.Ledger.ApplyBatch(context.Background(), us)
	// then each record has an outcome for its workload or an error.
	for i := range us {
		if errs[i] == nil && (res[i].Outcome == "" || res[i].WorkloadID == "") {
			t.Errorf("record %d: outcome %q for workload %q and no error", i, res[i].Outcome, res[i].WorkloadID)
		}
	}
	if errs[1] == nil {
		t.Errorf("record 1 applied while DynamoDB was down: %+v", res[1])
	}
}
