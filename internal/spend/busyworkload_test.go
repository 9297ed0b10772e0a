package spend

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// heldWorkloads answers the first conflicts UpdateItem calls on the
// workloads table with TransactionConflictException, as DynamoDB answers
// a write to an item a running transaction holds.
type heldWorkloads struct {
	DB
	table     string
	mu        sync.Mutex
	conflicts int
}

func (d *heldWorkloads) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	d.mu.Lock()
	held := aws.ToString(in.TableName) == d.table && d.conflicts > 0
	if held {
		d.conflicts--
	}
	d.mu.Unlock()
	if held {
		return nil, &types.TransactionConflictException{Message: aws.String("Transaction is ongoing for the item")}
	}
	return d.DB.UpdateItem(ctx, in, opts...)
}

// TestAWorkloadUpdateWaitsOutARunningTransaction: a workload's item is
// in a transaction whenever a batch folds into it, and DynamoDB refuses a
// plain update of it meanwhile. Concurrent reconciler runs failed on it
// ("set next reconciliation ... TransactionConflictException", the SDK's
// three attempts spent); an update now retries a conflict with backoff.
func TestAWorkloadUpdateWaitsOutARunningTransaction(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	db := &heldWorkloads{DB: env.DynamoDB, table: env.TableName("WorkloadsTable")}
	f := newFixtureWith(t, env, db, nil)
	f.workload(t, "w-busy", 100, 0)
	ctx := context.Background()
	db.mu.Lock()
	db.conflicts = 5
	db.mu.Unlock()
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	if err := f.s.Ledger.setNextReconciliation(ctx, "w-busy", at); err != nil {
		t.Fatalf("set next reconciliation through 5 conflicts: %v", err)
	}
	if err := f.s.Caps.SetCap(ctx, "w-busy", 200); err != nil {
		t.Fatalf("set cap: %v", err)
	}
	w, err := f.s.Workloads.Get(ctx, "w-busy")
	if err != nil || !w.NextReconAt.Equal(at) || w.Cap != 200 {
		t.Fatalf("workload %+v, %v; want next reconciliation %s and cap 200", w, err, at)
	}
}
