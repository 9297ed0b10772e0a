package spend

import (
	"context"
	"testing"
	"time"
)

func TestExplainEventFindsDeferredAndQuarantinedByEventID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	// given a webhook record deferred under an unknown reference, and one
	// the ledger quarantined
	f.apply(t, usage("ur_def", "nobody", 5))
	q := usage("ur_quar", "nobody", 7)
	if _, _, err := f.s.Ledger.Quarantine(ctx, q, "units: must be positive"); err != nil {
		t.Fatal(err)
	}

	// when each is explained by its webhook event ID, then it is found
	x, err := f.s.Explainer.ExplainEvent(ctx, "evt_ur_def")
	if err != nil || x.Deferred == nil || x.Deferred.RecordID != "ur_def" {
		t.Errorf("ExplainEvent(evt_ur_def) = %+v, %v; want the deferred record", x, err)
	}
	x, err = f.s.Explainer.ExplainEvent(ctx, "evt_ur_quar")
	if err != nil || x.Quarantined == nil || x.Quarantined.RecordID != "ur_quar" {
		t.Errorf("ExplainEvent(evt_ur_quar) = %+v, %v; want the quarantined record", x, err)
	}
}

func TestExplainEventTellsWhatReconciliationDidPastTheDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.apply(t, usage("ur_paged", "nobody", 5))
	f.apply(t, usage("ur_held", "nobody", 6))
	// given the deadline passed: one record was paged, the other held
	f.now = f.now.Add(maxAge + time.Minute)
	if err := f.s.Recon.MarkUnresolvedPaged(ctx, "ur_paged", "spend-unresolved:billing-oncall:x"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Recon.HoldDeferred(ctx, "ur_held", "workload holds"); err != nil {
		t.Fatal(err)
	}

	// when explained, then each says what happened and when
	x, err := f.s.Explainer.ExplainEvent(ctx, "evt_ur_paged")
	if err != nil || x.DeferredState == nil || x.DeferredState.PagedKey != "spend-unresolved:billing-oncall:x" || !x.DeferredState.PagedAt.Equal(f.now) {
		t.Errorf("paged record state = %+v, %v", x.DeferredState, err)
	}
	x, err = f.s.Explainer.ExplainEvent(ctx, "ur_held")
	if err != nil || x.DeferredState == nil || !x.DeferredState.HeldAt.Equal(f.now) || x.DeferredState.HoldReason != "workload holds" {
		t.Errorf("held record state = %+v, %v", x.DeferredState, err)
	}
}
