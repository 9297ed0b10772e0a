package reconcile_test

import (
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
)

func TestSumsHistoryByDayAgainstStripesFace(t *testing.T) {
	// given Stripe's face 35 days into a source, with usage 20 days back
	// (5 and 3 on 2026-11-20) and yesterday (2), read through the adapter
	clock := providersim.NewManualClock(time.Date(2026, 12, 10, 3, 30, 0, 0, time.UTC))
	face := newStripeFace(t, clock, `{"stripe-test": {"provider": "stripe", "usage_source": "meters", "account": "acct_1",
		"start": "2026-11-01T00:00:00Z", "meters": {"api": {"provider_meter": "mtr_api", "aggregation": "sum"}}}}`)
	nov20 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	face.meter(t, "e1", "5", nov20.Add(10*time.Hour+5*time.Minute))
	face.meter(t, "e2", "3", nov20.Add(11*time.Hour+5*time.Minute))
	face.meter(t, "e3", "2", time.Date(2026, 12, 9, 10, 0, 0, 0, time.UTC))
	summaries := func() int { return face.sim.MeterCalls().Summaries }
	// when the reconciler runs twice
	first := face.run(t)
	clock.Advance(10 * time.Minute)
	before := summaries()
	second := face.run(t)
	// then the first read the day it had never read hourly, and the
	// second costs one page of days and one of hours
	if first.Calls != 3 || first.Reread != 1 || face.total(t) != 10 {
		t.Fatalf("first run: calls %d reread %d total %d, want 3, 1, 10", first.Calls, first.Reread, face.total(t))
	}
	if second.Calls != 2 || summaries()-before != 2 || second.Reread != 0 {
		t.Fatalf("second run: calls %d, summaries asked %d, reread %d; want 2, 2, 0", second.Calls, summaries()-before, second.Reread)
	}
	// when e2 is cancelled and an event lands at 12:00 of that day
	if err := face.sim.CancelMeterEvent("api_call", "e2"); err != nil {
		t.Fatal(err)
	}
	face.meter(t, "e4", "4", nov20.Add(12*time.Hour))
	clock.Advance(10 * time.Minute)
	third := face.run(t)
	// then the day's sum shows it, the day is read hourly, 11:00 keeps
	// its 3 and 12:00 counts 4
	if third.Reread != 1 || third.Calls != 3 || third.Downs != 1 || face.total(t) != 14 {
		t.Fatalf("third run: reread %d calls %d downs %d total %d, want 1, 3, 1, 14", third.Reread, third.Calls,
			third.Downs, face.total(t))
	}
}
