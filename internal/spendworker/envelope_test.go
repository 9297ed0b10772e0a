package spendworker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/usagein"
)

// receivedAt is the intake time a message carries.
var receivedAt = time.Now().UTC().Truncate(time.Millisecond)

// envelopeMessage is a message as the receiver queues it now: the record
// the door read under the source's mapping, with its intake time.
func envelopeMessage(t *testing.T, id string, m usagein.Mapping, rec usagein.Record) events.SQSMessage {
	t.Helper()
	msg := message(id, string(m.Envelope("meters", rec)))
	msg.MessageAttributes["received_at"] = events.SQSMessageAttribute{StringValue: aws.String(receivedAt.Format("2006-01-02T15:04:05.000Z07:00")), DataType: "String"}
	return msg
}

func handleOne(t *testing.T, f *fixture, m events.SQSMessage) {
	t.Helper()
	resp, err := f.worker.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{m}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %+v, %v; want the record acknowledged", resp, err)
	}
}

func total(t *testing.T, f *fixture) int64 {
	t.Helper()
	w, err := f.ledger.Workloads.Get(context.Background(), "wl-1")
	if err != nil {
		t.Fatal(err)
	}
	return w.Total
}

// TestAMessageOfTheEarlierBuildIsStillRead starts with a message the
// build before envelopes queued, the usage.recorded body itself, then
// gets the same record in the envelope the receiver writes now: the
// record is counted once.
func TestAMessageOfTheEarlierBuildIsStillRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// Given a message queued by the earlier build
	handleOne(t, f, usageMessage("evt_old", "ur_old", "wl-1", 40))
	if got := total(t, f); got != 40 {
		t.Fatalf("total = %d, want 40", got)
	}
	// When the same record comes again in an envelope (a redelivery
	// after the upgrade)
	rec := usagein.Record{Outcome: usagein.OutcomeUsage, Type: "usage.recorded", RecordID: "ur_old", WorkloadRef: "wl-1",
		Meter: "units", Unit: "units", Units: 40, OccurredAt: receivedAt.Add(-time.Minute)}
	handleOne(t, f, envelopeMessage(t, "evt_old", usagein.HooklineMapping, rec))
	// Then it is a duplicate under the same ledger key
	if got := total(t, f); got != 40 {
		t.Fatalf("total = %d, want 40: REC#ur_old must stay the key", got)
	}
	e, err := f.ledger.Ledger.Entry(context.Background(), "ur_old")
	if err != nil || e.Units != 40 {
		t.Fatalf("entry %+v, %v", e, err)
	}
}

func TestEnvelopesAreCountedAsTheDoorReadThem(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ms, err := usagein.ParseMappings([]byte(`{"meters": {"format": "cloudevents", "usage_types": ["com.example.tokens"], "scale": 1000, "unit": "units", "max_age": "840h"}}`))
	if err != nil {
		t.Fatal(err)
	}
	m := ms.For("meters")
	key := usagein.CloudEventKey("meters", "/meter", "e1")
	base := usagein.Record{Type: "com.example.tokens", RecordID: key, WorkloadRef: "wl-1", Meter: "com.example.tokens", Unit: "units",
		OccurredAt: receivedAt.Add(-20 * 24 * time.Hour), Origin: usagein.Origin{Source: "/meter", ID: "e1"}}

	// Given a CloudEvent of 12.5 at scale 1000, 20 days old on a source
	// allowing 35
	usage := base
	usage.Outcome, usage.Units = usagein.OutcomeUsage, 12500
	handleOne(t, f, envelopeMessage(t, "ce-1", m, usage))
	// Then it is counted at its scale, under its key, with its meter
	if got := total(t, f); got != 12500 {
		t.Fatalf("total = %d, want 12500", got)
	}
	e, err := f.ledger.Ledger.Entry(context.Background(), key)
	if err != nil || e.Meter != "com.example.tokens" || e.Unit != "units" || e.Source != "meters" || !e.SeenAt.Equal(receivedAt) {
		t.Fatalf("entry %+v, %v; want its meter, unit, source and when it was seen", e, err)
	}
	// and, since no export the reconciler reads holds it, it waits for
	// no confirmation
	markers, err := f.ledger.Recon.UnconfirmedBefore(context.Background(), receivedAt.Add(time.Hour))
	if err != nil || len(markers) != 0 {
		t.Fatalf("markers = %+v, %v; want none", markers, err)
	}

	// Given a zero reading and an event of another type
	for i, outcome := range []string{usagein.OutcomeZero, usagein.OutcomeNotUsage} {
		rec := base
		rec.Outcome, rec.RecordID = outcome, usagein.CloudEventKey("meters", "/meter", outcome)
		handleOne(t, f, envelopeMessage(t, "ce-"+outcome, m, rec))
		// Then each is acknowledged with no ledger effect
		if got := total(t, f); got != 12500 {
			t.Fatalf("%d: total = %d after %s", i, got, outcome)
		}
		if _, err := f.ledger.Ledger.Entry(context.Background(), rec.RecordID); err == nil {
			t.Fatalf("%s has a ledger entry", outcome)
		}
	}
}

func TestAnEnvelopePastItsRuleIsDeadLettered(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// Given an envelope whose record lies outside the rule it carries
	// (sent around the door)
	rec := usagein.Record{Outcome: usagein.OutcomeUsage, Type: "usage.recorded", RecordID: "ur_far", WorkloadRef: "wl-1",
		Meter: "units", Unit: "units", Units: 5, OccurredAt: receivedAt.Add(-100 * time.Hour)}
	handleOne(t, f, envelopeMessage(t, "evt_far", usagein.HooklineMapping, rec))
	// Then it is not counted
	if got := total(t, f); got != 0 {
		t.Fatalf("total = %d, want 0", got)
	}
	// and it is dead-lettered naming the field
	out, err := f.env.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(f.env.QueueURL("usage-dlq")),
		MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("dead letters = %+v, %v", out, err)
	}
	if r := aws.ToString(out.Messages[0].MessageAttributes["failure_reason"].StringValue); !strings.HasPrefix(r, "invalid_usage: occurred_at: ") {
		t.Fatalf("failure_reason %q", r)
	}
}
