package receiver_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	stripewebhook "github.com/stripe/stripe-go/v84/webhook"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/receiver"
	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/secrets"
	"github.com/hookline/hookline/pkg/webhook"
)

// newStripeAlertsFixture is a receiver with the usage source
// "stripe-alerts", to which Stripe sends its events signed with
// Stripe-Signature, read under a stripe-alerts mapping.
func newStripeAlertsFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, nil, nil)
	ms, err := usagein.ParseMappings([]byte(`{"stripe-alerts": {"format": "stripe-alerts"}}`))
	if err != nil {
		t.Fatal(err)
	}
	sources := []webhook.SourceSpec{{Name: "stripe-alerts", Scheme: webhook.SchemeStripe, SecretEnv: "STRIPE_ALERTS", Queue: "usage"}}
	if err := ms.CheckSources(sources, usagein.DefaultUnit); err != nil {
		t.Fatal(err)
	}
	store, err := intake.New(intake.Config{DynamoDB: f.ddb, SQS: f.sqs, Table: f.env.TableName("IntakeTable"), Lease: f.lease})
	if err != nil {
		t.Fatal(err)
	}
	lookup := secrets.Env{Lookup: func(string) (string, bool) { return stripeSecret, true }}
	f.handler, err = receiver.New(receiver.Config{Intake: store, Usage: ms, Sources: []receiver.Source{
		{Spec: sources[0], QueueURL: f.env.QueueURL("usage"), Secrets: lookup},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// stripeSigned is body sent to source as Stripe sends it, signed by
// stripe-go's test signer at ts.
func stripeSigned(source, body string, ts time.Time) events.APIGatewayV2HTTPRequest {
	signed := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: []byte(body), Secret: stripeSecret, Timestamp: ts})
	return request(source, body, map[string]string{"stripe-signature": signed.Header, "content-type": "application/json; charset=utf-8"})
}

// alertTriggered is a billing.alert.triggered event with pending
// endpoints still to deliver it to.
func alertTriggered(id string, created time.Time, pending int) string {
	return fmt.Sprintf(`{"id":%q,"object":"event","api_version":"2026-02-25.clover","created":%d,
  "data":{"object":{"object":"billing.alert_triggered","alert":"alrt_1","customer":"cus_abc","livemode":true,"value":10000}},
  "livemode":true,"pending_webhooks":%d,"request":{"id":null,"idempotency_key":null},"type":"billing.alert.triggered"}`,
		id, created.Unix(), pending)
}

func TestAStripeAlertIsQueuedWithItsEvent(t *testing.T) {
	t.Parallel()
	f := newStripeAlertsFixture(t)
	now := time.Now().UTC()

	// Given a signed billing.alert.triggered to the Stripe alerts source,
	// when it is sent, and sent again with one endpoint fewer pending
	// (Stripe's retry),
	for i, want := range []string{`200 {"status":"accepted"}`, `200 {"status":"duplicate"}`} {
		resp := f.handle(t, stripeSigned("stripe-alerts", alertTriggered("evt_alert_1", now, 2-i), now))
		// then it is accepted once, and the retry is a duplicate, not a
		// conflict
		if got := fmt.Sprint(resp.StatusCode, " ", resp.Body); got != want {
			t.Fatalf("delivery %d: %s, want %s", i+1, got, want)
		}
	}

	// and the event is queued (again on the duplicate, at least once, the
	// first delivery's message) as an alert keyed by the event's ID,
	// carrying the verified event.
	msgs := f.drain(t, "usage")
	if len(msgs) == 0 || len(msgs) > 2 {
		t.Fatalf("%d messages queued, want the first delivery's, sent once or twice", len(msgs))
	}
	for _, other := range msgs[1:] {
		if aws.ToString(other.Body) != aws.ToString(msgs[0].Body) {
			t.Fatalf("messages differ:\n%s\n%s", aws.ToString(msgs[0].Body), aws.ToString(other.Body))
		}
	}
	m := msgs[0]
	if id, src := aws.ToString(m.MessageAttributes["event_id"].StringValue), aws.ToString(m.MessageAttributes["source"].StringValue); id != "evt_alert_1" || src != "stripe-alerts" {
		t.Fatalf("message attributes event_id %q, source %q", id, src)
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &env); err != nil || env["alert"] == nil {
		t.Fatalf("message %s, %v: want the event under alert", aws.ToString(m.Body), err)
	}
	msg, err := usagein.DecodeMessage([]byte(aws.ToString(m.Body)), now)
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		ID, Type string
		Data     struct{ Object struct{ Customer string } }
	}
	if err := json.Unmarshal([]byte(msg.Alert), &ev); err != nil {
		t.Fatal(err)
	}
	if msg.Outcome != usagein.OutcomeAlert || msg.RecordID != "evt_alert_1" || msg.Source != "stripe-alerts" ||
		ev.ID != "evt_alert_1" || ev.Type != usagein.StripeAlertType || ev.Data.Object.Customer != "cus_abc" {
		t.Fatalf("message %+v, event %+v", msg, ev)
	}
}

func TestAStripeAlertsSourceTakesOtherEventsAsNotUsage(t *testing.T) {
	t.Parallel()
	f := newStripeAlertsFixture(t)
	now := time.Now().UTC()
	body := `{"id":"evt_charge_1","object":"event","type":"charge.succeeded","created":` + fmt.Sprint(now.Unix()) + `,"livemode":true,"data":{"object":{}}}`
	if resp := f.handle(t, stripeSigned("stripe-alerts", body, now)); resp.StatusCode != 200 {
		t.Fatalf("%d %s, want 200", resp.StatusCode, resp.Body)
	}
	msgs := f.drain(t, "usage")
	if len(msgs) != 1 {
		t.Fatalf("%d messages queued, want 1", len(msgs))
	}
	msg, err := usagein.DecodeMessage([]byte(aws.ToString(msgs[0].Body)), now)
	if err != nil || msg.Outcome != usagein.OutcomeNotUsage || msg.RecordID != "evt_charge_1" || msg.Alert != "" {
		t.Fatalf("message %+v, %v; want evt_charge_1 not usage", msg, err)
	}

	// A body not signed by Stripe's secret is refused at the door.
	forged := stripeSigned("stripe-alerts", alertTriggered("evt_forged", now, 1), now)
	forged.Body = alertTriggered("evt_forged", now, 1) + " "
	if resp := f.handle(t, forged); resp.StatusCode != 401 {
		t.Fatalf("forged: %d %s, want a refusal", resp.StatusCode, resp.Body)
	}
	if n := len(f.drain(t, "usage")); n != 0 {
		t.Fatalf("%d messages queued for a forged body", n)
	}
}
