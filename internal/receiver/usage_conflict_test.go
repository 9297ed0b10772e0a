package receiver_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/receiver"
	"github.com/hookline/hookline/internal/stack"
)

// failingUpdates fails every UpdateItem while armed, as a DynamoDB that
// is down answers.
type failingUpdates struct {
	intake.DynamoDBAPI
	armed atomic.Bool
}

func (f *failingUpdates) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.armed.Load() {
		return nil, errors.New("injected: DynamoDB unavailable")
	}
	return f.DynamoDBAPI.UpdateItem(ctx, in, o...)
}

// TestAUsageEventReSentWithAnotherValueIsAcknowledged: the usage door
// answers a revised value under an ID it holds with a 2xx, enqueues
// nothing, and records the conflict on the intake record before it
// answers; a payments source still answers 409.
func TestAUsageEventReSentWithAnotherValueIsAcknowledged(t *testing.T) {
	t.Parallel()
	f := newUsageFixture(t)
	db := &failingUpdates{DynamoDBAPI: f.env.DynamoDB}
	store, err := intake.New(intake.Config{DynamoDB: db, SQS: f.env.SQS, Table: f.env.TableName("IntakeTable")})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	body := func(units string) string {
		return usageEvent("evt_rev", "usage.recorded", `"record_id":"ur_rev","workload_ref":"w1","units":`+units+`,"occurred_at":"`+at+`"`)
	}
	// Given a usage event accepted and enqueued,
	if r := f.handle(t, signedTo(t, "usage", "msg_rev", body("5"), time.Now())); r.StatusCode != 200 {
		t.Fatalf("first: %d %s", r.StatusCode, r.Body)
	}
	f.drain(t, "usage")

	// when its revision comes while the intake table cannot be written,
	f.handler = handlerOver(t, f, store)
	db.armed.Store(true)
	r := f.handle(t, signedTo(t, "usage", "msg_rev", body("7"), time.Now()))
	// then it is a 503, so that the sender's retry records the conflict,
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("revision with DynamoDB down: %d %s, want 503", r.StatusCode, r.Body)
	}
	// and once it can, the retry is acknowledged, noted, and not enqueued.
	db.armed.Store(false)
	r = f.handle(t, signedTo(t, "usage", "msg_rev", body("7"), time.Now()))
	if r.StatusCode != 200 || r.Body != `{"status":"conflict"}` {
		t.Fatalf("revision: %d %s, want 200 conflict", r.StatusCode, r.Body)
	}
	if n := len(f.drain(t, "usage")); n != 0 {
		t.Fatalf("the revision queued %d messages, want none", n)
	}
	rec, ok, err := store.Get(context.Background(), "usage", "msg_rev")
	if err != nil || !ok || rec.Conflicts != 1 || !strings.Contains(rec.ConflictPayload, `"units":7`) || !strings.Contains(rec.Payload, `"units":5`) {
		t.Fatalf("record %+v (%v, %v): want one conflict of 7 units beside the 5 counted", rec, ok, err)
	}

	// A payments source still refuses a reused ID with another body.
	if r = f.handle(t, standardRequest(t, "msg_pay_rev", `{"type":"payment.succeeded","data":{"amount":1}}`, time.Now())); r.StatusCode != 200 {
		t.Fatalf("payments: %d %s", r.StatusCode, r.Body)
	}
	r = f.handle(t, standardRequest(t, "msg_pay_rev", `{"type":"payment.succeeded","data":{"amount":2}}`, time.Now()))
	if r.StatusCode != http.StatusConflict {
		t.Fatalf("payments conflict: %d %s, want 409", r.StatusCode, r.Body)
	}
}

// handlerOver is f's usage handler over another intake store.
func handlerOver(t *testing.T, f *fixture, store *intake.Store) *receiver.Handler {
	t.Helper()
	h, err := receiver.New(receiver.Config{Intake: store, Sources: usageSources(f)})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestTheTemplateAlarmsOnUsageConflicts: every acknowledged conflict is
// counted, and the template alarms on the count.
func TestTheTemplateAlarmsOnUsageConflicts(t *testing.T) {
	t.Parallel()
	tmpl, err := stack.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	watched := slices.ContainsFunc(tmpl.Alarms, func(a stack.Alarm) bool {
		return a.MetricName == receiver.MetricUsageConflict ||
			slices.ContainsFunc(a.Queries, func(q string) bool { return strings.Contains(q, "SUM("+receiver.MetricUsageConflict+")") })
	})
	if !watched {
		t.Fatalf("infra/template.yaml has no alarm on %s", receiver.MetricUsageConflict)
	}
}
