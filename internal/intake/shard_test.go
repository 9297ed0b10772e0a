package intake_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
)

// TestOneSourceIsNotOneIndexPartition: every intake record is also
// written to the index that replays read by time. Keyed by source alone,
// all of one source's events would write one partition of it, which
// DynamoDB serves at 1,000 write units a second: a 3x spike of 500/s
// would be throttled at the door. With that partition held at its limit,
// the source's events are still accepted, spread over the index's
// shards, and a replay still lists them, oldest first, with a record
// written before the shards.
func TestOneSourceIsNotOneIndexPartition(t *testing.T) {
	env, store := newFaultStore(t, localaws.Faults{})
	table := env.TableName("IntakeTable")
	old := drillEvent(env, "evt_before_shards")
	putStaleRecord(t, env, old)
	release := localaws.HoldIndexPartitionAtLimit(t, env, table, intake.IndexBySourceReceived, "payments")
	start := time.Now().Add(-2 * time.Minute)
	shards := map[string]bool{}
	for i := range 32 {
		ev := drillEvent(env, fmt.Sprintf("evt_hot_%02d", i))
		res, err := store.Accept(context.Background(), ev)
		if err != nil || res.Outcome != intake.Accepted {
			t.Fatalf("event %d of a hot source: %+v, %v", i, res, err)
		}
		shards[intake.ShardKey(ev.Source, ev.EventID)] = true
	}
	if len(shards) < 8 {
		t.Fatalf("32 events wrote %d index partitions, want them spread over at least 8", len(shards))
	}
	release() // the hold refuses reads too
	var listed []string
	var last time.Time
	err := store.ReceivedBetween(context.Background(), "payments", start, time.Now(), func(id string, at time.Time) error {
		if at.Before(last) {
			t.Errorf("%s at %v listed after %v: not oldest first", id, at, last)
		}
		last = at
		listed = append(listed, id)
		return nil
	})
	if err != nil || len(listed) != 33 || listed[0] != old.EventID {
		t.Fatalf("replay listed %d records (%v), first %v; want 33, the one before the shards first", len(listed), err, listed)
	}
}
