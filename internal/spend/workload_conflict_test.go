package spend

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestAddAliasIsNotTakenByAConflict(t *testing.T) {
	t.Parallel()
	// Given a workload, and a DynamoDB that cancels the next transaction
	// with TransactionConflict (a busy workload's records hold its item)
	f, db := newConflictFixture(t)
	f.workload(t, "w1", 1000, 0)
	db.cancelNext(1)

	// When an operator adds an alias nobody holds
	err := f.s.Workloads.AddAlias(context.Background(), "prov:proj/images", "w1")

	// Then the conflict is retried: the alias is added, never "taken"
	if err != nil {
		t.Fatalf("AddAlias = %v, want nil: a conflict is not another workload's alias", err)
	}
	if id, found, err := f.s.Workloads.resolveID(context.Background(), "prov:proj/images"); err != nil || !found || id != "w1" {
		t.Fatalf("alias resolves to %q, %v, %v; want w1", id, found, err)
	}
}

func TestCreateWorkloadIsNotTakenByAConflict(t *testing.T) {
	t.Parallel()
	// Given a DynamoDB that cancels the next transaction with
	// TransactionConflict
	f, db := newConflictFixture(t)
	db.cancelNext(1)

	// When a workload is created
	_, err := f.s.Workloads.CreateWorkload(context.Background(), NewWorkload{ID: "w1", Owner: "team-w1", RoutingKey: "rk-w1", Cap: 10})

	// Then it is created, not refused as an alias taken
	if err != nil {
		t.Fatalf("CreateWorkload = %v, want nil after a retried conflict", err)
	}
	if got := f.total(t, "w1"); got != 0 {
		t.Fatalf("total = %d, want 0", got)
	}
}

func TestPersistentConflictIsContendedNotTaken(t *testing.T) {
	t.Parallel()
	// Given a DynamoDB that cancels every transaction with TransactionConflict
	f, db := newConflictFixture(t)
	f.workload(t, "w1", 1000, 0)
	db.conflictAfter(0)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()

	// When an alias is added
	err := f.s.Workloads.AddAlias(ctx, "prov:proj/x", "w1")

	// Then the operator is told it was contended, not that it is taken
	if errors.Is(err, ErrAliasTaken) || !errors.Is(err, ErrContended) {
		t.Fatalf("AddAlias = %v, want ErrContended and not ErrAliasTaken", err)
	}
}
