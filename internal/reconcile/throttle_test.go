package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/reconcile"
)

// TestChangeTierRetriesAThrottlingCancellation: DynamoDB cancels a
// transaction that lacks throughput with the reason ThrottlingError (API
// reference, TransactWriteItems), which says nothing about the tier
// condition. A tier change must not be read as made by another run then.
func TestChangeTierRetriesAThrottlingCancellation(t *testing.T) {
	t.Parallel()
	// Given a workload's schedule partition that throttles its next three
	// requests
	env, table, store := newStore(t)
	localaws.ThrottlePartitionRequests(t, env, table, "WL#w1", 3)
	// When the first run moves the workload to a tier
	changed, err := store.ChangeTier(context.Background(), reconcile.Schedule{}, false, reconcile.IntervalChange{
		WorkloadID: "w1", To: reconcile.TierActive, ToInterval: time.Hour, Reason: "first run", At: time.Now(), RunID: "run-1"})
	// Then the change is made once the partition has capacity again
	if err != nil || !changed {
		t.Fatalf("change tier under throttling: changed %v, %v; want changed", changed, err)
	}
	if got := env.Capacity().Tables[table].WriteThrottles; got != 3 {
		t.Fatalf("the tier change met %d throttles, want 3: the test did not drive the retry", got)
	}
	sc, found, err := store.Schedule(context.Background(), "w1")
	if err != nil || !found || sc.Tier != reconcile.TierActive {
		t.Fatalf("schedule after the change: %+v found %v, %v", sc, found, err)
	}
}
