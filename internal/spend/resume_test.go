package spend

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestResumeOverTheCapIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	id := "w-resume-over"
	f.workload(t, id, 1000, 0)
	// given a workload paused at 1,290 of 1,000
	f.apply(t, usage("rec-ro1", id, 1290))

	// when the operator resumes it without raising the cap
	_, err := f.s.Caps.Resume(ctx, id)

	// then the resume is refused with the total and the cap, and admission
	// still refuses
	var over *OverCapError
	if !errors.As(err, &over) || !errors.Is(err, ErrOverCap) || over.Total != 1290 || over.Cap != 1000 {
		t.Fatalf("Resume over the cap = %v, want an *OverCapError 1290 of 1000", err)
	}
	a, err := f.s.Caps.Admission(ctx, id)
	if err != nil || a.Allowed || a.Reason != ReasonSpendCap {
		t.Errorf("admission after a refused resume = %+v, %v", a, err)
	}
}

func TestSetCapBelowTheTotalPausesAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	id := "w-setcap-below"
	f.workload(t, id, 1000, 0)
	// given an active workload at 900 of 1,000
	f.apply(t, usage("rec-sc1", id, 900))

	// when the cap is lowered below the total
	if err := f.s.Caps.SetCap(ctx, id, 800); err != nil {
		t.Fatal(err)
	}

	// then admission refuses at once, the workload is paused, and it paged
	a, err := f.s.Caps.Admission(ctx, id)
	if err != nil || a.Allowed || a.Reason != ReasonSpendCap || a.Status != string(StatusPaused) {
		t.Errorf("admission after set-cap below the total = %+v, %v", a, err)
	}
	if pages := f.pages(t, DedupKey(id, ActionPause, 0, 0)); len(pages) != 1 {
		t.Errorf("pause pages = %d, want 1", len(pages))
	}
}

func TestAdmissionRefusesOverTheCapWhenStatusIsStale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	id := "w-stale"
	f.workload(t, id, 1000, 0)
	f.apply(t, usage("rec-st1", id, 1200))
	// given a workload over its cap whose status says active (as a write
	// that lost a race would leave it)
	_, err := f.s.Workloads.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(f.s.Workloads.workloads),
		Key: workloadKey(id), UpdateExpression: aws.String("SET #s = :a"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":a": &types.AttributeValueMemberS{Value: "active"}}})
	if err != nil {
		t.Fatal(err)
	}
	// when admission is asked, then it refuses on the total
	a, err := f.s.Caps.Admission(ctx, id)
	if err != nil || a.Allowed || a.Reason != ReasonSpendCap {
		t.Errorf("admission over the cap with a stale status = %+v, %v", a, err)
	}
}

func TestForceResumeIsRecordedAndUndoneByTheTotal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	id := "w-force"
	f.workload(t, id, 1000, 0)
	if _, err := f.s.Caps.ForceResume(ctx, id, "ana", "drain"); !errors.Is(err, ErrNotPaused) {
		t.Fatalf("ForceResume of an active workload = %v, want ErrNotPaused", err)
	}
	f.apply(t, usage("rec-f1", id, 1290))
	for _, who := range [][2]string{{"", "drain"}, {"ana", " "}} {
		if _, err := f.s.Caps.ForceResume(ctx, id, who[0], who[1]); !errors.Is(err, ErrInvalidWorkload) {
			t.Errorf("ForceResume(%q, %q) = %v, want ErrInvalidWorkload", who[0], who[1], err)
		}
	}

	// when the operator resumes it on purpose over its cap
	w, err := f.s.Caps.ForceResume(ctx, id, "ana", "drain")
	if err != nil {
		t.Fatal(err)
	}
	// then who, why and when are recorded, and it is admitted in that epoch
	if w.Status != StatusActive || w.CapEpoch != 1 || w.Override != (Override{By: "ana", Reason: "drain", At: f.now, Epoch: 1}) {
		t.Fatalf("after a forced resume: %+v", w)
	}
	if a, _ := f.s.Caps.Admission(ctx, id); !a.Allowed {
		t.Fatalf("admission after a forced resume = %+v", a)
	}
	// and a cap check on the total pauses it again, with a page in epoch 1
	ds, err := f.s.Caps.Recheck(ctx, w)
	if err != nil || len(ds) != 1 || ds[0].Action != ActionPause || ds[0].DedupKey != DedupKey(id, ActionPause, 1, 0) ||
		ds[0].RecordID != "rec-f1" || ds[0].EventID != "evt_rec-f1" {
		t.Fatalf("Recheck = %+v, %v", ds, err)
	}
	if a, _ := f.s.Caps.Admission(ctx, id); a.Allowed {
		t.Fatalf("admission after the recheck = %+v", a)
	}
	// and a workload under its cap needs no action
	f.workload(t, "w-fine", 1000, 0)
	fine, _ := f.s.Workloads.Get(ctx, "w-fine")
	if ds, err := f.s.Caps.Recheck(ctx, fine); err != nil || len(ds) != 0 {
		t.Errorf("Recheck under the cap = %+v, %v", ds, err)
	}
}
