package lab

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSumsPlanScalesAMeasuredSweepToAFleet(t *testing.T) {
	// given a sweep of 1,000 workloads over 3 runs: 1,500 reads, 3,000
	// calls in 150 s at a limit of 25 calls/s (80% of it used), 300 write
	// and 600 read units
	f := SweepFigures{Provider: "stripe", Workloads: 1000, Runs: 3, Reads: 1500, Calls: 3000, Seconds: 150, RateLimit: 25,
		WriteUnits: 300, ReadUnits: 600, Interval: 5 * time.Minute, QuietEvery: 6}
	// when it is worked out for 10,000 workloads on Stripe
	p, err := SumsPlanFor(f, 10_000, StripeLimits, DefaultPrices())
	if err != nil {
		t.Fatal(err)
	}
	// then a run makes 10,000 calls, which take 500 s at 80% of 25/s: longer
	// than the 5-minute interval, so the sweep is behind and runs back to back
	if p.CallsPerRun != 10_000 || p.SecondsPerRun != 500 || !p.Behind || p.Period != 500*time.Second {
		t.Fatalf("calls %v, seconds %v, behind %v, period %s; want 10000, 500, true, 8m20s", p.CallsPerRun, p.SecondsPerRun, p.Behind, p.Period)
	}
	if p.NearCapUnread != 1000*time.Second || p.QuietUnread != 3500*time.Second {
		t.Fatalf("near-cap unread %s, quiet unread %s; want 16m40s and 58m20s", p.NearCapUnread, p.QuietUnread)
	}
	if p.WriteUnitsPerRun != 1000 || p.ReadUnitsPerRun != 2000 {
		t.Fatalf("units a run %v write, %v read; want 1000 and 2000", p.WriteUnitsPerRun, p.ReadUnitsPerRun)
	}
	// 172.8 runs a day of 500 s at 256 MB, and their units, on-demand
	runs := 86400.0 / 500
	want := runs*0.20/1e6 + runs*500*0.25*0.0000133334 + runs*(1000*0.625+2000*0.125)/1e6
	if d := p.CostPerDay.Total - want; d > 1e-9 || d < -1e-9 {
		t.Fatalf("cost a day %v, want %v", p.CostPerDay.Total, want)
	}
	var out bytes.Buffer
	p.Write(&out)
	for _, s := range []string{"10,000 workloads on stripe", "calls a run      10,000", "the sweep is behind", "at most 16m40s"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("plan does not say %q:\n%s", s, out.String())
		}
	}
}

func TestSumsPlanRefusesWhatWasNotMeasured(t *testing.T) {
	for _, f := range []SweepFigures{{}, {Workloads: 10, Runs: 1, Reads: 10, Calls: 10, Seconds: 1, Interval: time.Minute}} {
		if _, err := SumsPlanFor(f, 10_000, StripeLimits, DefaultPrices()); !errors.Is(err, ErrNoPlan) {
			t.Errorf("%+v: err = %v, want ErrNoPlan", f, err)
		}
	}
}
