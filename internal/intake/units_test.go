package intake_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
)

// TestAcceptWritesFewUnitsForALargeBody accepts the shipped Stripe
// invoice.paid event (5.8 KB) and counts the write units the local
// DynamoDB metered, index writes included. A record that held the body
// as it came paid six KB on the put and again on an update that marked
// it enqueued (15 units in all). Stored compressed, and with no second
// write, it pays one put of 3 units and the index's 1.
func TestAcceptWritesFewUnitsForALargeBody(t *testing.T) {
	body, err := os.ReadFile("../../testdata/payloads/stripe-invoice-paid.json")
	if err != nil {
		t.Fatal(err)
	}
	env, store := newFaultStore(t, localaws.Faults{})
	ev := intake.Event{Source: "payments", EventID: "evt_1QyT3m2eZvKYlo2CqA7sJ4bN", QueueURL: env.QueueURL("payments"),
		Payload: body, RequestID: "req-1"}
	// Given a fresh table, when the event is accepted
	before := writeUnits(env)
	res, err := store.Accept(context.Background(), ev)
	if err != nil || res.Outcome != intake.Accepted {
		t.Fatalf("accept: %+v, %v", res, err)
	}
	// Then its writes took at most 4 units, index writes included
	got := writeUnits(env) - before
	t.Logf("accepting a %d-byte body took %.0f write units", len(body), got)
	if got > 4 {
		t.Fatalf("accepting a %d-byte body took %.0f write units, want at most 4", len(body), got)
	}
	// and the record and the message still hold the body byte for byte,
	// and a redelivery is a duplicate, not a conflict
	rec, ok, err := store.Get(context.Background(), ev.Source, ev.EventID)
	if err != nil || !ok || rec.Payload != string(body) || rec.Status != intake.StatusReceived {
		t.Fatalf("record: found %v, %v, status %q, payload intact %v", ok, err, rec.Status, rec.Payload == string(body))
	}
	out, err := env.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(env.QueueURL("payments"))})
	if err != nil || len(out.Messages) != 1 || !bytes.Equal([]byte(aws.ToString(out.Messages[0].Body)), body) {
		t.Fatalf("message: %v, %d messages", err, len(out.Messages))
	}
	if again, err := store.Accept(context.Background(), ev); err != nil || again.Outcome != intake.Duplicate {
		t.Fatalf("redelivery: %+v, %v", again, err)
	}
}

// writeUnits sums the write units every table and index consumed.
func writeUnits(env *localaws.Env) float64 {
	n := 0.0
	for _, t := range env.Capacity().Tables {
		n += t.WriteUnits
		for _, idx := range t.Indexes {
			n += idx.WriteUnits
		}
	}
	return n
}
