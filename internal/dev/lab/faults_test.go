package lab_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/lab"
	"github.com/hookline/hookline/internal/dev/localaws"
)

// TestRunUnderAWSFaults: with HOOKLINE_LOCAL_AWS_FAULTS set, a write can
// commit and answer 500, and the SDK sends it again. The lab's bare
// pipeline replays the probe event's conditional writes on fresh keys, so
// the retry of one that committed fails its condition: that is the
// replay's own write, not a failure of the run.
func TestRunUnderAWSFaults(t *testing.T) {
	if localaws.External() {
		t.Skip("the fault layer needs the embedded emulators")
	}
	t.Setenv(localaws.FaultsEnv, "seed=7,ddb-ambiguous=0.05")
	// The drain bound outlasts a claim left in progress by an attempt
	// whose every call was answered ambiguously: the next delivery waits
	// out idempotency.DefaultInProgressTimeout (60 s) and a 5 s
	// visibility timeout before it may charge. A passing run drains at
	// once; an event truly lost still fails.
	rep, err := lab.Run(context.Background(), lab.Config{Name: "faults", Rate: 30, Duration: 2 * time.Second,
		Idempotency: true, Seed: 1, Burst: 100, Drain: 90 * time.Second})
	if err != nil {
		t.Fatalf("lab under ddb-ambiguous faults: %v", err)
	}
	t.Logf("drained in %s", rep.DrainedIn)
	if rep.Duplicates != 0 || rep.Lost != 0 {
		t.Fatalf("under faults: %d duplicates, %d lost (drained in %s)", rep.Duplicates, rep.Lost, rep.DrainedIn)
	}
}

// TestACeilingUnderAWSFaultsCountsWhatWasAccepted: with DynamoDB failing
// calls, the receiver rightly refuses some of the burst's webhooks with
// 503; the full path's ceiling is then the rate of those it accepted,
// not an error, and nothing is charged twice or lost.
func TestACeilingUnderAWSFaultsCountsWhatWasAccepted(t *testing.T) {
	if localaws.External() {
		t.Skip("the fault layer needs the embedded emulators")
	}
	// Given DynamoDB calls that fail before acting often enough that the
	// SDK's retries do not always outlast them
	t.Setenv(localaws.FaultsEnv, "seed=3,ddb-error=0.25")
	// When the lab measures its ceilings
	rep, err := lab.Run(context.Background(), lab.Config{Name: "ceiling-faults", Rate: 30, Duration: time.Second,
		Idempotency: true, Seed: 1, Burst: 100, Drain: 90 * time.Second})
	// Then it measures them, from the webhooks that were accepted
	if err != nil {
		t.Fatalf("lab under ddb-error faults: %v", err)
	}
	if rep.FullCeiling <= 0 || rep.Duplicates != 0 || rep.Lost != 0 {
		t.Fatalf("under faults: ceiling %.0f/s, %d duplicates, %d lost; want a ceiling and none", rep.FullCeiling, rep.Duplicates, rep.Lost)
	}
}
