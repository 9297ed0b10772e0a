package intake_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
)

// A partition past DynamoDB's limit refuses the intake put with
// ProvisionedThroughputExceededException. The SDK retries it; when the
// throttle outlasts its retries the answer is ErrUnavailable, a 503 the
// provider retries, and nothing is claimed.

func TestAThrottledPutIsUnavailableAndClaimsNothing(t *testing.T) {
	for _, tt := range []struct {
		name string
		hold func(t *testing.T, c *clocked, ev intake.Event) (stop func())
	}{
		{name: "the record's partition", hold: func(t *testing.T, c *clocked, ev intake.Event) func() {
			return localaws.HoldPartitionAtLimit(t, c.env, c.env.TableName("IntakeTable"), intake.Key(ev.Source, ev.EventID))
		}},
		{name: "its replay index shard", hold: func(t *testing.T, c *clocked, ev intake.Event) func() {
			return localaws.HoldIndexPartitionAtLimit(t, c.env, c.env.TableName("IntakeTable"), intake.IndexByShardReceived, intake.ShardKey(ev.Source, ev.EventID))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Given the partition held at its limit,
			c := newClocked(t, localaws.Faults{})
			ev := drillEvent(c.env, "evt_throttled")
			stop := tt.hold(t, c, ev)
			// when the event is delivered, it is unavailable, and the error
			// carries DynamoDB's throttle,
			_, err := c.store.Accept(context.Background(), ev)
			var throttled *types.ProvisionedThroughputExceededException
			if !errors.Is(err, intake.ErrUnavailable) || !errors.As(err, &throttled) {
				t.Fatalf("Accept on a throttled partition = %v, want ErrUnavailable with the throttle", err)
			}
			// nothing is recorded or queued,
			stop()
			c.absent(t, ev)
			if n := queued(t, c.env, ev.EventID); n != 0 {
				t.Fatalf("queue holds %d messages, want none", n)
			}
			// and the provider's retry once the partition has capacity is a
			// first attempt: accepted.
			if res, err := c.store.Accept(context.Background(), ev); err != nil || res.Outcome != intake.Accepted {
				t.Fatalf("retry = %+v, %v; want accepted", res, err)
			}
		})
	}
}

func TestAThrottleTheSDKOutlastsIsAccepted(t *testing.T) {
	t.Parallel()
	// Given the record's partition refusing the next two requests (the SDK
	// makes three attempts),
	c := newClocked(t, localaws.Faults{})
	ev := drillEvent(c.env, "evt_throttled_twice")
	localaws.ThrottlePartitionRequests(t, c.env, c.env.TableName("IntakeTable"), intake.Key(ev.Source, ev.EventID), 2)
	// when the event is delivered, it is accepted, once.
	if res, err := c.store.Accept(context.Background(), ev); err != nil || res.Outcome != intake.Accepted {
		t.Fatalf("Accept = %+v, %v; want accepted", res, err)
	}
	if got := c.env.Capacity().Tables[c.env.TableName("IntakeTable")].WriteThrottles; got != 2 {
		t.Errorf("%v writes throttled, want 2", got)
	}
	if n := queued(t, c.env, ev.EventID); n != 1 {
		t.Errorf("queue holds %d messages, want 1", n)
	}
}

func TestAThrottledReadIsUnavailable(t *testing.T) {
	t.Parallel()
	// Given an accepted event whose partition is then held at its limit,
	c := newClocked(t, localaws.Faults{})
	ev := drillEvent(c.env, "evt_read_throttled")
	mustAccept(t, c.store, ev)
	localaws.HoldPartitionAtLimit(t, c.env, c.env.TableName("IntakeTable"), intake.Key(ev.Source, ev.EventID))
	// when its record is read, the answer is unavailable, not "no record".
	if _, ok, err := c.store.Get(context.Background(), ev.Source, ev.EventID); !errors.Is(err, intake.ErrUnavailable) || ok {
		t.Fatalf("Get on a throttled partition = found %v, %v; want ErrUnavailable", ok, err)
	}
}
