package lab

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// measuredSweep is a sweep of 1,000 workloads over 2 runs that each
// finished: 10 near cap, 90 active and 83 quiet read a run, 2 calls a
// read, 1 write and 10 read units a read.
var measuredSweep = SweepFigures{Provider: "stripe", Workloads: 1000, Runs: 2,
	ReadsByTier: map[string]int{"near_cap": 20, "active": 180, "quiet": 166}, Calls: 732, Seconds: 90, RateLimit: 250,
	WriteUnits: 366, ReadUnits: 3660, Interval: 5 * time.Minute, Budget: 150 * time.Second, QuietEvery: 12}

func TestSumsPlanScalesAMeasuredSweepToAFleet(t *testing.T) {
	// when the sweep is worked out for 10,000 workloads on Stripe
	p, err := SumsPlanFor(measuredSweep, 10_000, StripeLimits, DefaultPrices())
	if err != nil {
		t.Fatal(err)
	}
	// then a sweep is 3,660 calls: 200 for the 100 near-cap workloads
	// (8 s at 25/s) and 3,460 for the rest (138.4 s), within the 142 s of
	// the 150 s budget they leave, so one run a sweep of 146.4 s
	if p.CallsPerSweep != 3660 || p.RunsPerSweep != 1 || p.Behind || math.Abs(p.SecondsPerRun-146.4) > 1e-9 {
		t.Fatalf("calls %v, runs %d, behind %v, seconds %v; want 3660, 1, false, 146.4", p.CallsPerSweep, p.RunsPerSweep, p.Behind, p.SecondsPerRun)
	}
	if p.NearCapUnread != 5*time.Minute || p.ActiveUnread != 5*time.Minute || p.QuietUnread != time.Hour {
		t.Fatalf("unread %s, %s, %s; want 5m, 5m and 1h", p.NearCapUnread, p.ActiveUnread, p.QuietUnread)
	}
	// 1,830 reads a run, at 1 write and 10 read units each
	if math.Abs(p.WriteUnitsPerRun-1830) > 1e-6 || math.Abs(p.ReadUnitsPerRun-18300) > 1e-6 {
		t.Fatalf("units a run %v write, %v read; want 1830 and 18300", p.WriteUnitsPerRun, p.ReadUnitsPerRun)
	}
	// 288 runs a day of 146.4 s at 256 MB, and their units, on-demand
	want := 288*0.20/1e6 + 288*146.4*0.25*0.0000133334 + 288*(1830*0.625+18300*0.125)/1e6
	if math.Abs(p.CostPerDay.Total-want) > 1e-9 {
		t.Fatalf("cost a day %v, want %v", p.CostPerDay.Total, want)
	}
	var out bytes.Buffer
	p.Write(&out)
	for _, s := range []string{"10,000 workloads on stripe", "calls a sweep    3,660; the sweep fits one run", "quiet 1h0m0s"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("plan does not say %q:\n%s", s, out.String())
		}
	}
}

func TestSumsPlanAtOpenAIsPaceFallsBehind(t *testing.T) {
	// when the same sweep is worked out at 5 calls/s
	p, err := SumsPlanFor(measuredSweep, 10_000, OpenAILimits, DefaultPrices())
	if err != nil {
		t.Fatal(err)
	}
	// then the near-cap workloads take 40 s of each run, the rest 692 s,
	// which the 110 s left take 7 runs to read: behind, with the active
	// waiting up to 13 runs and the quiet up to 90
	if p.RunsPerSweep != 7 || !p.Behind || p.SecondsPerRun != 150 {
		t.Fatalf("runs %d, behind %v, seconds %v; want 7, true, 150", p.RunsPerSweep, p.Behind, p.SecondsPerRun)
	}
	if p.NearCapUnread != 5*time.Minute || p.ActiveUnread != 65*time.Minute || p.QuietUnread != 450*time.Minute {
		t.Fatalf("unread %s, %s, %s; want 5m, 1h5m and 7h30m", p.NearCapUnread, p.ActiveUnread, p.QuietUnread)
	}
}

func TestSumsPlanRefusesWhatWasNotMeasured(t *testing.T) {
	for _, f := range []SweepFigures{{}, {Workloads: 10, Runs: 1, ReadsByTier: map[string]int{"quiet": 10}, Calls: 10, Interval: time.Minute}} {
		if _, err := SumsPlanFor(f, 10_000, StripeLimits, DefaultPrices()); !errors.Is(err, ErrNoPlan) {
			t.Errorf("%+v: err = %v, want ErrNoPlan", f, err)
		}
	}
}
