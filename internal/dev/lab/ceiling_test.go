package lab_test

import (
	"context"
	"math"
	"runtime/debug"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/lab"
)

// TestMeasureCeilingsAsARunDoes: the ceilings alone are measured in two
// mirrored rounds, their means are of every burst and the ratio divides
// the full path's by the bare pipeline's, with the run's GOGC restored.
func TestMeasureCeilingsAsARunDoes(t *testing.T) {
	oneRunAtATime(t)
	own := debug.SetGCPercent(-1)
	debug.SetGCPercent(own)
	// Given a short warm-up and small bursts,
	rep, err := lab.MeasureCeilings(context.Background(), lab.Config{
		Rate: 50, Warmup: time.Second, Burst: 100, Idempotency: true, GCPercent: lab.DefaultGCPercent,
	})
	if err != nil {
		t.Fatal(err)
	}
	// when they are measured, then each path has four bursts,
	if len(rep.FullCeilings) != 4 || len(rep.BareCeilings) != 4 {
		t.Fatalf("bursts: full %v, bare %v; want four each", rep.FullCeilings, rep.BareCeilings)
	}
	// every webhook of the full path's bursts and the probe was accepted
	// (a refused one would end its burst early),
	if rep.Accepted != 4*100+1 || len(rep.NotAccepted) != 0 {
		t.Fatalf("accepted %d, want %d; not accepted %v", rep.Accepted, 4*100+1, rep.NotAccepted)
	}
	// the means and the ratio are of them,
	full, bare := meanOf(rep.FullCeilings), meanOf(rep.BareCeilings)
	if !near(rep.FullCeiling, full) || !near(rep.BareCeiling, bare) || !near(rep.Ratio, full/bare) || full <= 0 || bare <= 0 {
		t.Fatalf("full %.1f (mean of bursts %.1f), bare %.1f (%.1f), ratio %.3f (want %.3f)",
			rep.FullCeiling, full, rep.BareCeiling, bare, rep.Ratio, full/bare)
	}
	// and the run had the lab's GOGC, restored after it.
	if after := debug.SetGCPercent(own); rep.GCPercent != lab.DefaultGCPercent || after != own || !rep.Idempotency || rep.Warmup != "1s" {
		t.Fatalf("GOGC %d in the run, %d after it (want %d, %d); idempotency %v, warm-up %s",
			rep.GCPercent, after, lab.DefaultGCPercent, own, rep.Idempotency, rep.Warmup)
	}
}

func meanOf(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
