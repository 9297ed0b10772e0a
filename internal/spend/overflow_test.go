package spend

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestUnitsAboveTwoToThe53AreRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.workload(t, "w1", 1000, 0)
	for _, tc := range []struct {
		name    string
		units   int64
		refused bool
	}{
		{name: "exactly 2^53", units: MaxUnits},
		{name: "2^53+1", units: MaxUnits + 1, refused: true},
		{name: "MaxInt64", units: 1<<63 - 1, refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Given a fresh record with the units, when it is applied
			u := usage("big-"+tc.name, "w1", tc.units)
			_, err := f.s.Ledger.Apply(context.Background(), u)
			if tc.refused {
				// then the ledger refuses it as invalid, for good
				if !errors.Is(err, ErrInvalidUsage) || !IsRefused(err) || !strings.Contains(err.Error(), "2^53") {
					t.Fatalf("err = %v, want ErrInvalidUsage naming 2^53", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
		})
	}
}

func TestTotalOverflowIsATypedErrorAndChangesNothing(t *testing.T) {
	t.Parallel()
	// Given a workload whose total is 10 below MaxTotal
	f := newFixture(t)
	f.workload(t, "w1", MaxTotal, 0)
	f.apply(t, usage("fill-1", "w1", MaxTotal-10))

	// When a record of 11 units would carry it past MaxTotal
	_, err := f.s.Ledger.Apply(context.Background(), usage("over-1", "w1", 11))

	// Then Apply refuses it with an *OverflowError naming both numbers
	var oe *OverflowError
	if !errors.As(err, &oe) || !errors.Is(err, ErrTotalOverflow) || !IsRefused(err) {
		t.Fatalf("err = %v, want *OverflowError", err)
	}
	if oe.Total != MaxTotal-10 || oe.Units != 11 || oe.WorkloadID != "w1" || oe.RecordID != "over-1" {
		t.Fatalf("overflow error = %+v", oe)
	}
	// and neither the total nor the ledger changed: the workload still
	// decodes, and the record has no entry
	if got := f.total(t, "w1"); got != MaxTotal-10 {
		t.Fatalf("total = %d, want %d", got, MaxTotal-10)
	}
	if _, err := f.s.Ledger.Entry(context.Background(), "over-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("entry of refused record: %v, want ErrNotFound", err)
	}
	// And a record that lands exactly on MaxTotal is still applied
	if res := f.apply(t, usage("last-1", "w1", 10)); res.Total != MaxTotal {
		t.Fatalf("total = %d, want %d", res.Total, MaxTotal)
	}
}

func TestQuarantineStoresOncePagesOnceAndExplains(t *testing.T) {
	t.Parallel()
	// Given a refused record
	f := newFixture(t)
	ctx := context.Background()
	u := usage("neg-1", "w9", -3)
	_, err := f.s.Ledger.Apply(ctx, u)
	if !IsRefused(err) {
		t.Fatalf("apply: %v, want refused", err)
	}

	// When it is quarantined twice (a redelivery, an overlapping poll)
	q1, first1, err1 := f.s.Ledger.Quarantine(ctx, u, err.Error())
	q2, first2, err2 := f.s.Ledger.Quarantine(ctx, u, err.Error())

	// Then it is stored once with its reason, and one page is enqueued for
	// the reconciliation owner
	if err1 != nil || err2 != nil || !first1 || first2 {
		t.Fatalf("quarantine: first=%v,%v err=%v,%v", first1, first2, err1, err2)
	}
	if q2.Units != -3 || q2.Reason != q1.Reason || !strings.Contains(q2.Reason, "negative") || q2.Owner != "billing-oncall" {
		t.Fatalf("stored = %+v", q2)
	}
	pages := f.pages(t, QuarantineDedupKey("neg-1"))
	if len(pages) != 1 || pages[0].Event.RoutingKey != "rk-recon" {
		t.Fatalf("pages = %+v", pages)
	}
	if f.metrics.count(MetricQuarantined) != 1 {
		t.Fatalf("quarantine metric = %d, want 1", f.metrics.count(MetricQuarantined))
	}
	// And explain finds it by record ID, and the list shows it
	x, err := f.s.Explainer.ExplainEvent(ctx, "neg-1")
	if err != nil || x.Quarantined == nil || x.Quarantined.Reason != q1.Reason {
		t.Fatalf("explain = %+v, %v", x, err)
	}
	list, err := f.s.Ledger.QuarantinedRecords(ctx, 10)
	if err != nil || len(list) != 1 || list[0].RecordID != "neg-1" {
		t.Fatalf("list = %+v, %v", list, err)
	}
}
