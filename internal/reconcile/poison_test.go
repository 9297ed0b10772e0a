package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestPoisonRecordIsQuarantinedAndTheCursorAdvances(t *testing.T) {
	t.Parallel()
	// Given a workload with cap 1,000 and an export in which a credit with
	// negative units sits among 1,200 units of ordinary usage
	f := newFixture(t, options{})
	f.workload(t, "w1", 1000)
	occurred := t0.Add(-8 * time.Minute)
	f.usage(t, "ok-1", "w1", 600, occurred, published)
	f.usage(t, "credit-1", "w1", -50, occurred.Add(time.Second), published)
	f.usage(t, "ok-2", "w1", 600, occurred.Add(2*time.Second), published)

	// When the reconciler runs, and runs again over the overlap
	first, err := f.rec.Run(context.Background(), "")
	if err != nil {
		t.Fatalf("first run: %v (one refused record must not fail the run)", err)
	}
	f.clock.Advance(5 * time.Minute)
	second := f.run(t)

	// Then both runs succeed, the cursor advances past the window, and the
	// ordinary usage is folded and trips the cap
	if first.Outcome != "ok" || first.Missed != 2 || first.Quarantined != 1 {
		t.Fatalf("first run = %+v", first)
	}
	if c := f.cursor(t); !c.Position.Equal(second.Until) {
		t.Fatalf("cursor = %s, want %s", c.Position, second.Until)
	}
	if got := f.total(t, "w1"); got != 1200 {
		t.Fatalf("total = %d, want 1200", got)
	}
	if caps := f.delivered("spend_cap"); len(caps) != 1 {
		t.Fatalf("cap pages = %d, want 1", len(caps))
	}
	// And the refused record is stored with its reason
	q, err := f.spend.Ledger.Quarantined(context.Background(), "credit-1")
	if err != nil {
		t.Fatal(err)
	}
	if q.Units != -50 || q.WorkloadRef != "w1" || !strings.Contains(q.Reason, "negative") || q.Path != "poll" {
		t.Fatalf("quarantined = %+v", q)
	}
	// And paged once to the reconciliation owner, though two runs read it
	pages := f.delivered("spend_quarantine")
	if len(pages) != 1 || pages[0].RoutingKey != reconRoute {
		t.Fatalf("quarantine pages = %+v, want 1 to %s", pages, reconRoute)
	}
	if s := pages[0].Payload.Summary; !strings.Contains(s, "record=credit-1") || !strings.Contains(s, "units=-50") {
		t.Fatalf("summary = %q", s)
	}
	if second.Quarantined != 1 {
		t.Fatalf("second run quarantined = %d, want 1 (seen again through the overlap)", second.Quarantined)
	}
}
