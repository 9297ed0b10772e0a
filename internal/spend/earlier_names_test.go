package spend

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
)

// Earlier builds spelled some words otherwise in what they stored: a
// marker the export still lacked was "flagged" (FLAGGED#<shard>,
// flagged_at), a reconciliation record counted "applied" for the records
// the webhook path missed and "redriven" for the deferred records
// attributed once their reference resolved, and a workload kept its
// owner's routing key as "route". Their items live on after the upgrade,
// and read as this build's.

// putRaw writes item to a table as it is, the way an earlier build wrote
// it.
func (f *fixture) putRaw(t *testing.T, table string, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := f.s.Recon.db.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// getRaw reads an item of a table as it is stored.
func (f *fixture) getRaw(t *testing.T, table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := f.s.Recon.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(n string) types.AttributeValue { return &types.AttributeValueMemberN{Value: n} }

func TestAMarkerFlaggedByAnEarlierBuildIsConfirmedAsUnseen(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.workload(t, "w-flagged", 1000, 0)
	ctx := context.Background()
	// Given a webhook record whose marker an earlier build flagged
	f.apply(t, usage("rec-flagged", "w-flagged", 5))
	shard := markerShard("rec-flagged")
	f.putRaw(t, f.s.Recon.ledger, map[string]types.AttributeValue{
		"pk": str(recordPK("rec-flagged")), "sk": str(skUnconfirmed),
		"gsi1pk": str("FLAGGED#" + shard), "gsi1sk": str(ddb.Stamp(observed) + "#rec-flagged"),
		"record_id": str("rec-flagged"), "workload_id": str("w-flagged"), "workload_ref": str("w-flagged"),
		"units": num("5"), "event_id": str("evt_rec-flagged"), "status": str("flagged"),
		"accepted_at": str(ddb.Stamp(observed)), "flagged_at": str(ddb.Stamp(f.now)),
		"dedup_key": str("spend-unseen:rec-flagged")})
	// when the export shows the record at last
	before, err := f.s.Recon.Confirm(ctx, "rec-flagged")
	// then the marker was unseen, and is confirmed now
	if err != nil || before != MarkerUnseen {
		t.Fatalf("Confirm = %q, %v; want %q", before, err, MarkerUnseen)
	}
	item := f.getRaw(t, f.s.Recon.ledger, markerKey("rec-flagged"))
	if stringAttr(item, "status") != MarkerConfirmed || stringAttr(item, "gsi1pk") != confirmedPK(shard) {
		t.Fatalf("marker = %v, want confirmed", item)
	}
	// and a marker this build marks unseen is stored under the new name
	f.apply(t, usage("rec-unseen", "w-flagged", 5))
	ok, err := f.s.Recon.MarkUnseen(ctx, UnconfirmedEntry{RecordID: "rec-unseen", WorkloadID: "w-flagged", Units: 5}, time.Minute)
	if err != nil || !ok {
		t.Fatalf("MarkUnseen = %v, %v", ok, err)
	}
	item = f.getRaw(t, f.s.Recon.ledger, markerKey("rec-unseen"))
	if stringAttr(item, "status") != MarkerUnseen || stringAttr(item, "gsi1pk") != unseenPK(markerShard("rec-unseen")) ||
		stringAttr(item, "unseen_at") == "" {
		t.Fatalf("marker = %v, want unseen", item)
	}
	if before, err := f.s.Recon.Confirm(ctx, "rec-unseen"); err != nil || before != MarkerUnseen {
		t.Fatalf("Confirm = %q, %v; want %q", before, err, MarkerUnseen)
	}
}

func TestAReconRunOfAnEarlierBuildReadsAsMissedAndReattributed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.workload(t, "w-runs", 1000, 0)
	ctx := context.Background()
	// Given a reconciliation record an earlier build wrote
	older := f.now.Add(-time.Hour)
	f.putRaw(t, f.s.Recon.ledger, map[string]types.AttributeValue{
		"pk": str(WorkloadPK("w-runs")), "sk": str(reconRunSK(older)),
		"workload_id": str("w-runs"), "started_at": str(ddb.Stamp(older)), "finished_at": str(ddb.Stamp(older)),
		"records": num("5"), "applied": num("3"), "duplicates": num("2"), "disagreements": num("0"),
		"deferred": num("0"), "matched": num("2"), "redriven": num("1")})
	// and one this build writes
	if err := f.s.Recon.PutReconRun(ctx, ReconRun{WorkloadID: "w-runs", StartedAt: f.now, FinishedAt: f.now,
		Records: 4, Missed: 4, Reattributed: 2}); err != nil {
		t.Fatal(err)
	}
	// when they are read
	runs, err := f.s.Recon.ReconRuns(ctx, "w-runs", 10)
	if err != nil || len(runs) != 2 {
		t.Fatalf("ReconRuns = %+v, %v", runs, err)
	}
	// then each counts its missed and reattributed records, newest first
	if runs[0].Missed != 4 || runs[0].Reattributed != 2 {
		t.Errorf("this build's run = %+v, want missed 4, reattributed 2", runs[0])
	}
	if runs[1].Missed != 3 || runs[1].Reattributed != 1 {
		t.Errorf("the earlier build's run = %+v, want missed 3, reattributed 1", runs[1])
	}
	// and this build stores only the new names
	item := f.getRaw(t, f.s.Recon.ledger, ddb.Key(WorkloadPK("w-runs"), reconRunSK(f.now)))
	if _, ok := item["applied"]; ok {
		t.Errorf("run stored %v, want no applied", item)
	}
	if _, ok := item["redriven"]; ok {
		t.Errorf("run stored %v, want no redriven", item)
	}
}

func TestAWorkloadOfAnEarlierBuildPagesOnItsRoutingKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	// Given a workload whose item an earlier build wrote, its routing key
	// under "route"
	f.workload(t, "w-route", 10, 0)
	item := f.getRaw(t, f.s.Workloads.workloads, workloadKey("w-route"))
	if item["routing_key"] == nil || item["route"] != nil {
		t.Fatalf("workload stored %v, want routing_key and no route", item)
	}
	item["route"] = item["routing_key"]
	delete(item, "routing_key")
	f.putRaw(t, f.s.Workloads.workloads, item)
	// when it is read
	w, err := f.s.Workloads.Get(ctx, "w-route")
	// then it has its routing key
	if err != nil || w.RoutingKey != "rk-w-route" {
		t.Fatalf("Get = %+v, %v; want routing key rk-w-route", w, err)
	}
	// and when a record takes it over its cap, its owner is paged on it
	f.apply(t, usage("rec-route", "w-route", 11))
	pages := f.pages(t, "spend-cap:w-route:")
	if len(pages) != 1 || pages[0].Event.RoutingKey != "rk-w-route" {
		t.Fatalf("pages = %+v, want one on rk-w-route", pages)
	}
}
