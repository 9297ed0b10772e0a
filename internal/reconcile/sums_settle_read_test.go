package reconcile_test

import (
	"testing"
	"time"
)

func TestSumsABucketFirstTouchedAfterItsSettleTimeIsReadBeforeItSettles(t *testing.T) {
	// given a webhook for an hour long past the source's settle horizon
	// (3h), which the provider shows with the same value
	f := newSumsFixtureOf(t, sumsConfig, time.Date(2026, 11, 30, 10, 30, 0, 0, time.UTC))
	f.workload(t, "wl-l", 1_000_000, "cus_l")
	f.webhook(t, "l1", "wl-l", 3000, hour0.Add(10*time.Minute))
	f.stripe.set("mtr_api", "cus_l", hour0, 3)
	// when the reconciler runs and settles it
	runs := f.run(t)
	// then it was read from the provider first: settled with no gap and
	// no page, and counted once
	if len(runs) == 0 || runs[1].Settled != 1 || runs[1].Gaps != 0 {
		t.Fatalf("run of stripe-test = %+v, want one bucket settled with no gap", runs)
	}
	if gaps := f.pages(t, "bucket-gap#"); len(gaps) != 0 {
		t.Fatalf("gap pages = %d (%s), want none", len(gaps), gaps[0].Event.Payload.Summary)
	}
	if got := f.total(t, "wl-l"); got != 3000 {
		t.Fatalf("total = %d, want 3000", got)
	}
}
