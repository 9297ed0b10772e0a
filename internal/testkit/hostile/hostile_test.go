package hostile_test

import (
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/testkit"
	"github.com/hookline/hookline/internal/testkit/hostile"
)

// TestFaultFuncDrawsByKeyAndAttempt: the n-th call under a key meets the
// same fault on every replay of a seed; rate 0 injects nothing, rate 1
// always one of the faults, and late commits stay within maxCommit.
func TestFaultFuncDrawsByKeyAndAttempt(t *testing.T) {
	never := hostile.FaultFunc(testkit.NewDice(3), 0, hostile.Faults, time.Second)
	always := hostile.FaultFunc(testkit.NewDice(3), 1, hostile.Faults, time.Second)
	replay := hostile.FaultFunc(testkit.NewDice(3), 1, hostile.Faults, time.Second)
	kinds := map[providersim.FaultKind]bool{}
	for n := 1; n <= 200; n++ {
		if f := never("key", n); f != (providersim.Fault{}) {
			t.Fatalf("rate 0 injected %v", f)
		}
		f := always("key", n)
		if f.Kind == providersim.FaultNone {
			t.Fatalf("rate 1 injected nothing on call %d", n)
		}
		if f != replay("key", n) {
			t.Fatalf("call %d drew %v, its replay another", n, f)
		}
		if f.Delay > 2*time.Second {
			t.Fatalf("call %d: delay %s", n, f.Delay)
		}
		kinds[f.Kind] = true
	}
	if len(kinds) < len(hostile.Faults)/2 {
		t.Fatalf("200 calls drew only %d kinds of fault", len(kinds))
	}
}
