package reconcile_test

import (
	"testing"
	"time"
)

func TestSumsRevisionsThatCancelOutWithinADayAreFound(t *testing.T) {
	// given a workload whose history the ledger read hourly: 5 units at
	// 2026-11-20 10:00
	f := newSumsFixtureOf(t, historyConfig, historyNow)
	f.workload(t, "wl-o", 1_000_000, "cus_o")
	f.stripe.set("mtr_api", "cus_o", nov20.Add(10*time.Hour), 5)
	if first := f.stripeRun(t); first.Reread != 1 || f.total(t, "wl-o") != 5000 {
		t.Fatalf("first run: reread %d total %d, want 1 and 5000", first.Reread, f.total(t, "wl-o"))
	}
	// when Stripe cancels the event and the producer reports it again at
	// 14:00 the same day: the day's total is unchanged
	f.stripe.set("mtr_api", "cus_o", nov20.Add(10*time.Hour), 0)
	f.stripe.set("mtr_api", "cus_o", nov20.Add(14*time.Hour), 5)
	// then within the bound (one sweep per 4 days of history: 9 sweeps
	// for the 33 days read by day) both hours are read again: 14:00 is
	// counted, and 10:00's downward revision is recorded and paged once
	var calls []int
	for range 9 {
		f.now = f.now.Add(5 * time.Minute)
		calls = append(calls, f.stripeRun(t).Calls)
	}
	if got := f.total(t, "wl-o"); got != 10_000 {
		t.Fatalf("total = %d, want 10000 (10:00's 5 kept, 14:00's 5); calls a run %v", got, calls)
	}
	if downs := f.pages(t, "bucket-down#"); len(downs) != 1 {
		t.Fatalf("downward revision pages = %d, want 1", len(downs))
	}
	// and only the run whose slice of the history holds a day with usage
	// paid for it: one more call
	extra := 0
	for _, c := range calls {
		extra += c - 2
	}
	if extra != 1 {
		t.Fatalf("calls a run = %v, want 2 each and one run of 3", calls)
	}
}
