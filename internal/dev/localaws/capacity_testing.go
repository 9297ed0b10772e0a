package localaws

import (
	"sync"
	"testing"
)

// HoldPartitionAtLimit makes the embedded DynamoDB answer every request
// that reads or writes the partition pk (a string) of a table as DynamoDB
// answers a partition past its limit of 1,000 write or 3,000 read units a
// second: ProvisionedThroughputExceededException for a single-item
// request, ThrottlingError in a transaction's cancellation reasons. Other
// partitions are served as before. It holds until stop is called (at the
// latest when the test ends): for deterministic tests of how production
// code meets throttling.
func HoldPartitionAtLimit(t testing.TB, env *Env, table, pk string) (stop func()) {
	t.Helper()
	return holdAtLimit(t, env, table, "", pk, -1)
}

// ThrottlePartitionRequests is [HoldPartitionAtLimit] for the next n
// requests that read or write the partition pk of a table, and no longer:
// a test of a retry knows exactly how many throttles it met, however
// slowly the machine runs, and a retry budget larger than n must get
// past them.
func ThrottlePartitionRequests(t testing.TB, env *Env, table, pk string, n int) {
	t.Helper()
	if n <= 0 {
		t.Fatalf("throttle %d requests: want at least one", n)
	}
	holdAtLimit(t, env, table, "", pk, n)
}

// HoldIndexPartitionAtLimit is [HoldPartitionAtLimit] for the partition
// pk of a table's global secondary index: a write to the table that
// would write that partition of the index is refused, as DynamoDB refuses
// it when the index lacks capacity (TableWriteKeyRangeThroughputExceeded
// becomes IndexWriteKeyRangeThroughputExceeded).
func HoldIndexPartitionAtLimit(t testing.TB, env *Env, table, index, pk string) (stop func()) {
	t.Helper()
	return holdAtLimit(t, env, table, index, pk, -1)
}

func holdAtLimit(t testing.TB, env *Env, table, index, pk string, requests int) (stop func()) {
	t.Helper()
	if env.front == nil || !env.front.model {
		t.Fatal("holding a partition at its limit needs the embedded DynamoDB with its model on")
	}
	var once sync.Once
	release := env.front.meter.hold(table, index, "S:"+pk, requests)
	stop = func() { once.Do(release) }
	t.Cleanup(stop)
	return stop
}
