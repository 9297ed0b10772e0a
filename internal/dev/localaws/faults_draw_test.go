package localaws

import (
	"fmt"
	"math"
	"testing"
)

// TestDrawIsSeededAndAttemptsIndependent: a decision is a function of the
// seed, fault, operation, identity and attempt; across identities the
// draws are uniform, and attempt 2 is independent of attempt 1.
func TestDrawIsSeededAndAttemptsIndependent(t *testing.T) {
	l := newFaultLayer(Faults{Seed: 7, Rates: map[string]float64{FaultDDBError: 0.5}})
	other := newFaultLayer(Faults{Seed: 8, Rates: map[string]float64{FaultDDBError: 0.5}})
	const n = 20000
	var first, both, sameAcrossSeeds int
	var sum float64
	for i := range n {
		id := fmt.Sprintf("item-%d", i)
		u1 := l.draw(FaultDDBError, "PutItem", id, 1)
		if again := l.draw(FaultDDBError, "PutItem", id, 1); again != u1 {
			t.Fatalf("draw of %s is %v then %v", id, u1, again)
		}
		u2 := l.draw(FaultDDBError, "PutItem", id, 2)
		sum += u1
		if u1 < 0.5 {
			first++
			if u2 < 0.5 {
				both++
			}
		}
		if (u1 < 0.5) == (other.draw(FaultDDBError, "PutItem", id, 1) < 0.5) {
			sameAcrossSeeds++
		}
	}
	// Given 20,000 identities, the mean is near 1/2, half fault at rate
	// 1/2, a quarter fault on both attempts, and another seed agrees with
	// this one about half the time (each within about 5 standard errors).
	checks := []struct {
		name      string
		got, want float64
	}{
		{"mean draw", sum / n, 0.5},
		{"rate at attempt 1", float64(first) / n, 0.5},
		{"rate at attempts 1 and 2", float64(both) / n, 0.25},
		{"agreement across seeds", float64(sameAcrossSeeds) / n, 0.5},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 0.02 {
			t.Errorf("%s = %.4f, want %.2f", c.name, c.got, c.want)
		}
	}
}

func TestAttemptOf(t *testing.T) {
	tests := []struct {
		name, header string
		want         int
	}{
		{"sdk header", "attempt=2; max=3", 2},
		{"first", "attempt=1; max=3", 1},
		{"ttl first", "ttl=20261201T210000Z; attempt=3; max=3", 3},
		{"none", "", 1},
		{"garbage", "attempt=x", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string][]string{"Amz-Sdk-Request": {tt.header}}
			if got := attemptOf(h); got != tt.want {
				t.Errorf("attemptOf(%q) = %d, want %d", tt.header, got, tt.want)
			}
		})
	}
}
