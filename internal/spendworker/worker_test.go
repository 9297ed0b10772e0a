package spendworker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/spendworker"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/queue"

	"github.com/hookline/hookline/internal/dev/localaws"
)

type fixture struct {
	env    *localaws.Env
	ledger *spend.Spend
	worker *spendworker.Worker
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	env := localaws.StartForTest(t)
	outbox, err := pager.NewOutbox(pager.OutboxConfig{DB: env.DynamoDB, Table: env.TableName("LedgerTable")})
	if err != nil {
		t.Fatal(err)
	}
	contract := spend.PathContract{ExpectedArrival: time.Minute, MaxAge: time.Hour, Interval: 5 * time.Minute}
	ledger, err := spend.New(spend.Config{
		DB: env.DynamoDB, LedgerTable: env.TableName("LedgerTable"), WorkloadsTable: env.TableName("WorkloadsTable"),
		Pages: outbox, Webhook: contract, Poll: contract, ReconOwner: "spend-oncall", ReconRoutingKey: "rk-recon",
	})
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(queue.Config{SQS: env.SQS, URL: env.QueueURL("usage"), DeadLetterURL: env.QueueURL("usage-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	w, err := spendworker.New(spendworker.Config{Ledger: ledger.Ledger, Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Workloads.CreateWorkload(context.Background(), spend.NewWorkload{ID: "wl-1", Owner: "o", RoutingKey: "rk", Cap: 1000}); err != nil {
		t.Fatal(err)
	}
	return &fixture{env: env, ledger: ledger, worker: w}
}

func usageMessage(id, record, ref string, units int64) events.SQSMessage {
	body, _ := json.Marshal(provider.UsageEvent{ID: id, Type: provider.UsageEventType,
		Data: provider.UsageRecord{RecordID: record, WorkloadRef: ref, Units: units, OccurredAt: time.Now().UTC()}})
	return message(id, string(body))
}

func message(id, body string) events.SQSMessage {
	return events.SQSMessage{MessageId: "m-" + id, Body: body, Attributes: map[string]string{"ApproximateReceiveCount": "1"},
		MessageAttributes: map[string]events.SQSMessageAttribute{"event_id": {StringValue: aws.String(id), DataType: "String"}}}
}

func TestIntakeStates(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	tests := []struct {
		name      string
		msg       events.SQSMessage
		wantTotal int64
		wantDLQ   string // failure_reason of a dead-lettered copy, "" for none
	}{
		{"accepted", usageMessage("evt_1", "ur_1", "wl-1", 100), 100, ""},
		{"duplicate is accepted and counted once", usageMessage("evt_1", "ur_1", "wl-1", 100), 100, ""},
		{"unknown workload is deferred, attributed to nobody", usageMessage("evt_2", "ur_2", "nobody", 50), 100, ""},
		{"malformed message is dead-lettered with its reason", message("evt_3", `{"id":"evt_3","data":{"units":"many"}}`), 100, "invalid_usage: type: required"},
		{"a record the ledger refuses is quarantined, not retried", usageMessage("evt_4", "ur_4", "wl-1", spend.MaxUnits), 100, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given one record, when the worker handles it,
			resp, err := f.worker.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{tc.msg}})
			// then it is acknowledged,
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("Handle = %+v, %v; want the record acknowledged", resp, err)
			}
			// the workload total is as expected,
			w, err := f.ledger.Workloads.Get(ctx, "wl-1")
			if err != nil || w.Total != tc.wantTotal {
				t.Fatalf("total = %d (%v), want %d", w.Total, err, tc.wantTotal)
			}
			// and only a poison record reaches the DLQ, with its reason.
			out, err := f.env.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(f.env.QueueURL("usage-dlq")), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if len(out.Messages) == 1 {
				got = aws.ToString(out.Messages[0].MessageAttributes["failure_reason"].StringValue)
			}
			if len(out.Messages) > 1 || got != tc.wantDLQ {
				t.Fatalf("dead letters = %d, reason %q; want reason %q", len(out.Messages), got, tc.wantDLQ)
			}
		})
	}
	q, err := f.ledger.Ledger.Quarantined(ctx, "ur_4")
	if err != nil || q.EventID != "evt_4" || q.Path != spend.PathWebhook || q.Reason == "" {
		t.Fatalf("quarantined record = %+v, %v; want it stored with its reason", q, err)
	}
	d, err := f.ledger.Ledger.GetDeferred(ctx, "ur_2")
	if err != nil || d.Reason == "" || d.Owner != "spend-oncall" || d.Deadline.IsZero() {
		t.Fatalf("deferred record = %+v, %v; want reason, owner and deadline", d, err)
	}
}

func TestLedgerDownFailsTheRecordBack(t *testing.T) {
	// Given a ledger that cannot be reached,
	broken, err := spendworker.New(spendworker.Config{Ledger: failingLedger{}, Queue: noQueue{}})
	if err != nil {
		t.Fatal(err)
	}
	// when a valid record arrives, then it goes back to the queue (not to
	// the DLQ, not acknowledged).
	resp, err := broken.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{usageMessage("evt_9", "ur_9", "wl-1", 10)}})
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m-evt_9" {
		t.Fatalf("Handle = %+v, %v; want the record failed back to the queue", resp, err)
	}
}

// failingLedger stands in for DynamoDB being down.
type failingLedger struct{}

func (failingLedger) Apply(context.Context, spend.Usage) (spend.Result, error) {
	return spend.Result{}, fmt.Errorf("ledger: dynamodb unavailable")
}

func (failingLedger) RecordAlert(context.Context, spend.Alert, time.Time) (spend.AlertResult, error) {
	return spend.AlertResult{}, fmt.Errorf("ledger: dynamodb unavailable")
}

type noQueue struct{}

func (noQueue) DeadLetter(context.Context, events.SQSMessage, string) error {
	return fmt.Errorf("unexpected dead letter")
}
