package spend

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// flakyReads fails the next consistent read of a workload item, as a
// DynamoDB blip right after the ledger transaction would.
type flakyReads struct {
	DB
	failNext atomic.Bool
}

func (f *flakyReads) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if pk, ok := in.Key["pk"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(pk.Value, "WL#") && f.failNext.CompareAndSwap(true, false) {
		return nil, errors.New("dynamodb: throttled")
	}
	return f.DB.GetItem(ctx, in, o...)
}

func TestRedeliveryAfterAFailedCapCheckStillTripsTheCap(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	flaky := &flakyReads{DB: env.DynamoDB}
	f := newFixtureOn(t, env, nil)
	f.s.Ledger.db = flaky
	f.workload(t, "w1", 100, 0)
	f.apply(t, usage("r1", "w1", 60))
	// Given the crossing record's transaction commits but its cap check
	// read fails (so the worker fails the record back to the queue),
	flaky.failNext.Store(true)
	if _, err := f.s.Ledger.Apply(context.Background(), usage("r2", "w1", 60)); err == nil {
		t.Fatal("Apply with a failing cap check returned no error")
	}
	if w, _ := f.s.Workloads.Get(context.Background(), "w1"); w.Status != StatusActive || w.Total != 120 {
		t.Fatalf("after the failed check: %+v; want active with total 120", w)
	}
	// when the record is redelivered,
	res := f.apply(t, usage("r2", "w1", 60))
	// then it is a duplicate (no second effect) that still pauses the
	// workload and pages once.
	if res.Outcome != Duplicate || len(res.Decisions) != 1 || f.total(t, "w1") != 120 {
		t.Fatalf("redelivery = %+v, total %d", res, f.total(t, "w1"))
	}
	if w, _ := f.s.Workloads.Get(context.Background(), "w1"); w.Status != StatusPaused {
		t.Fatalf("status = %s, want paused", w.Status)
	}
	if again := f.apply(t, usage("r2", "w1", 60)); len(again.Decisions) != 0 {
		t.Fatalf("a third delivery decided again: %+v", again.Decisions)
	}
}
