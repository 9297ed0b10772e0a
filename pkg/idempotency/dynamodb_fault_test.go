package idempotency_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/idempotency/idempotencytest"
)

// Drills: the idempotency registry on DynamoDB under the local AWS fault
// layer. A write whose first attempt commits and answers 500 (or drops
// the connection) is retried by the SDK; the retry's condition then fails
// on the write the first attempt made, which must be taken for the
// caller's own claim, never for another holder's or a lost one.

// faultDrill is a registry on the local DynamoDB whose next write of op,
// once armed, commits on its first attempt and answers ambiguously.
type faultDrill struct {
	env   *localaws.Env
	reg   *idempotency.Registry
	clock *idempotencytest.Clock
	armed atomic.Bool
}

func newFaultDrill(t *testing.T, op string) *faultDrill {
	t.Helper()
	d := &faultDrill{clock: idempotencytest.NewClock(time.Now())}
	d.env = localaws.StartFaultsForTest(t, localaws.Faults{Seed: 43, Rates: map[string]float64{localaws.FaultDDBAmbiguous: 1},
		Match: func(r localaws.FaultRequest) bool { return d.armed.Load() && r.Operation == op && r.Attempt == 1 }})
	st, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: d.env.DynamoDB, Table: d.env.TableName("IdempotencyTable")})
	if err != nil {
		t.Fatal(err)
	}
	d.reg, err = idempotency.New(idempotency.Config{Store: st, Namespace: "payments", InProgressTimeout: 10 * time.Second, Now: d.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// injected checks that exactly one ambiguous write was injected.
func (d *faultDrill) injected(t *testing.T) {
	t.Helper()
	if n := d.env.Faults()[localaws.FaultDDBAmbiguous]; n != 1 {
		t.Fatalf("ambiguous writes injected = %d, want 1", n)
	}
}

const faultHash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func (d *faultDrill) claim(t *testing.T, key string) idempotency.Claim {
	t.Helper()
	c, err := d.reg.Claim(context.Background(), key, faultHash)
	if err != nil {
		t.Fatalf("claim %s: %v", key, err)
	}
	return c
}

func TestClaimAmbiguousPutIsOwnClaim(t *testing.T) {
	// Given the claim's PutItem commits on its first attempt and its
	// answer is lost,
	d := newFaultDrill(t, "PutItem")
	d.armed.Store(true)
	// when the SDK retries it and the retry fails its condition,
	c := d.claim(t, "stripe:evt_ambiguous")
	d.injected(t)
	// then the claim is the caller's, not "in progress by another",
	if c.Status != idempotency.StatusClaimed {
		t.Fatalf("claim status %v, want StatusClaimed", c.Status)
	}
	// and its token completes it.
	if err := d.reg.Complete(context.Background(), "stripe:evt_ambiguous", c.Token, []byte("ok")); err != nil {
		t.Fatalf("complete with the recognised token: %v", err)
	}
}

func TestTakeoverAmbiguousPutIsOwnClaim(t *testing.T) {
	// Given a claim whose holder died, past its in-progress window,
	d := newFaultDrill(t, "PutItem")
	if c := d.claim(t, "stripe:evt_stale"); c.Status != idempotency.StatusClaimed {
		t.Fatalf("first claim %v", c.Status)
	}
	d.clock.Advance(11 * time.Second)
	// when the take-over PutItem commits on its first attempt, its answer
	// is lost and the SDK's retry fails its condition,
	d.armed.Store(true)
	c := d.claim(t, "stripe:evt_stale")
	// (The claim's first put, conditioned on a fresh key, meets the fault
	// too but fails its condition; the take-over put after it commits.)
	if n := d.env.Faults()[localaws.FaultDDBAmbiguous]; n != 2 {
		t.Fatalf("ambiguous writes injected = %d, want 2", n)
	}
	// then the take-over is the caller's, numbered as the second attempt.
	if c.Status != idempotency.StatusClaimed || !c.Takeover || c.Attempt != 2 {
		t.Fatalf("take-over = status %v takeover %v attempt %d, want StatusClaimed, takeover, attempt 2", c.Status, c.Takeover, c.Attempt)
	}
	if err := d.reg.Complete(context.Background(), "stripe:evt_stale", c.Token, nil); err != nil {
		t.Fatalf("complete the take-over: %v", err)
	}
}

func TestCompleteAmbiguousUpdateIsOwnCompletion(t *testing.T) {
	// Given a held claim, and a Complete whose UpdateItem commits on its
	// first attempt and whose answer is lost,
	d := newFaultDrill(t, "UpdateItem")
	c := d.claim(t, "stripe:evt_complete")
	d.armed.Store(true)
	// when the SDK retries it and the retry fails its condition (the
	// record is already COMPLETED under this token),
	err := d.reg.Complete(context.Background(), "stripe:evt_complete", c.Token, []byte("charged"))
	d.injected(t)
	// then the completion is the caller's, not a lost claim.
	if err != nil {
		t.Fatalf("complete = %v, want nil", err)
	}
	d.armed.Store(false)
	if again := d.claim(t, "stripe:evt_complete"); again.Status != idempotency.StatusAlreadyCompleted || string(again.Result) != "charged" {
		t.Errorf("after complete: %v %q, want StatusAlreadyCompleted charged", again.Status, again.Result)
	}
}

func TestReleaseAmbiguousUpdateHolds(t *testing.T) {
	// Given a held claim, and a Release whose UpdateItem commits on its
	// first attempt and whose answer is lost,
	d := newFaultDrill(t, "UpdateItem")
	c := d.claim(t, "stripe:evt_release")
	d.armed.Store(true)
	// when the SDK retries it, then it succeeds and the key is claimable.
	if err := d.reg.Release(context.Background(), "stripe:evt_release", c.Token, d.clock.Now()); err != nil {
		t.Fatalf("release = %v, want nil", err)
	}
	d.injected(t)
	d.armed.Store(false)
	d.clock.Advance(time.Millisecond)
	if again := d.claim(t, "stripe:evt_release"); again.Status != idempotency.StatusClaimed || again.Attempt != 2 {
		t.Errorf("claim after release: %v attempt %d, want StatusClaimed attempt 2", again.Status, again.Attempt)
	}
}
