package lab

import (
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
