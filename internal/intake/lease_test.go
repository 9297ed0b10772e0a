package intake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
)

// The send lease, and how a redelivery waits for it.

func TestARedeliveryDuringALongLeaseIsBusy(t *testing.T) {
	// Given a lease far longer than a redelivery may wait,
	env := localaws.StartForTest(t)
	store, err := intake.New(intake.Config{DynamoDB: env.DynamoDB, SQS: env.SQS, Table: env.TableName("IntakeTable"),
		Lease: time.Minute, BusyWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ev := drillEvent(env, "evt_long_lease")
	if res, err := store.Accept(context.Background(), ev); err != nil || res.Outcome != intake.Accepted {
		t.Fatalf("first delivery: %+v, %v", res, err)
	}
	// when the event is delivered again, it is answered busy at once (the
	// holder may still be sending), and nothing more is queued.
	start := time.Now()
	if _, err := store.Accept(context.Background(), ev); !errors.Is(err, intake.ErrBusy) {
		t.Fatalf("redelivery in a minute's lease: %v, want ErrBusy", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("answered busy after %v: it waited for a lease it could not outlast", d)
	}
	if n := queued(t, env, ev.EventID); n != 1 {
		t.Errorf("queue holds %d messages, want 1", n)
	}
}

func TestARedeliveryWaitingForTheLeaseStopsWithItsCaller(t *testing.T) {
	// Given a live lease a redelivery would wait out,
	env := localaws.StartForTest(t)
	store, err := intake.New(intake.Config{DynamoDB: env.DynamoDB, SQS: env.SQS, Table: env.TableName("IntakeTable"),
		Lease: 30 * time.Second, BusyWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ev := drillEvent(env, "evt_caller_gone")
	if _, err := store.Accept(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	// when its caller gives up while it waits (API Gateway's timeout),
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = store.Accept(ctx, ev)
	// then it answers unavailable, so the provider retries, and sends
	// nothing.
	if !errors.Is(err, intake.ErrUnavailable) {
		t.Fatalf("redelivery whose caller gave up: %v, want ErrUnavailable", err)
	}
	if n := queued(t, env, ev.EventID); n != 1 {
		t.Errorf("queue holds %d messages, want 1", n)
	}
}

func TestAReplayStopsWhereItsCallerStops(t *testing.T) {
	env, store := newFaultStore(t, localaws.Faults{})
	for _, id := range []string{"evt_r1", "evt_r2", "evt_r3"} {
		if _, err := store.Accept(context.Background(), drillEvent(env, id)); err != nil {
			t.Fatal(err)
		}
	}
	stop := errors.New("enough")
	seen := 0
	err := store.ReceivedBetween(context.Background(), "payments", time.Now().Add(-time.Minute), time.Now(), func(string, time.Time) error {
		seen++
		return stop
	})
	if !errors.Is(err, stop) || seen != 1 {
		t.Fatalf("listing after the caller stopped: %d records, %v; want 1 and its error", seen, err)
	}
}

func TestAReplayWhoseQueryFailsIsUnavailable(t *testing.T) {
	// Given a shard of the replay index that answers every read with a
	// throttle the SDK's retries do not outlast,
	env, store := newFaultStore(t, localaws.Faults{})
	ev := drillEvent(env, "evt_q1")
	if _, err := store.Accept(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	localaws.HoldIndexPartitionAtLimit(t, env, env.TableName("IntakeTable"), intake.IndexByShardReceived, intake.ShardKey(ev.Source, ev.EventID))
	// a replay by time says the intake is unavailable, and lists nothing.
	seen := 0
	err := store.ReceivedBetween(context.Background(), "payments", time.Now().Add(-time.Minute), time.Now(), func(string, time.Time) error {
		seen++
		return nil
	})
	if !errors.Is(err, intake.ErrUnavailable) || seen != 0 {
		t.Fatalf("replay with a shard throttled: %d records, %v; want none and ErrUnavailable", seen, err)
	}
}
