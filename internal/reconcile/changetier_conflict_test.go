package reconcile_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/testkit"
)

// conflictOnce cancels its first TransactWriteItems with
// TransactionConflict, as DynamoDB cancels a transaction that meets a
// running one, and passes every other call to the local DynamoDB.
type conflictOnce struct {
	reconcile.DB
	calls atomic.Int64
}

func (c *conflictOnce) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if c.calls.Add(1) > 1 {
		return c.DB.TransactWriteItems(ctx, in, opts...)
	}
	return nil, testkit.Conflict(len(in.TransactItems), 0)
}

func TestChangeTierIsNotLostToAConflict(t *testing.T) {
	t.Parallel()
	// Given a store over a DynamoDB that cancels the first transaction
	// with TransactionConflict (no other run changed anything)
	env := localaws.StartForTest(t)
	db := &conflictOnce{DB: env.DynamoDB}
	store, err := reconcile.NewStore(reconcile.StoreConfig{DB: db, Table: env.TableName("LedgerTable")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ch := reconcile.IntervalChange{WorkloadID: "w1", To: reconcile.TierNearCap, ToInterval: time.Minute,
		Reason: "total 95 >= 0.90 x cap 100", At: t0, RunID: "run-1"}

	// When a run records the workload's first tier
	changed, err := store.ChangeTier(ctx, reconcile.Schedule{}, false, ch)

	// Then the conflict is retried, not taken for another run's change
	if err != nil || !changed {
		t.Fatalf("ChangeTier = %v, %v; want true: a conflict is not another run's change", changed, err)
	}
	sc, found, err := store.Schedule(ctx, "w1")
	if err != nil || !found || sc.Tier != reconcile.TierNearCap {
		t.Fatalf("schedule = %+v, %v, %v; want tier near_cap", sc, found, err)
	}
}
