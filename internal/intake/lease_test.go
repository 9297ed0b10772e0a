package intake_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
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

func TestARedeliveryWaitsOutTheRestOfAShortLeaseThenSends(t *testing.T) {
	t.Parallel()
	// Given an event sent by a delivery whose lease has 30 ms left, and a
	// store that waits up to the production 1.25 leases for it,
	c := newClocked(t, localaws.Faults{})
	ev := drillEvent(c.env, "evt_short_rest")
	if _, err := c.store.Accept(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	waiting, err := intake.New(intake.Config{DynamoDB: c.env.DynamoDB, SQS: c.env.SQS, Table: c.env.TableName("IntakeTable"),
		Lease: specLease, Now: c.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	c.clock.Set(t0.Add(specLease - 30*time.Millisecond))
	// when the provider redelivers, the redelivery waits the 30 ms out
	// rather than answering busy, takes the lease and sends again.
	if res, err := waiting.Accept(context.Background(), ev); err != nil || res.Outcome != intake.Duplicate {
		t.Fatalf("redelivery near the lease's end = %+v, %v; want duplicate", res, err)
	}
	if n := queued(t, c.env, ev.EventID); n != 2 {
		t.Errorf("queue holds %d messages, want 2", n)
	}
}

func TestConcurrentDeliveriesHaveOneSenderPerLease(t *testing.T) {
	t.Parallel()
	// Given a provider that delivers one event 8 times at once, and AWS
	// answering each call after 20 ms, so that the deliveries' calls
	// overlap,
	c := clockedOn(t, startSlow(t, 20*time.Millisecond))
	ev := drillEvent(c.env, "evt_concurrent")
	const deliveries = 8
	// when they meet in one lease, exactly one records and sends it, and
	// the rest answer busy (503 in_progress);
	answers := deliverAtOnce(c.store, ev, deliveries)
	if answers[string(intake.Accepted)] != 1 || answers["busy"] != deliveries-1 {
		t.Fatalf("first lease: answers %v, want 1 accepted and %d busy", answers, deliveries-1)
	}
	if n := queued(t, c.env, ev.EventID); n != 1 {
		t.Fatalf("first lease: queue holds %d messages, want 1", n)
	}
	// and when 8 more meet after that lease, exactly one takes the lease
	// over and sends again (duplicate); the rest lost the take-over, or
	// found the new lease live, and are busy.
	c.clock.Advance(specLease + time.Millisecond)
	answers = deliverAtOnce(c.store, ev, deliveries)
	if answers[string(intake.Duplicate)] != 1 || answers["busy"] != deliveries-1 {
		t.Fatalf("second lease: answers %v, want 1 duplicate and %d busy", answers, deliveries-1)
	}
	if n := queued(t, c.env, ev.EventID); n != 1 {
		t.Errorf("second lease: queue holds %d more messages, want 1", n)
	}
}

// deliverAtOnce accepts ev n times concurrently and counts the answers
// by outcome, "busy" for ErrBusy, and the error text for anything else.
func deliverAtOnce(store *intake.Store, ev intake.Event, n int) map[string]int {
	var mu sync.Mutex
	answers := map[string]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			res, err := store.Accept(context.Background(), ev)
			answer := string(res.Outcome)
			switch {
			case errors.Is(err, intake.ErrBusy):
				answer = "busy"
			case err != nil:
				answer = err.Error()
			}
			mu.Lock()
			answers[answer]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return answers
}

func TestATakeOverThatFailsSendsNothingAndKeepsTheLease(t *testing.T) {
	for _, fault := range []string{localaws.FaultDDBError, localaws.FaultDDBThrottle} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			// Given an event whose first delivery's lease has passed, and a
			// take-over update that meets the fault on every attempt,
			var faulty atomic.Bool
			c := newClocked(t, localaws.Faults{Seed: 59, Rates: map[string]float64{fault: 1},
				Match: func(r localaws.FaultRequest) bool { return faulty.Load() && r.Operation == "UpdateItem" }})
			ev := drillEvent(c.env, "evt_takeover_"+fault)
			if _, err := c.store.Accept(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			before := c.record(t, ev)
			c.clock.Advance(specLease + time.Millisecond)
			faulty.Store(true)
			// when the provider redelivers, it is unavailable and nothing
			// more is queued,
			if _, err := c.store.Accept(context.Background(), ev); !errors.Is(err, intake.ErrUnavailable) {
				t.Fatalf("redelivery with the take-over refused = %v, want ErrUnavailable", err)
			}
			faulty.Store(false)
			if n := queued(t, c.env, ev.EventID); n != 1 {
				t.Fatalf("queue holds %d messages, want only the first delivery's", n)
			}
			// the lease is still the first delivery's, and the provider's
			// next retry takes it and sends.
			if rec := c.record(t, ev); rec.LeaseToken != before.LeaseToken {
				t.Errorf("lease token %s after a refused take-over, want %s", rec.LeaseToken, before.LeaseToken)
			}
			if res, err := c.store.Accept(context.Background(), ev); err != nil || res.Outcome != intake.Duplicate {
				t.Fatalf("next retry = %+v, %v; want duplicate", res, err)
			}
		})
	}
}
