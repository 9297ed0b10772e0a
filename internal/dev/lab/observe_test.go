package lab

import (
	"runtime"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/provider"
)

func TestObserverCountsOnlyUnsettledEvents(t *testing.T) {
	start := time.Now()
	o := newObserver(start)
	for _, id := range []string{"a", "b", "c", "d"} {
		o.offer(id, start)
	}
	// Given a charge that settles before its webhook's answer is counted,
	// and others accepted first
	o.settle("a", provider.Result{Outcome: provider.Succeeded})
	for _, id := range []string{"a", "b", "c", "d"} {
		o.accept(id, "")
	}
	if n := o.open(); n != 3 {
		t.Fatalf("open = %d after accepting b, c, d unsettled, want 3", n)
	}

	// When one is charged, one declined and one dead-lettered
	o.settle("b", provider.Result{Outcome: provider.Succeeded})
	o.settle("c", provider.Result{Outcome: provider.Declined})
	o.deadLetter("d", "poison")

	// Then nothing is open, and a sample finds no unsettled event
	if n := o.open(); n != 0 {
		t.Errorf("open = %d, want 0", n)
	}
	o.sample(0)
	if s, ok := o.second(0); !ok || s.OldestAge > 1 {
		t.Errorf("second 0 = %+v, %v: want an oldest age near 0", s, ok)
	}
}

func TestStagesSplitWebhookToCharge(t *testing.T) {
	now := time.Now()
	o := newObserver(now.Add(-time.Second))
	// Given an event due 100 ms ago, sent 10 ms late, picked up by the
	// worker 40 ms after it was sent, answered and charged just now
	o.offer("e", now.Add(-100*time.Millisecond))
	o.sent("e", now.Add(-90*time.Millisecond))
	o.picked([]string{"e"}, now.Add(-50*time.Millisecond))
	o.picked([]string{"e"}, now) // a redelivery does not move the first pickup
	o.accept("e", "")
	o.settle("e", provider.Result{Outcome: provider.Succeeded})

	st := o.stages()
	want := []float64{10, 90, 40, 50} // ms, each at least this
	if len(st) != len(want) {
		t.Fatalf("stages = %+v", st)
	}
	for i, w := range want {
		if st[i].P50 < w || st[i].P50 > w+25 || st[i].P99 != st[i].P50 {
			t.Errorf("%s = p50 %.1f ms, p99 %.1f ms; want about %.0f ms", st[i].Name, st[i].P50, st[i].P99, w)
		}
	}
	if top, ok := slowest(st); !ok || top.Name != st[1].Name {
		t.Errorf("slowest = %+v, want the receiver's leg", top)
	}
}

func TestRuntimeShareIsOfTheBusyCPU(t *testing.T) {
	before := runtimeSample{gc: 1, total: 10, idle: 5, cycles: 3}
	after := runtimeSample{gc: 3, total: 30, idle: 15, cycles: 7, live: 64 << 20}
	r := after.since(before)
	// 2 s of GC out of 20 s of CPU, 10 s of which idle
	if r.GCShare != 0.2 || r.GCCycles != 4 || r.LiveHeapMB != 64 {
		t.Fatalf("since = %+v, want a 20%% share, 4 cycles, 64 MB", r)
	}
	runtime.GC() // the CPU classes are brought up to date by collections
	if live := readRuntime(); live.total <= 0 {
		t.Fatalf("readRuntime = %+v: the runtime's CPU classes are missing", live)
	}
}
