package lab_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/lab"
)

// labRuns lets one lab run go at a time: a run profiles the whole
// process's CPU and sets its GOGC, so two at once would spoil each
// other's figures.
var labRuns sync.Mutex

// oneRunAtATime runs the calling test beside the package's other parallel
// tests (the live page's, which waits on the clock), but beside no other
// lab run.
func oneRunAtATime(t *testing.T) {
	t.Parallel()
	labRuns.Lock()
	t.Cleanup(labRuns.Unlock)
}

// TestShortRunsAddUp runs the lab for a few seconds at a low rate, with
// idempotency off and then on, and checks that its accounting adds up.
func TestShortRunsAddUp(t *testing.T) {
	oneRunAtATime(t)
	var runs []*lab.Report
	own := debug.SetGCPercent(-1)
	debug.SetGCPercent(own)
	for _, on := range []bool{false, true} {
		rep, err := lab.Run(context.Background(), lab.Config{
			Name: map[bool]string{false: "off", true: "on"}[on], Rate: 60, Duration: 3 * time.Second,
			LostAcks: 0.05, Idempotency: on, Seed: 1, Burst: 200, Drain: 20 * time.Second,
			Warmup:    map[bool]time.Duration{true: time.Second}[on], // the warm-up is forgotten
			GCPercent: map[bool]int{true: 150}[on],                   // set for the run, then restored
		})
		if err != nil {
			t.Fatal(err)
		}
		if after := debug.SetGCPercent(own); rep.GCPercent != map[bool]int{false: own, true: 150}[on] || after != own {
			t.Fatalf("%s: the run's GOGC %d, the process's %d before it and %d after it", rep.Name, rep.GCPercent, own, after)
		}
		lab.Summary(os.Stdout, rep)
		// Then every offered webhook is accounted for once: accepted, or
		// not with its reason,
		notAccepted := 0
		for _, n := range rep.NotAccepted {
			notAccepted += n
		}
		if rep.Offered < 150 || rep.Offered > 190 || rep.Offered != rep.Accepted+notAccepted ||
			rep.Accepted != rep.Charged+rep.Declined+rep.DeadLettered+rep.Lost {
			t.Fatalf("%s: offered %d = accepted %d + not accepted %v; accepted = charged %d + declined %d + dead-lettered %d + lost %d does not add up",
				rep.Name, rep.Offered, rep.Accepted, rep.NotAccepted, rep.Charged, rep.Declined, rep.DeadLettered, rep.Lost)
		}
		if rep.Lost != 0 || rep.Redeliveries == 0 || len(rep.Seconds) < 3 || rep.BareCeiling <= 0 || rep.FullCeiling <= 0 {
			t.Fatalf("%s: lost %d, redeliveries %d, %d seconds, ceilings %.0f/%.0f", rep.Name, rep.Lost, rep.Redeliveries, len(rep.Seconds), rep.FullCeiling, rep.BareCeiling)
		}
		// The full path's bursts say where the CPU went, each part apart.
		// The provider's side (sender, simulator) takes about 2% of the CPU:
		// a short burst on a loaded machine may catch no profile sample of
		// it, so it may be zero, never negative.
		if c := rep.FullCPU; c == nil || c.Functions <= 0 || c.HTTPAPI <= 0 || c.Sender < 0 || c.Simulator < 0 ||
			c.Functions+c.HTTPAPI+c.Harness()+c.OtherGo > 1.01 || rep.RatioWithoutHarness < rep.Ratio {
			t.Fatalf("%s: full path's CPU %+v; without the harness %.2f×, with it %.2f×", rep.Name, rep.FullCPU, rep.RatioWithoutHarness, rep.Ratio)
		}
		// Each charged event's time is split into its legs.
		if len(rep.Stages) != 4 || rep.Stages[1].P50 <= 0 || rep.Stages[3].P50 <= 0 || rep.Runtime.GCCycles < 0 {
			t.Fatalf("%s: stages %+v, runtime %+v", rep.Name, rep.Stages, rep.Runtime)
		}
		runs = append(runs, rep)
	}
	// and duplicates are counted, and named, only where idempotency is off.
	off, on := runs[0], runs[1]
	if off.Duplicates == 0 || !hasFinding(off, "zero duplicate charges") {
		t.Fatalf("idempotency off: %d duplicates, findings %v; the lost acknowledgements should have charged twice", off.Duplicates, off.Findings)
	}
	if on.Duplicates != 0 || hasFinding(on, "zero duplicate charges") {
		t.Fatalf("idempotency on: %d duplicates", on.Duplicates)
	}
	dir := t.TempDir()
	if err := lab.WriteReport(dir, off, on); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(md), "Before and after") || !strings.Contains(string(md), "off-rate.svg") {
		t.Fatalf("report.md: %v\n%s", err, md)
	}
	if _, err := os.Stat(filepath.Join(dir, "on-queue.svg")); err != nil {
		t.Fatal(err)
	}
}

func hasFinding(r *lab.Report, goal string) bool {
	for _, f := range r.Findings {
		if f.Goal == goal {
			return true
		}
	}
	return false
}

func TestParseSpike(t *testing.T) {
	tests := []struct {
		in      string
		want    lab.Spike
		wantErr bool
	}{
		{in: "3x@20s+10s", want: lab.Spike{Factor: 3, At: 20 * time.Second, For: 10 * time.Second}},
		{in: "", want: lab.Spike{}},
		{in: "3x", wantErr: true},
		{in: "0x@1s+1s", wantErr: true},
		{in: "2x@1s+0s", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := lab.ParseSpike(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("ParseSpike(%q) = %+v, %v", tt.in, got, err)
			}
		})
	}
}

// TestFindingsSayWhyWebhooksWereNotAccepted: a success below the goal
// names each reason webhooks were refused, most frequent first.
func TestFindingsSayWhyWebhooksWereNotAccepted(t *testing.T) {
	r := &lab.Report{Rate: 500, Offered: 1000, Accepted: 970, Charged: 970, Success: 0.97,
		NotAccepted: map[string]int{"status 503": 20, lab.RefusedUnsent: 7, lab.RefusedError: 3}}
	var got string
	for _, f := range lab.Findings(r) {
		if strings.HasPrefix(f.Goal, "success") {
			got = f.Why
		}
	}
	want := "30 webhooks were not accepted (20 status 503, 7 not sent (sender saturated), 3 no answer)"
	if got != want {
		t.Fatalf("why: %q, want %q", got, want)
	}
	// Webhooks only left unsent blame the intake's pace, not refusals.
	r.NotAccepted = map[string]int{lab.RefusedUnsent: 30}
	f, ok := finding(r, "success ≥ 99%")
	if !ok || !strings.HasPrefix(f.Fix, "the intake answered too slowly") || !strings.Contains(f.Measured, "30 not accepted") {
		t.Fatalf("unsent only: %+v", f)
	}
}

// TestLatencyFindingNamesItsCauses: a p99 over the goal names the slowest
// leg, how close the rate was to the ceiling and the collector's share,
// and advises by the cause.
func TestLatencyFindingNamesItsCauses(t *testing.T) {
	stages := []lab.Stage{{Name: "receiver (sent → 200)", P50: 9, P99: 200}, {Name: "to the worker (sent → picked up)", P50: 35, P99: 330}}
	near := &lab.Report{Rate: 500, Success: 1, P50: 42, P99: 397, FullCeiling: 600, BareCeiling: 700, Ratio: 0.86, Stages: stages,
		Runtime: lab.Runtime{GCShare: 0.2, GCCycles: 110, LiveHeapMB: 241}}
	far := &lab.Report{Rate: 100, Success: 1, P50: 42, P99: 397, FullCeiling: 600, BareCeiling: 700, Ratio: 0.86, Stages: stages}
	for _, tt := range []struct {
		r       *lab.Report
		why     []string
		notWhy  string
		fixHead string
	}{
		{near, []string{"to the worker (sent → picked up), p99 330 ms", "83% of the full path's ceiling (600/s)", "20% of the process's CPU in 110 cycles", "241 MB"}, "", "run on more cores"},
		{far, []string{"to the worker (sent → picked up), p99 330 ms"}, "ceiling", "raise the event source's concurrency"},
	} {
		f, ok := finding(tt.r, lab.GoalP99Name)
		if !ok {
			t.Fatalf("no latency finding in %v", lab.Findings(tt.r))
		}
		for _, w := range tt.why {
			if !strings.Contains(f.Why, w) {
				t.Errorf("why %q lacks %q", f.Why, w)
			}
		}
		if tt.notWhy != "" && strings.Contains(f.Why, tt.notWhy) {
			t.Errorf("why %q should not mention %q at %.0f/s", f.Why, tt.notWhy, tt.r.Rate)
		}
		if !strings.HasPrefix(f.Fix, tt.fixHead) {
			t.Errorf("fix %q, want it to start %q", f.Fix, tt.fixHead)
		}
	}
}

func finding(r *lab.Report, goal string) (lab.Finding, bool) {
	for _, f := range lab.Findings(r) {
		if f.Goal == goal {
			return f, true
		}
	}
	return lab.Finding{}, false
}

// TestSpikeFindings: a spike run is judged on its drain, not its p99, and
// a backlog that took longer than the goal to drain is a finding even
// when it drained within the run.
func TestSpikeFindings(t *testing.T) {
	r := &lab.Report{Rate: 500, PeakRate: 1500, Spike: "3x@20s+10s", Success: 1, P50: 6800, P99: 14000,
		FullCeiling: 692, BareCeiling: 800, Ratio: 0.87, SpikeDrainedIn: "32s", MaxOldestAge: 14.5}
	if lat, ok := finding(r, lab.GoalP99Name); ok {
		t.Errorf("latency finding %+v in a spike run", lat)
	}
	drain, ok := finding(r, lab.GoalDrainName)
	if !ok || drain.Measured != "it drained 32s after the spike" || !strings.Contains(drain.Why, "1500 webhooks/s") {
		t.Errorf("drain finding %+v, %v: want 32 s and the spike's rate named", drain, ok)
	}
	r.SpikeDrainedIn = "15s"
	if f, ok := finding(r, lab.GoalDrainName); ok {
		t.Errorf("a 15 s drain is within the goal: %+v", f)
	}
	r.SpikeDrainedIn = "16s"
	if _, ok := finding(r, lab.GoalDrainName); !ok {
		t.Errorf("a 16 s drain is past the goal")
	}
	r.SpikeDrainedIn = "not within the run"
	if f, ok := finding(r, lab.GoalDrainName); !ok || f.Measured != "it had not drained when the run ended" {
		t.Errorf("undrained: %+v", f)
	}
}

// TestCeilingsAreThroughputNotRecovery: the ceilings measure how fast the
// path goes, whatever the paced run left behind, and the bare pipeline is
// never the slower for the way it waits.
func TestCeilingsAreThroughputNotRecovery(t *testing.T) {
	oneRunAtATime(t)
	t.Run("stragglers of a faulted run", func(t *testing.T) {
		// Given a run where every charge call fails in a hostile way and
		// the drain gives up long before the ambiguous charges settle
		rep, err := lab.Run(context.Background(), lab.Config{Name: "faults", Rate: 30, Duration: 2 * time.Second, FaultRate: 1,
			Drain: time.Second, Idempotency: true, Seed: 3, Burst: 200})
		if err != nil {
			t.Fatal(err)
		}
		// Then the full path's ceiling is still a rate, not the time the
		// stragglers took to settle (30 s and more)
		if rep.Lost == 0 || rep.FullCeiling < 0.2*rep.BareCeiling {
			t.Fatalf("lost %d (want stragglers); ceilings full %.0f/s, bare %.0f/s", rep.Lost, rep.FullCeiling, rep.BareCeiling)
		}
	})
	t.Run("AWS latency", func(t *testing.T) {
		// Given 5 ms on every AWS call, where a pipeline that works through
		// a batch one message at a time is bound by its waits
		rep, err := lab.Run(context.Background(), lab.Config{Name: "latency", Rate: 30, Duration: time.Second, AWSLatency: 5 * time.Millisecond,
			Idempotency: true, Seed: 3, Burst: 400})
		if err != nil {
			t.Fatal(err)
		}
		// Then the bare pipeline, doing less, is not far slower than the
		// full path (it measured 232/s against 509/s when it was)
		if rep.Ratio > 1.5 {
			t.Fatalf("full %.0f/s ÷ bare %.0f/s = %.2f: the bare pipeline waits where the full path does not", rep.FullCeiling, rep.BareCeiling, rep.Ratio)
		}
	})
}

// TestWarmupIsNotBilled runs the same short experiment from a cold start
// and after a warm-up twice as long as the run: the warm-up's Lambda
// invocations and run time must not be priced into the run's events.
func TestWarmupIsNotBilled(t *testing.T) {
	oneRunAtATime(t)
	var lambda [2]float64
	for i, warmup := range []time.Duration{0, 4 * time.Second} {
		rep, err := lab.Run(context.Background(), lab.Config{Rate: 60, Duration: 2 * time.Second, Warmup: warmup,
			Idempotency: true, Seed: 1, Burst: 100, Drain: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		lambda[i] = rep.CostPerMillion.Lambda
	}
	t.Logf("Lambda per million events: %.3f from a cold start, %.3f after a warm-up", lambda[0], lambda[1])
	if lambda[1] > 1.5*lambda[0] {
		t.Fatalf("Lambda per million events: %.3f after a warm-up against %.3f from a cold start: the warm-up was billed", lambda[1], lambda[0])
	}
}

// TestRatioIsJudgedAsMeasured: the full path's ratio is judged as
// measured, against the bare pipeline of the same run; the ratio with the
// provider's side's CPU given back is printed beside it, never judged.
func TestRatioIsJudgedAsMeasured(t *testing.T) {
	cpu := &lab.CPUShare{Functions: 0.55, HTTPAPI: 0.04, Sender: 0.04, Simulator: 0.04, OtherGo: 0.12, Outside: 0.21, Busy: 0.98, PerEventMS: 2.6}
	for _, tt := range []struct {
		name    string
		r       *lab.Report
		finding bool
		says    string
	}{
		{"above the goal", &lab.Report{Success: 1, FullCeiling: 910, BareCeiling: 1000, Ratio: 0.91, FullCPU: cpu, RatioWithoutHarness: 0.95}, false, ""},
		{"below it, above it like with like", &lab.Report{Success: 1, FullCeiling: 880, BareCeiling: 1000, Ratio: 0.88, FullCPU: cpu, RatioWithoutHarness: 0.92}, true, "0.88× (880 against 1000 events/s, same run); 0.92× without the provider's side"},
		{"not profiled", &lab.Report{Success: 1, FullCeiling: 750, BareCeiling: 1000, Ratio: 0.75}, true, "0.75× (750 against 1000 events/s"},
	} {
		f, ok := finding(tt.r, lab.GoalRatioName)
		if ok != tt.finding || !strings.Contains(f.Measured, tt.says) {
			t.Errorf("%s: finding %v (%q), want %v saying %q", tt.name, ok, f.Measured, tt.finding, tt.says)
		}
		if ok && tt.r.FullCPU != nil && !strings.Contains(f.Why, "sender 0.10 ms (4%)") {
			t.Errorf("%s: why %q does not say where the CPU went", tt.name, f.Why)
		}
	}
}
