package paymentworker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/lab"
)

// BenchmarkE2EPayments measures the payment path's ceiling the way
// hookline lab does ([lab.MeasureCeilings]): on a fresh local system, 5 s
// of signed webhooks at 500/s to warm it, then the full path (HTTP API,
// receiver, SQS, event source, payment worker, provider simulator) and the
// bare pipeline (the same AWS calls replayed, nothing else) saturated
// with bursts of 3,000 events, in two mirrored rounds (full, bare, bare,
// full). The ratio is full ÷ bare, both means of four bursts of this run.
// Latency and duplicate charges need a paced run: hookline lab. Run it
// with -benchtime 1x: each iteration is a whole measurement.
func BenchmarkE2EPayments(b *testing.B) {
	for _, on := range []bool{true, false} {
		b.Run("idempotency="+onOff(on), func(b *testing.B) {
			for range b.N {
				reportCeilings(b, measureCeilings(b, on))
			}
		})
	}
}

// measureCeilings measures the ceilings with the lab's warm-up and
// bursts, and fails if a webhook of a burst was refused.
func measureCeilings(b *testing.B, idempotency bool) *lab.Report {
	rep, err := lab.MeasureCeilings(context.Background(), lab.Config{
		Rate: 500, Warmup: 5 * time.Second, Burst: ceilingBurst, Idempotency: idempotency, GCPercent: lab.DefaultGCPercent,
	})
	if err != nil {
		b.Fatal(err)
	}
	if len(rep.NotAccepted) > 0 {
		b.Fatalf("webhooks refused in the bursts: %v; a refused webhook ends its burst early, so the full path's ceiling would be too high", rep.NotAccepted)
	}
	return rep
}

// ceilingBurst is the events of each burst, as hookline lab's --burst.
const ceilingBurst = 3000

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// reportCeilings reports the means and their ratio, and prints every
// burst.
func reportCeilings(b *testing.B, rep *lab.Report) {
	b.ReportMetric(rep.FullCeiling, "full_events/s")
	b.ReportMetric(rep.BareCeiling, "bare_events/s")
	b.ReportMetric(rep.Ratio, "full/bare")
	if rep.RatioWithoutHarness > 0 {
		b.ReportMetric(rep.RatioWithoutHarness, "full_without_harness/bare")
	}
	b.ReportMetric(0, "ns/op")
	fmt.Printf("payments ceilings, idempotency %s, bursts of %d after a %s warm-up at %g/s, in the order full, bare, bare, full, twice:\n"+
		"  full path %s events/s (mean %.0f), bare pipeline %s events/s (mean %.0f)\n"+
		"  full ÷ bare %.2fx (means of this run)%s; %d webhooks accepted, none refused\n",
		onOff(rep.Idempotency), ceilingBurst, rep.Warmup, rep.Rate, rates(rep.FullCeilings), rep.FullCeiling, rates(rep.BareCeilings), rep.BareCeiling,
		rep.Ratio, withoutHarness(rep), rep.Accepted)
}

// withoutHarness says the like-with-like ratio, when it was measured.
func withoutHarness(rep *lab.Report) string {
	if rep.RatioWithoutHarness == 0 {
		return ""
	}
	return fmt.Sprintf("; %.2fx with the sender's and the provider simulator's share of the CPU given back to the full path (the bare pipeline has neither)", rep.RatioWithoutHarness)
}

func rates(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(s, ", ")
}
