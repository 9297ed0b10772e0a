package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/reconcile"
)

// newStore is a reconciler store on a local AWS of its own, with the
// local AWS and the ledger table's name.
func newStore(t testing.TB) (*localaws.Env, string, *reconcile.Store) {
	t.Helper()
	env := localaws.StartForTest(t)
	table := env.TableName("LedgerTable")
	store, err := reconcile.NewStore(reconcile.StoreConfig{DB: env.DynamoDB, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	return env, table, store
}

// TestARunRecordOfAnEarlierBuildReadsItsReattributedRecords: builds before
// the name "reattributed" stored the deferred records a run attributed
// once their reference resolved as "redriven". Their run records live on
// after the upgrade, and read as this build's.
func TestARunRecordOfAnEarlierBuildReadsItsReattributedRecords(t *testing.T) {
	t.Parallel()
	env, table, store := newStore(t)
	ctx := context.Background()
	// Given a run record an earlier build wrote
	older := t0.Add(-time.Hour)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"pk": s("RECON#run"), "sk": s("RUN#" + ddb.Stamp(older) + "#run-earlier"),
		"run_id": s("run-earlier"), "started_at": s(ddb.Stamp(older)), "finished_at": s(ddb.Stamp(older)),
		"outcome": s("ok"), "records": n("3"), "missed": n("1"), "matched": n("2"), "repeats": n("0"),
		"disagreements": n("0"), "deferred": n("0"), "unseen": n("0"), "quarantined": n("0"),
		"redriven": n("2"), "unresolved_paged": n("0"), "held": n("0"), "unresolved_units": n("0"),
		"reconciled": n("1"), "duration_ms": n("12")}}); err != nil {
		t.Fatal(err)
	}
	// and one this build writes
	if err := store.PutRun(ctx, reconcile.Run{RunID: "run-now", StartedAt: t0, FinishedAt: t0, Outcome: "ok",
		Reattributed: 3}); err != nil {
		t.Fatal(err)
	}
	// when the runs are read
	runs, err := store.Runs(ctx, 10)
	if err != nil || len(runs) != 2 {
		t.Fatalf("Runs = %+v, %v", runs, err)
	}
	// then each counts its reattributed records, newest first
	if runs[0].RunID != "run-now" || runs[0].Reattributed != 3 {
		t.Errorf("this build's run = %+v, want 3 reattributed", runs[0])
	}
	if runs[1].RunID != "run-earlier" || runs[1].Reattributed != 2 || runs[1].Missed != 1 {
		t.Errorf("the earlier build's run = %+v, want 2 reattributed", runs[1])
	}
	// and this build stores only the new name
	out, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table),
		Key: ddb.Key("RECON#run", "RUN#"+ddb.Stamp(t0)+"#run-now"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Item["redriven"]; ok || out.Item["reattributed"] == nil {
		t.Errorf("run stored %v, want reattributed and no redriven", out.Item)
	}
}
