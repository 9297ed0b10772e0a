package lab_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/lab"
)

// TestDynamoDBIsPricedFromConsumedCapacity runs the lab with 4 KB bodies
// of random text (which gzip shrinks to about 3 KB): the intake item holds
// the payload, so its put costs a write unit per KB and the update that
// marks it enqueued as much again. One unit per call would price each
// event's DynamoDB writes at 2 units.
func TestDynamoDBIsPricedFromConsumedCapacity(t *testing.T) {
	// Given 4 KB bodies with idempotency off (the intake's two writes
	// only)
	payload, err := lab.SizedPayload(4096)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := lab.Run(context.Background(), lab.Config{Name: "4k", Rate: 30, Duration: time.Second, Seed: 1, Burst: 100,
		Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	// Then DynamoDB is priced at three write units a write or more
	p := lab.DefaultPrices()
	if want := 6 * p.DynamoDBWritePerMillion; rep.CostPerMillion.DynamoDB < want {
		t.Fatalf("DynamoDB per million events $%.2f, want at least $%.2f (6 write units an event at 4 KB)", rep.CostPerMillion.DynamoDB, want)
	}
	// and the units are reported, metered, with the cost priced from them
	u := rep.Units
	if !u.Metered || u.Write < 6 || rep.CostPerMillion.DynamoDB != u.Write*p.DynamoDBWritePerMillion+u.Read*p.DynamoDBReadPerMillion {
		t.Fatalf("units %v, DynamoDB $%.4f", u, rep.CostPerMillion.DynamoDB)
	}
	// and each intake write of one event is three units or more: the
	// payload and the item's other attributes
	var intake []lab.CallUnits
	for _, c := range rep.UnitsByCall {
		if c.Function == "intake" {
			intake = append(intake, c)
		}
	}
	if len(intake) != 2 || intake[0].Units.Write < 3 || intake[1].Units.Write < 3 {
		t.Fatalf("the intake's calls: %v", intake)
	}
	if rep.PayloadBytes != 4096 || rep.AWSCalls < 3 {
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
