package spend

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/testkit"
)

// conflicting injects TransactionConflict cancellations into the local
// DynamoDB's TransactWriteItems, as DynamoDB answers a transaction that
// meets a running one: after conflictAfter(n), the next n transactions
// pass and every later one is cancelled until heal is called. Nothing of
// a cancelled one is applied.
type conflicting struct {
	DB
	mu        sync.Mutex
	pass      int
	seen      int
	cancelled int
	healed    bool
}

func (c *conflicting) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.mu.Lock()
	conflict := !c.healed && c.seen >= c.pass
	c.seen++
	if conflict {
		c.cancelled++
	}
	c.mu.Unlock()
	if !conflict {
		return c.DB.TransactWriteItems(ctx, in, opts...)
	}
	return nil, testkit.Conflict(len(in.TransactItems), 0)
}

func (c *conflicting) conflictAfter(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pass, c.healed = c.seen+n, false
}

// cancelNext cancels the next n transactions, then heals.
func (c *conflicting) cancelNext(n int) {
	c.conflictAfter(0)
	go func() {
		for {
			c.mu.Lock()
			done := c.cancelled >= n
			c.mu.Unlock()
			if done {
				c.heal()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
}

func (c *conflicting) heal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.healed = true
}

// newConflictFixture is the spend fixture over a DB that injects
// conflicts once asked to.
func newConflictFixture(t *testing.T) (*fixture, *conflicting) {
	t.Helper()
	env := localaws.StartForTest(t)
	db := &conflicting{DB: env.DynamoDB, healed: true}
	f := &fixture{metrics: &recorder{counts: map[string]int64{}, durations: map[string]int{}},
		now: time.Date(2026, 11, 30, 3, 18, 0, 0, time.UTC)}
	var err error
	f.outbox, err = pager.NewOutbox(pager.OutboxConfig{DB: env.DynamoDB, Table: env.TableName("LedgerTable"),
		BaseBackoff: time.Second, MaxBackoff: time.Minute, Now: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	f.s, err = New(Config{DB: db, LedgerTable: env.TableName("LedgerTable"),
		WorkloadsTable: env.TableName("WorkloadsTable"), Pages: f.outbox,
		Webhook:    PathContract{ExpectedArrival: 5 * time.Second, MaxAge: maxAge, Interval: time.Minute},
		Poll:       PathContract{ExpectedArrival: 10 * time.Minute, MaxAge: maxAge, Interval: 15 * time.Minute},
		ReconOwner: "billing-oncall", ReconRoutingKey: "rk-recon", Metrics: f.metrics, Now: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	return f, db
}

func TestLedgerRetriesATransactionConflict(t *testing.T) {
	t.Parallel()
	// Given a workload, and a DynamoDB that cancels the next 3
	// transactions with TransactionConflict, then lets them through
	f, db := newConflictFixture(t)
	f.workload(t, "w1", 1000, 0)
	ctx := context.Background()
	db.cancelNext(3)

	// When a record is applied
	res, err := f.s.Ledger.Apply(ctx, usage("r1", "w1", 7))

	// Then the ledger retried it to success, and counted it once
	if err != nil || res.Outcome != Applied {
		t.Fatalf("Apply = %+v, %v; want Applied after the conflicts", res, err)
	}
	if got := f.total(t, "w1"); got != 7 {
		t.Fatalf("total = %d, want 7", got)
	}
}

func TestCrossingIsNeverAcknowledgedWithoutItsPause(t *testing.T) {
	t.Parallel()
	// Given a workload 1 unit under its cap, and a DynamoDB that lets the
	// record's ledger transaction through and then cancels every
	// transaction with TransactionConflict, the pause's included
	f, db := newConflictFixture(t)
	f.workload(t, "w1", 10, 0)
	ctx := context.Background()
	u := usage("r1", "w1", 11)
	db.conflictAfter(1)

	// When the record that crosses the cap is applied
	res, err := f.s.Ledger.Apply(ctx, u)

	// Then Apply does not report success without the pause: a conflict is
	// not another Apply's win, so the record must come back
	if err == nil && len(res.Decisions) == 0 {
		t.Fatalf("Apply = %s with no decision and no error: the crossing's pause was lost to a conflict", res.Outcome)
	}
	if errors.As(err, new(*types.TransactionCanceledException)) {
		t.Fatalf("err = %v: a persisting conflict reads as a cancellation (a failed condition) to callers", err)
	}
	if err != nil && !errors.Is(err, ErrContended) {
		t.Fatalf("err = %v, want ErrContended", err)
	}
	// and when the conflicts end and the record comes back, it pauses once
	db.heal()
	res, err = f.s.Ledger.Apply(ctx, u)
	if err != nil || res.Outcome != Duplicate || len(res.Decisions) != 1 || res.Decisions[0].Action != ActionPause {
		t.Fatalf("redelivery: %+v, %v; want a duplicate that pauses", res, err)
	}
	if got := f.total(t, "w1"); got != 11 {
		t.Fatalf("total = %d, want 11", got)
	}
	if pages := f.pages(t, "spend-cap:w1:"); len(pages) != 1 {
		t.Fatalf("pages = %d, want exactly one pause page", len(pages))
	}
}

func TestDisagreementIsNotLostToAConflict(t *testing.T) {
	t.Parallel()
	// Given a record in the ledger, and a DynamoDB that lets the next
	// transaction through (it fails its condition on the existing entry)
	// and cancels every later one with TransactionConflict
	f, db := newConflictFixture(t)
	f.workload(t, "w1", 1000, 0)
	ctx := context.Background()
	f.apply(t, usage("r1", "w1", 5))
	db.conflictAfter(1) // the ledger transaction meets the entry; the disagreement's conflicts

	// When the same record comes with other units (a disagreement)
	_, err := f.s.Ledger.Apply(ctx, usage("r1", "w1", 6))

	// Then the disagreement is not taken for recorded: Apply fails, and
	// the record comes back
	if err == nil {
		t.Fatal("Apply of a disagreeing record succeeded while its disagreement could not be recorded")
	}
	db.heal()
	res, err := f.s.Ledger.Apply(ctx, usage("r1", "w1", 6))
	if err != nil || res.Outcome != Disagreement {
		t.Fatalf("redelivery: %+v, %v; want the disagreement recorded", res, err)
	}
	if pages := f.pages(t, "spend-disagree:r1:"); len(pages) != 1 {
		t.Fatalf("disagreement pages = %d, want 1", len(pages))
	}
}

func TestConflictRetryStopsAtTheDeadline(t *testing.T) {
	t.Parallel()
	// Given a DynamoDB that cancels every transaction with TransactionConflict
	f, db := newConflictFixture(t)
	f.workload(t, "w1", 1000, 0)
	db.conflictAfter(0)

	// When a record is applied with 100 ms left
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := f.s.Ledger.Apply(ctx, usage("r1", "w1", 1))

	// Then the retry gives up at the deadline with ErrContended
	if !errors.Is(err, ErrContended) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrContended at the deadline", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Apply took %v after a 100 ms deadline", d)
	}
}
