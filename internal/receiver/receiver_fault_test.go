package receiver_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/receiver"
	"github.com/hookline/hookline/pkg/secrets"
	"github.com/hookline/hookline/pkg/webhook"
)

// newFaultFixture is a receiver over the local AWS with the fault layer
// f, with the intake store's production lease and busy wait.
func newFaultFixture(t *testing.T, f localaws.Faults) *fixture {
	t.Helper()
	env := localaws.StartFaultsForTest(t, f)
	fx := &fixture{env: env, ddb: &countingDDB{DynamoDBAPI: env.DynamoDB}, sqs: &countingSQS{SQSAPI: env.SQS}, now: time.Now()}
	store, err := intake.New(intake.Config{DynamoDB: fx.ddb, SQS: fx.sqs, Table: env.TableName("IntakeTable"), Lease: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	fx.store = store
	lookup := secrets.Env{Lookup: func(k string) (string, bool) { return standardSecret, k == "PAY" }}
	fx.handler, err = receiver.New(receiver.Config{
		Intake: store,
		Sources: []receiver.Source{
			{Spec: webhook.SourceSpec{Name: "payments", Scheme: webhook.SchemeStandard, SecretEnv: "PAY", MaxBody: 4096}, QueueURL: env.QueueURL("payments"), Secrets: lookup},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return fx
}

// TestReceiverUnderAWSFaults drives signed webhooks through the receiver
// while one AWS fault hits the first attempt of one operation: the answer
// is 200 accepted, the event is on its queue, and the provider's
// redelivery is a duplicate.
func TestReceiverUnderAWSFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fault, op string
	}{
		{localaws.FaultDDBAmbiguous, "PutItem"}, // the intake record committed, its answer lost
		{localaws.FaultDDBError, "PutItem"},
		{localaws.FaultDDBThrottle, "PutItem"},
		{localaws.FaultSQSSendAmbiguous, "SendMessage"}, // enqueued, answered 500
	}
	for _, tc := range tests {
		t.Run(tc.fault+"/"+tc.op, func(t *testing.T) {
			// Given the fault on the first attempt of the operation,
			f := newFaultFixture(t, localaws.Faults{Seed: 41, Rates: map[string]float64{tc.fault: 1},
				Match: localaws.FirstAttempt(tc.fault, tc.op)})
			body := `{"type":"payment.succeeded","data":{"amount":1200}}`
			// when a provider delivers a signed webhook,
			start := time.Now()
			resp := f.handle(t, standardRequest(t, "msg_fault", body, time.Now()))
			// then it is accepted at once, not left busy on its own write,
			if resp.StatusCode != http.StatusOK || resp.Body != `{"status":"accepted"}` {
				t.Fatalf("got %d %s after %v, want 200 accepted (faults %v)", resp.StatusCode, resp.Body, time.Since(start), f.env.Faults())
			}
			if f.env.Faults()[tc.fault] != 1 {
				t.Fatalf("faults injected %v, want one %s", f.env.Faults(), tc.fault)
			}
			// and is on the queue and recorded, and its redelivery is a
			// duplicate, sent again.
			if n := len(f.drain(t, "payments")); n < 1 {
				t.Errorf("queue holds %d messages, want the event", n)
			}
			again := f.handle(t, standardRequest(t, "msg_fault", body, time.Now()))
			if again.StatusCode != http.StatusOK || again.Body != `{"status":"duplicate"}` {
				t.Errorf("redelivery got %d %s, want 200 duplicate", again.StatusCode, again.Body)
			}
			if n := len(f.drain(t, "payments")); n < 1 {
				t.Errorf("redelivery queued %d messages, want it sent again", n)
			}
			rec, ok, err := f.store.Get(context.Background(), "payments", "msg_fault")
			if err != nil || !ok || rec.Status != intake.StatusReceived || rec.Payload != body {
				t.Errorf("record %+v (found %v, %v), want received with its payload", rec.Status, ok, err)
			}
		})
	}
}
