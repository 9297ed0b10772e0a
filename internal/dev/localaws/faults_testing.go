package localaws

import (
	"context"
	"testing"
)

// StartFaultsForTest starts the embedded local AWS with the fault layer f
// for one test and stops it at cleanup. Drills use it to aim a fault at
// one operation ([Faults.Match]). It skips the test when an external AWS
// endpoint is set, since the layer lives in the embedded emulators.
func StartFaultsForTest(t testing.TB, f Faults) *Env {
	t.Helper()
	if External() {
		t.Skip("the fault layer needs the embedded emulators; an AWS_ENDPOINT_URL* is set")
	}
	env, err := Start(context.Background(), Options{Faults: f})
	if err != nil {
		t.Fatalf("start local aws with faults %s: %v", f, err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// FirstAttempt returns a [Faults.Match] that accepts only the first
// attempt of op for fault: the SDK's retry of it then goes through.
func FirstAttempt(fault, op string) func(FaultRequest) bool {
	return func(r FaultRequest) bool { return r.Fault == fault && r.Operation == op && r.Attempt == 1 }
}
