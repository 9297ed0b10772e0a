package paymentworker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/pkg/idempotency"
)

// The contract drills: each hostile sequence of docs/provider-contract.md,
// against each idempotency profile. Every one ends with the customer
// charged at most once and the event settled.

func drillID(p providersim.Profile, name string) string {
	return fmt.Sprintf("evt_%s_%s", name, p)
}

// wantChargedOnce checks the end state of an event the provider charged.
func wantChargedOnce(t *testing.T, r *contractRig, eventID string) {
	t.Helper()
	r.sim.Charges.WaitCommits()
	time.Sleep(contractLookupLag)
	if got := r.sim.Charges.SucceededCount(eventID); got != 1 {
		t.Fatalf("%s charged %d times, want 1", eventID, got)
	}
	rec := r.status(t, eventID)
	if rec.State != idempotency.StateCompleted || !strings.Contains(string(rec.Result), `"status":"succeeded"`) {
		t.Fatalf("%s key = %s %s, want COMPLETED with the charge", eventID, rec.State, rec.Result)
	}
}

// Sequence 1: a 402 whose body is an error object, not a charge.
func TestDrillDeclineWithErrorBody(t *testing.T) {
	t.Parallel()
	forEachProfile(t, func(t *testing.T, env *localaws.Env, p providersim.Profile) {
		r := newContractRig(t, env, p, providersim.Config{DeclineErrorBody: true})
		id := drillID(p, "decline_body")
		// Given a provider that declines with {"error":{"type":"card_error",...}},
		// when a payment it declines is delivered (amounts ending in 02 are declined),
		got := r.settle(t, r.msg(id, paymentBody(id, 1202), 1))
		// then the worker survives, acknowledges it and stores the decline.
		rec := r.status(t, id)
		if got != "acknowledged" || rec.State != idempotency.StateCompleted || !strings.Contains(string(rec.Result), `"status":"declined"`) {
			t.Fatalf("ended %s, key %s %s; want acknowledged and COMPLETED declined", got, rec.State, rec.Result)
		}
		if r.sim.Charges.SucceededCount(id) != 0 {
			t.Fatalf("a declined payment was charged")
		}
	})
}

// Sequence 2: the provider commits, then answers 5xx, 408 or 409, or loses
// the answer.
func TestDrillCommitThenAmbiguousAnswer(t *testing.T) {
	t.Parallel()
	faults := []providersim.Fault{
		{Kind: providersim.FaultCommitThenError, Status: 502},
		{Kind: providersim.FaultCommitThenError, Status: 503},
		{Kind: providersim.FaultCommitThenError, Status: 504},
		{Kind: providersim.FaultCommitThenError, Status: 500},
		{Kind: providersim.FaultCommitThenError, Status: 408},
		{Kind: providersim.FaultKeyInUse, Delay: contractCommit / 2},
		{Kind: providersim.FaultDropAfterCharge},
		{Kind: providersim.FaultTimeoutAfterCharge},
	}
	forEachProfile(t, func(t *testing.T, env *localaws.Env, p providersim.Profile) {
		for _, f := range faults {
			name := fmt.Sprintf("%s_%d", f.Kind, f.Status)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				r := newContractRig(t, env, p, providersim.Config{})
				id := drillID(p, name)
				// Given a provider whose first charge call commits and then
				// answers ambiguously,
				r.sim.Faults.InjectFaults(1, f)
				// when the payment is delivered until it settles,
				got := r.settle(t, r.msg(id, paymentBody(id, 2500), 1))
				// then it is acknowledged and charged exactly once.
				if got != "acknowledged" {
					t.Fatalf("ended %s", got)
				}
				wantChargedOnce(t, r, id)
			})
		}
	})
}

// Sequence 3: an attempt that looked retriable is released, then a fresh
// first-receive copy (a replay, a redrive, the intake's duplicate send)
// arrives.
func TestDrillFreshCopyAfterARetriableAttempt(t *testing.T) {
	t.Parallel()
	forEachProfile(t, func(t *testing.T, env *localaws.Env, p providersim.Profile) {
		r := newContractRig(t, env, p, providersim.Config{})
		id := drillID(p, "fresh_copy")
		body := paymentBody(id, 3100)
		// Given a first attempt that committed and was answered 503,
		r.sim.Faults.InjectFaults(1, providersim.Fault{Kind: providersim.FaultCommitThenError, Status: 503})
		r.deliver(r.msg(id, body, 1), 1)
		// when a fresh copy of the event is delivered, and then the first
		// copy comes back,
		if got := r.settle(t, r.msg(id, body, 2)); got != "acknowledged" {
			t.Fatalf("fresh copy ended %s", got)
		}
		if got := r.settle(t, r.msg(id, body, 1)); got != "acknowledged" {
			t.Fatalf("first copy ended %s", got)
		}
		// then the customer was charged once.
		wantChargedOnce(t, r, id)
	})
}

// Sequence 4: the provider normalises the currency ("USD" comes back as
// "usd") and the first answer is lost.
func TestDrillNormalisedCurrency(t *testing.T) {
	t.Parallel()
	forEachProfile(t, func(t *testing.T, env *localaws.Env, p providersim.Profile) {
		r := newContractRig(t, env, p, providersim.Config{NormaliseCurrency: true})
		id := drillID(p, "currency")
		body := strings.Replace(paymentBody(id, 4100), `"usd"`, `"USD"`, 1)
		r.sim.Faults.InjectFaults(1, providersim.Fault{Kind: providersim.FaultDropAfterCharge})
		// When the payment settles and is then redriven,
		first := r.settle(t, r.msg(id, body, 1))
		again := r.settle(t, r.msg(id, body, 2))
		// then it was never dead-lettered and charged once.
		if first != "acknowledged" || again != "acknowledged" {
			t.Fatalf("ended %s then %s, want acknowledged twice", first, again)
		}
		wantChargedOnce(t, r, id)
	})
}

// Sequence 5: the provider commits after the client gave up, and a
// duplicate delivery arrives after the first invocation's deadline but
// before that commit.
func TestDrillCommitAfterTheClientGaveUp(t *testing.T) {
	t.Parallel()
	forEachProfile(t, func(t *testing.T, env *localaws.Env, p providersim.Profile) {
		r := newContractRig(t, env, p, providersim.Config{})
		id := drillID(p, "slow_commit")
		body := paymentBody(id, 5100)
		// Given a provider that commits the first charge a second after it
		// was sent, whatever the client does,
		r.sim.Faults.InjectFaults(1, providersim.Fault{Kind: providersim.FaultSlowCommit, Delay: contractCommit})
		// when a first delivery with a short deadline gives up on it,
		r.timeout = 400 * time.Millisecond
		start := time.Now()
		r.deliver(r.msg(id, body, 1), 1)
		r.timeout = 2 * time.Second
		// and a duplicate arrives after that deadline, while the commit is
		// still on its way,
		time.Sleep(time.Until(start.Add(950 * time.Millisecond)))
		if got := r.settle(t, r.msg(id, body, 2)); got != "acknowledged" {
			t.Fatalf("duplicate ended %s", got)
		}
		// then the customer was charged once.
		t.Logf("charges: %+v", r.sim.Charges.All())
		wantChargedOnce(t, r, id)
	})
}

// A Lambda timeout in the middle of a batch: every record comes back,
// some of them charged, some with their charge in flight.
func TestDrillLambdaTimeoutMidBatch(t *testing.T) {
	t.Parallel()
	forEachProfile(t, func(t *testing.T, env *localaws.Env, p providersim.Profile) {
		r := newContractRig(t, env, p, providersim.Config{Latency: 150 * time.Millisecond})
		var ids []string
		for i := range 10 {
			ids = append(ids, drillID(p, fmt.Sprintf("timeout_%d", i)))
		}
		// Given a batch of 10 whose invocation times out part way through,
		r.timeout = 400 * time.Millisecond
		batch := make([]string, len(ids))
		copy(batch, ids)
		r.deliverBatch(batch, 1)
		r.timeout = 2 * time.Second
		// when every record is delivered again until it settles,
		for _, id := range ids {
			if got := r.settle(t, r.msg(id, paymentBody(id, 6100), 1)); got != "acknowledged" {
				t.Fatalf("%s ended %s", id, got)
			}
		}
		// then each was charged once.
		for _, id := range ids {
			wantChargedOnce(t, r, id)
		}
	})
}

// Complete fails after a successful charge: DynamoDB is down, or it
// applies the write and the answer is lost.
func TestDrillCompleteFailsAfterTheCharge(t *testing.T) {
	t.Parallel()
	modes := []string{"before_write", "after_write"}
	forEachProfile(t, func(t *testing.T, env *localaws.Env, p providersim.Profile) {
		for _, mode := range modes {
			t.Run(mode, func(t *testing.T) {
				t.Parallel()
				r := newContractRig(t, env, p, providersim.Config{})
				failing := &failOnceStore{Store: r.store, afterWrite: mode == "after_write"}
				r.reg, r.worker = contractWorker(t, failing, r.client, r.queue)
				id := drillID(p, "complete_"+mode)
				if got := r.settle(t, r.msg(id, paymentBody(id, 7100), 1)); got != "acknowledged" {
					t.Fatalf("ended %s", got)
				}
				if !failing.failed {
					t.Fatalf("Complete never failed: the drill proves nothing")
				}
				wantChargedOnce(t, r, id)
			})
		}
	})
}

// A redrive and a replay of an event whose earlier attempt was ambiguous,
// delivered at the same time.
func TestDrillRedriveAndReplayAfterAnAmbiguousAttempt(t *testing.T) {
	t.Parallel()
	forEachProfile(t, func(t *testing.T, env *localaws.Env, p providersim.Profile) {
		r := newContractRig(t, env, p, providersim.Config{LookupLag: contractLookupLag})
		id := drillID(p, "redrive")
		body := paymentBody(id, 8100)
		// Given a first attempt that committed and lost its answer, whose
		// message then went to the DLQ,
		r.sim.Faults.InjectFaults(1, providersim.Fault{Kind: providersim.FaultCommitThenError, Status: 502})
		r.deliver(r.msg(id, body, 1), 1)
		// when an operator redrives it and replays it from intake at once,
		var wg sync.WaitGroup
		ends := make([]string, 2)
		for i := range 2 {
			wg.Go(func() { ends[i] = r.settle(t, r.msg(id, body, 2+i)) })
		}
		wg.Wait()
		// then both copies are acknowledged and the customer charged once.
		if ends[0] != "acknowledged" || ends[1] != "acknowledged" {
			t.Fatalf("copies ended %v", ends)
		}
		wantChargedOnce(t, r, id)
	})
}

// failOnceStore fails the first Complete, before or after applying it.
type failOnceStore struct {
	idempotency.Store
	afterWrite bool
	mu         sync.Mutex
	failed     bool
}

func (s *failOnceStore) Complete(ctx context.Context, key, token string, result []byte, at, exp time.Time) (idempotency.Record, error) {
	s.mu.Lock()
	first := !s.failed
	s.failed = true
	s.mu.Unlock()
	if !first {
		return s.Store.Complete(ctx, key, token, result, at, exp)
	}
	if s.afterWrite {
		if _, err := s.Store.Complete(ctx, key, token, result, at, exp); err != nil {
			return idempotency.Record{}, err
		}
	}
	return idempotency.Record{}, errors.New("ProvisionedThroughputExceededException: injected")
}
