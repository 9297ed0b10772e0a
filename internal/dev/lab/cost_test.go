package lab_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/lab"
)

// TestDynamoDBIsPricedFromConsumedCapacity runs the lab with 4 KB bodies
// of random text (which gzip shrinks to about 3 KB): the intake item holds
// the payload, so its one put costs a write unit per KB, and its index
// write one more. One unit per call would price the event's DynamoDB
// writes at 1 unit.
func TestDynamoDBIsPricedFromConsumedCapacity(t *testing.T) {
	oneRunAtATime(t)
	// Given 4 KB bodies with idempotency off (the intake's put only)
	payload, err := lab.SizedPayload(4096)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := lab.Run(context.Background(), lab.Config{Name: "4k", Rate: 30, Duration: time.Second, Seed: 1, Burst: 100,
		Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	// Then DynamoDB is priced at four write units or more
	p := lab.DefaultPrices()
	if want := 4 * p.DynamoDBWritePerMillion; rep.CostPerMillion.DynamoDB < want {
		t.Fatalf("DynamoDB per million events $%.2f, want at least $%.2f (4 write units an event at 4 KB)", rep.CostPerMillion.DynamoDB, want)
	}
	// and the units are reported, metered, with the cost priced from them
	u := rep.Units
	if !u.Metered || u.Write < 4 || rep.CostPerMillion.DynamoDB != u.Write*p.DynamoDBWritePerMillion+u.Read*p.DynamoDBReadPerMillion {
		t.Fatalf("units %v, DynamoDB $%.4f", u, rep.CostPerMillion.DynamoDB)
	}
	// and the intake's one write of an event is three units or more: the
	// payload and the item's other attributes, and the index's one
	var intake []lab.CallUnits
	for _, c := range rep.UnitsByCall {
		if c.Function == "intake" {
			intake = append(intake, c)
		}
	}
	if len(intake) != 1 || intake[0].Units.Write < 4 {
		t.Fatalf("the intake's calls: %v", intake)
	}
	if rep.PayloadBytes != 4096 || rep.AWSCalls < 2 {
		t.Fatalf("payload %d bytes, %.2f calls an event", rep.PayloadBytes, rep.AWSCalls)
	}
	var out strings.Builder
	lab.Summary(&out, rep)
	for _, line := range []string{"DynamoDB capacity units per event: ", "write units", "units of one event's call: intake dynamodb.PutItem"} {
		if !strings.Contains(out.String(), line) {
			t.Fatalf("the summary has no %q:\n%s", line, out.String())
		}
	}
	t.Log(out.String())
}
