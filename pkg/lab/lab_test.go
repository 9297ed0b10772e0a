package lab_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/lab"
)

// TestShortRunsAddUp runs the lab for a few seconds at a low rate, with
// idempotency off and then on, and checks that its accounting adds up.
func TestShortRunsAddUp(t *testing.T) {
	var runs []*lab.Report
	for _, on := range []bool{false, true} {
		rep, err := lab.Run(context.Background(), lab.Config{
			Name: map[bool]string{false: "off", true: "on"}[on], Rate: 60, Duration: 3 * time.Second,
			LostAcks: 0.05, Idempotency: on, Seed: 1, Burst: 200, Drain: 20 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		lab.Summary(os.Stdout, rep)
		// Then every offered webhook is accounted for once: accepted, or
		// not with its reason,
		notAccepted := 0
		for _, n := range rep.NotAccepted {
			notAccepted += n
		}
		if rep.Offered < 150 || rep.Offered != rep.Accepted+notAccepted ||
			rep.Accepted != rep.Charged+rep.Declined+rep.DeadLettered+rep.Lost {
			t.Fatalf("%s: offered %d = accepted %d + not accepted %v; accepted = charged %d + declined %d + dead-lettered %d + lost %d does not add up",
				rep.Name, rep.Offered, rep.Accepted, rep.NotAccepted, rep.Charged, rep.Declined, rep.DeadLettered, rep.Lost)
		}
		if rep.Lost != 0 || rep.Redeliveries == 0 || len(rep.Seconds) < 3 || rep.BareCeiling <= 0 || rep.FullCeiling <= 0 {
			t.Fatalf("%s: lost %d, redeliveries %d, %d seconds, ceilings %.0f/%.0f", rep.Name, rep.Lost, rep.Redeliveries, len(rep.Seconds), rep.FullCeiling, rep.BareCeiling)
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
}
