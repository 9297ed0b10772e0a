package spendworker_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/spendworker"
	"github.com/hookline/hookline/pkg/queue"
)

func TestRefusedMessagesNameTheField(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	var logs bytes.Buffer
	q, err := queue.New(queue.Config{SQS: f.env.SQS, URL: f.env.QueueURL("usage"), DeadLetterURL: f.env.QueueURL("usage-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	w, err := spendworker.New(spendworker.Config{Ledger: f.ledger.Ledger, Queue: q,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	body := func(data string) string {
		return `{"id":"evt_s","type":"usage.recorded","data":{"workload_ref":"wl-1","occurred_at":"` + at + `"` + data + `}}`
	}
	tests := []struct {
		name, body, field string
	}{
		{"units twice", body(`,"record_id":"ur_s1","units":5,"units":500000`), "data.units"},
		{"units other case", body(`,"record_id":"ur_s2","units":5,"Units":500000`), "data.Units"},
		{"units string", body(`,"record_id":"ur_s3","units":"5"`), "data.units"},
		{"units 10.0", body(`,"record_id":"ur_s4","units":10.0`), "data.units"},
		{"units zero", body(`,"record_id":"ur_s5","units":0`), "data.units"},
		{"record id missing", body(`,"units":5`), "data.record_id"},
		{"type deleted", strings.Replace(body(`,"record_id":"ur_s6","units":5`), "usage.recorded", "usage.deleted", 1), "type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given a queued usage message the ledger cannot count,
			// when the worker handles it,
			resp, err := w.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{message("evt_s", tc.body)}})
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("Handle = %+v, %v; want it acknowledged", resp, err)
			}
			// then its dead letter names the field,
			out, err := f.env.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(f.env.QueueURL("usage-dlq")),
				MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
			if err != nil || len(out.Messages) != 1 {
				t.Fatalf("dead letters = %d (%v), want 1", len(out.Messages), err)
			}
			reason := aws.ToString(out.Messages[0].MessageAttributes["failure_reason"].StringValue)
			if !strings.Contains(reason, tc.field+":") {
				t.Fatalf("failure_reason %q does not name %s", reason, tc.field)
			}
			f.env.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(f.env.QueueURL("usage-dlq")), ReceiptHandle: out.Messages[0].ReceiptHandle})
			// and so does a log line.
			if !strings.Contains(logs.String(), tc.field) {
				t.Fatalf("no log line names %s:\n%s", tc.field, logs.String())
			}
		})
	}
	// Nothing was counted.
	wl, err := f.ledger.Workloads.Get(ctx, "wl-1")
	if err != nil || wl.Total != 0 {
		t.Fatalf("total = %d (%v), want 0", wl.Total, err)
	}
}
