package receiver_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/receiver"
	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/secrets"
	"github.com/hookline/hookline/pkg/webhook"
)

// newUsageFixture is a receiver with the usage source, which feeds the
// usage queue, besides the payments source.
func newUsageFixture(t *testing.T) *fixture {
	t.Helper()
	return newUsageFixtureWith(t, nil)
}

// newUsageFixtureWith is [newUsageFixture] with the usage mappings ms.
func newUsageFixtureWith(t *testing.T, ms *usagein.Mappings) *fixture {
	t.Helper()
	f := newFixture(t, nil, nil)
	store, err := intake.New(intake.Config{DynamoDB: f.ddb, SQS: f.sqs, Table: f.env.TableName("IntakeTable")})
	if err != nil {
		t.Fatal(err)
	}
	f.handler, err = receiver.New(receiver.Config{Intake: store, Usage: ms, Sources: usageSources(f)})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// usageSources are the usage fixture's sources: usage, which feeds the
// usage queue, and payments.
func usageSources(f *fixture) []receiver.Source {
	lookup := secrets.Env{Lookup: func(string) (string, bool) { return standardSecret, true }}
	return []receiver.Source{
		{Spec: webhook.SourceSpec{Name: "usage", Scheme: webhook.SchemeStandard, SecretEnv: "USAGE", Queue: "usage"}, QueueURL: f.env.QueueURL("usage"), Secrets: lookup},
		{Spec: webhook.SourceSpec{Name: "payments", Scheme: webhook.SchemeStandard, SecretEnv: "PAY", Queue: "payments"}, QueueURL: f.env.QueueURL("payments"), Secrets: lookup},
	}
}

func signedTo(t *testing.T, source, id, body string, ts time.Time) events.APIGatewayV2HTTPRequest {
	req := standardRequest(t, id, body, ts)
	req.PathParameters["source"] = source
	req.RawPath = "/webhooks/" + source
	return req
}

// msgID makes a webhook-id of a test name.
func msgID(name string) string {
	return "msg_" + strings.NewReplacer(" ", "_", ".", "_").Replace(name)
}

// usageEvent is a usage webhook body with the given data members.
func usageEvent(id, typ, data string) string {
	return fmt.Sprintf(`{"id":%q,"type":%q,"data":{%s}}`, id, typ, data)
}

func TestBadUsageIsRefusedAtTheDoorNamingTheField(t *testing.T) {
	t.Parallel()
	f := newUsageFixture(t)
	now := time.Now().UTC()
	at := now.Add(-time.Minute).Format(time.RFC3339)
	rec := func(units string) string {
		return `"record_id":"ur_1","workload_ref":"w1","occurred_at":"` + at + `"` + units
	}
	tests := []struct {
		name, body, field string
	}{
		{"units null", usageEvent("evt_u1", "usage.recorded", rec(`,"units":null`)), "data.units"},
		{"units missing", usageEvent("evt_u2", "usage.recorded", rec(``)), "data.units"},
		{"units twice", usageEvent("evt_u4", "usage.recorded", rec(`,"units":5,"units":500000`)), "data.units"},
		{"units negative", usageEvent("evt_u5", "usage.recorded", rec(`,"units":-5`)), "data.units"},
		{"units beyond int64", usageEvent("evt_u6", "usage.recorded", rec(`,"units":99999999999999999999`)), "data.units"},
		{"units 1.5", usageEvent("evt_u7", "usage.recorded", rec(`,"units":1.5`)), "data.units"},
		{"units 10.0", usageEvent("evt_u8", "usage.recorded", rec(`,"units":10.0`)), "data.units"},
		{"units string", usageEvent("evt_u9", "usage.recorded", rec(`,"units":"5"`)), "data.units"},
		{"record id missing", usageEvent("evt_u10", "usage.recorded", `"workload_ref":"w1","units":5,"occurred_at":"`+at+`"`), "data.record_id"},
		{"type not a string", `{"id":"evt_u11","type":7,"data":{` + rec(`,"units":5`) + `}}`, "type"},
		{"in 2099", usageEvent("evt_u12", "usage.recorded", `"record_id":"ur_1","workload_ref":"w1","units":5,"occurred_at":"2099-01-01T00:00:00Z"`), "data.occurred_at"},
		{"in 1970", usageEvent("evt_u13", "usage.recorded", `"record_id":"ur_1","workload_ref":"w1","units":5,"occurred_at":"1970-01-01T00:00:00Z"`), "data.occurred_at"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for attempt := 1; attempt <= 2; attempt++ {
				// Given a signed usage body that cannot become a ledger
				// record, when it is sent (and retried),
				resp := f.handle(t, signedTo(t, "usage", msgID(tc.name), tc.body, now))

				// then each attempt gets a 400 that names the field
				var got struct{ Error, Field, Reason string }
				if err := json.Unmarshal([]byte(resp.Body), &got); err != nil || resp.StatusCode != 400 ||
					got.Error != "invalid_usage" || got.Field != tc.field || got.Reason == "" {
					t.Fatalf("attempt %d: %d %s, want 400 invalid_usage naming %s", attempt, resp.StatusCode, resp.Body, tc.field)
				}
			}
		})
	}
	// and nothing reached the usage queue or the intake table.
	if n := len(f.drain(t, "usage")); n != 0 {
		t.Fatalf("%d messages enqueued, want 0", n)
	}
	if n := f.ddb.calls.Load(); n != 0 {
		t.Fatalf("%d intake calls, want 0", n)
	}

	// A good record is still accepted.
	good := usageEvent("evt_good", "usage.recorded", rec(`,"units":5`))
	if resp := f.handle(t, signedTo(t, "usage", "msg_good", good, now)); resp.StatusCode != 200 {
		t.Fatalf("good usage: %d %s", resp.StatusCode, resp.Body)
	}
}

func TestEnvelopeMembersAreReadByExactName(t *testing.T) {
	t.Parallel()
	f := newUsageFixture(t)
	now := time.Now().UTC()
	tests := []struct {
		name, body, field string
	}{
		{"ID besides id", `{"id":"evt_1","ID":"evt_2","type":"payment.succeeded"}`, "ID"},
		{"Id instead of id", `{"Id":"evt_3","type":"payment.succeeded"}`, "Id"},
		{"long s in timestamp", `{"id":"evt_4","time` + "\u017f" + `tamp":"2026-12-01T00:00:00Z","type":"payment.succeeded"}`, "time\u017ftamp"},
		{"type twice", `{"id":"evt_5","type":"payment.succeeded","type":"payment.failed"}`, "type"},
		{"other member twice", `{"id":"evt_6","type":"payment.succeeded","amount":1,"amount":2}`, "amount"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given a payment envelope that spells a member two ways,
			// when it is sent,
			resp := f.handle(t, signedTo(t, "payments", msgID(tc.name), tc.body, now))
			// then it is refused with a 400 naming the member.
			var got struct{ Error, Field, Reason string }
			if err := json.Unmarshal([]byte(resp.Body), &got); err != nil || resp.StatusCode != 400 ||
				got.Error != "malformed_body" || got.Field != tc.field || got.Reason == "" {
				t.Fatalf("%d %s, want 400 malformed_body naming %q", resp.StatusCode, resp.Body, tc.field)
			}
		})
	}
	if n := len(f.drain(t, "payments")); n != 0 {
		t.Fatalf("%d messages enqueued, want 0", n)
	}
}

func TestARefusedFieldIsEchoedBounded(t *testing.T) {
	t.Parallel()
	// Given a usage body whose nested member, under a long name, is
	// given twice
	f := newUsageFixture(t)
	now := time.Now().UTC()
	long := strings.Repeat("n", 300)
	body := usageEvent("evt_long", "usage.recorded", `"record_id":"ur_l","workload_ref":"w1","units":5,"occurred_at":"`+
		now.Add(-time.Minute).Format(time.RFC3339)+`","extra":{"`+long+`":1,"`+long+`":2}`)
	// When it is sent
	resp := f.handle(t, signedTo(t, "usage", "msg_long", body, now))
	// Then the 400 names the field, cut to a bounded length
	var got struct{ Error, Field, Reason string }
	if err := json.Unmarshal([]byte(resp.Body), &got); err != nil || resp.StatusCode != 400 ||
		!strings.HasPrefix(got.Field, "data.extra.nnn") || len(got.Field) > 131 || got.Reason != "member given twice" {
		t.Fatalf("%d %s, want 400 with a bounded field", resp.StatusCode, resp.Body)
	}
}
