package receiver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/webhook"
)

// The usage door under mappings: what each format's bodies become.

// envelopes reads the usage queue's messages as the spend worker does,
// each distinct message once: a duplicate delivery sends its stored
// message again, for the worker's ledger to absorb.
func envelopes(t *testing.T, f *fixture) []usagein.Envelope {
	t.Helper()
	var out []usagein.Envelope
	seen := map[string]bool{}
	for _, m := range f.drain(t, "usage") {
		if seen[aws.ToString(m.Body)] {
			continue
		}
		seen[aws.ToString(m.Body)] = true
		var env usagein.Envelope
		if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &env); err != nil || env.Usage != usagein.EnvelopeVersion {
			t.Fatalf("message %s is not an envelope: %v", aws.ToString(m.Body), err)
		}
		out = append(out, env)
	}
	return out
}

func TestZeroAndOtherTypesAreAcknowledgedAtTheDoor(t *testing.T) {
	t.Parallel()
	f := newUsageFixture(t)
	now := time.Now().UTC()
	at := now.Add(-time.Minute).Format(time.RFC3339)
	// Given a reading of zero, and an event of a type that is not usage
	zero := usageEvent("evt_z", "usage.recorded", `"record_id":"ur_z","workload_ref":"w1","units":0,"occurred_at":"`+at+`"`)
	other := usageEvent("evt_d", "usage.deleted", `"record_id":"ur_d"`)
	for _, body := range []string{zero, other} {
		// When each is sent, and sent again
		for _, want := range []string{`200 {"status":"accepted"}`, `200 {"status":"duplicate"}`} {
			resp := f.handle(t, signedTo(t, "usage", "msg_"+body[7:12], body, now))
			// Then it is acknowledged, never refused: a 400 would be retried forever
			if got := fmt.Sprint(resp.StatusCode, " ", resp.Body); got != want {
				t.Fatalf("%s: %s, want %s", body, got, want)
			}
		}
	}
	// And each is queued saying what it is
	envs := envelopes(t, f)
	if len(envs) != 2 || envs[0].Outcome != usagein.OutcomeZero || envs[0].RecordID != "ur_z" || envs[1].Outcome != usagein.OutcomeNotUsage {
		t.Fatalf("envelopes = %+v", envs)
	}
}

// TestAUsageBodyAcceptedBeforeEnvelopesIsADuplicate: a delivery the build
// before envelopes accepted (its intake record holds the body itself)
// is, when the provider retries it after the upgrade, a duplicate, not
// a conflict.
func TestAUsageBodyAcceptedBeforeEnvelopesIsADuplicate(t *testing.T) {
	t.Parallel()
	f := newUsageFixture(t)
	now := time.Now().UTC()
	body := usageEvent("evt_before", "usage.recorded", `"record_id":"ur_before","workload_ref":"w1","units":5,"occurred_at":"`+
		now.Add(-time.Minute).Format(time.RFC3339)+`"`)
	// Given the intake record the earlier build wrote
	if _, err := f.store.Accept(context.Background(), intake.Event{Source: "usage", EventID: "msg_before", QueueURL: f.env.QueueURL("usage"),
		Payload: []byte(body), ProviderTimestamp: now}); err != nil {
		t.Fatal(err)
	}
	f.drain(t, "usage")
	// When the same delivery comes again
	resp := f.handle(t, signedTo(t, "usage", "msg_before", body, now))
	// Then it is a duplicate, and what is queued again is the earlier
	// build's message, which the spend worker still reads
	if got := fmt.Sprint(resp.StatusCode, " ", resp.Body); got != `200 {"status":"duplicate"}` {
		t.Fatalf("%s, want a duplicate", got)
	}
	for _, m := range f.drain(t, "usage") {
		if aws.ToString(m.Body) != body {
			t.Fatalf("queued %s, want the earlier message", aws.ToString(m.Body))
		}
	}
}

// meterMappings is a CloudEvents source counting tokens at scale 1000.
func meterMappings(t *testing.T) *usagein.Mappings {
	t.Helper()
	ms, err := usagein.ParseMappings([]byte(`{"usage": {"format": "cloudevents", "usage_types": ["com.example.tokens"],
	  "value": "/data/tokens", "scale": 1000, "unit": "units", "max_age": "840h"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// cloudEvent is a CloudEvent of the tokens meter.
func cloudEvent(source, id, tokens string, at time.Time) string {
	return fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":%q,"type":"com.example.tokens","subject":"w1","time":%q,"traceparent":"00-ab-cd-01","data":{"tokens":%s}}`,
		id, source, at.Format(time.RFC3339), tokens)
}

// cloudEventRequest signs body as a Standard Webhooks sender does, under
// a new message ID each time, as a producer's tee may.
func cloudEventRequest(t *testing.T, msgID, contentType, body string, now time.Time) events.APIGatewayV2HTTPRequest {
	t.Helper()
	req := signedTo(t, "usage", msgID, body, now)
	req.Headers["content-type"] = contentType
	return req
}

func answer(resp events.APIGatewayV2HTTPResponse) string {
	return fmt.Sprint(resp.StatusCode, " ", resp.Body)
}

func TestCloudEventsAtTheDoor(t *testing.T) {
	t.Parallel()
	f := newUsageFixtureWith(t, meterMappings(t))
	now := time.Now().UTC()
	ev := cloudEvent("/meter/a", "e-1", `"12.5"`, now.Add(-20*24*time.Hour))

	// Given a structured event, 20 days old on a source allowing 35, sent
	// twice under two message IDs
	if got := answer(f.handle(t, cloudEventRequest(t, "msg_1", usagein.MediaCloudEvent, ev, now))); got != `200 {"status":"accepted"}` {
		t.Fatalf("first: %s", got)
	}
	if got := answer(f.handle(t, cloudEventRequest(t, "msg_2", usagein.MediaCloudEvent, ev, now))); got != `200 {"status":"duplicate"}` {
		t.Fatalf("retry: %s, want a duplicate: the identity is source and id", got)
	}
	// And the same id under another source
	other := cloudEvent("/meter/b", "e-1", `7`, now.Add(-time.Minute))
	if got := answer(f.handle(t, cloudEventRequest(t, "msg_3", "application/json", other, now))); got != `200 {"status":"accepted"}` {
		t.Fatalf("other source: %s", got)
	}
	envs := envelopes(t, f)
	if len(envs) != 2 || envs[0].RecordID != usagein.CloudEventKey("usage", "/meter/a", "e-1") || envs[0].Units != 12500 ||
		envs[1].RecordID != usagein.CloudEventKey("usage", "/meter/b", "e-1") || envs[1].Units != 7000 {
		t.Fatalf("envelopes = %+v", envs)
	}

	// An out-of-scale value, alone, is a 400 naming the field
	bad := cloudEvent("/meter/a", "e-2", `12.5005`, now)
	wantRefusal(t, f.handle(t, cloudEventRequest(t, "msg_4", usagein.MediaCloudEvent, bad, now)), "data.tokens")

	// and, in a batch, a refused item inside a 200 that names it
	batch := "[" + strings.Join([]string{cloudEvent("/meter/a", "e-3", "1", now), bad, cloudEvent("/meter/a", "e-4", "0.5", now)}, ",") + "]"
	resp := f.handle(t, cloudEventRequest(t, "msg_5", usagein.MediaCloudEventBatch, batch, now))
	want := `200 {"status":"accepted","accepted":2,"duplicate":0,"refused":1,"too_old":0,"refused_items":[{"index":1,"error":"invalid_usage","field":"[1].data.tokens","reason":"has more precision than scale 1000 counts"}]}`
	if got := answer(resp); got != want {
		t.Fatalf("batch:\n got %s\nwant %s", got, want)
	}
	if envs := envelopes(t, f); len(envs) != 2 {
		t.Fatalf("batch queued %d records, want 2", len(envs))
	}
}

func TestCloudEventsRefusedAsAWhole(t *testing.T) {
	t.Parallel()
	f := newUsageFixtureWith(t, meterMappings(t))
	now := time.Now().UTC()
	ev := cloudEvent("/meter/a", "e-9", "1", now)
	binary := cloudEventRequest(t, "msg_b", "application/json", `{"tokens":1}`, now)
	binary.Headers["ce-id"], binary.Headers["ce-source"] = "e-9", "/meter/a"
	tests := []struct {
		name  string
		req   events.APIGatewayV2HTTPRequest
		field string
	}{
		{"binary mode", binary, "ce-id"},
		{"a batch content type on one event", cloudEventRequest(t, "msg_c", usagein.MediaCloudEventBatch, ev, now), "content-type"},
		{"one-event content type on a batch", cloudEventRequest(t, "msg_d", usagein.MediaCloudEvent, "["+ev+"]", now), "content-type"},
		{"data and data_base64", cloudEventRequest(t, "msg_e", usagein.MediaCloudEvent, strings.Replace(ev, `"data":`, `"data_base64":"AA==","data":`, 1), now), "data_base64"},
		{"specversion 0.3", cloudEventRequest(t, "msg_f", usagein.MediaCloudEvent, strings.Replace(ev, `"1.0"`, `"0.3"`, 1), now), "specversion"},
		{"id twice", cloudEventRequest(t, "msg_g", usagein.MediaCloudEvent, strings.Replace(ev, `"id":`, `"id":"x","id":`, 1), now), "id"},
		{"older than the source allows", cloudEventRequest(t, "msg_h", usagein.MediaCloudEvent, cloudEvent("/m", "e-10", "1", now.Add(-36*24*time.Hour)), now), "time"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantRefusal(t, f.handle(t, tc.req), tc.field) })
	}
	if n := len(f.drain(t, "usage")); n != 0 {
		t.Fatalf("%d messages queued", n)
	}
}

// wantRefusal fails unless resp is a 400 invalid_usage naming field.
func wantRefusal(t *testing.T, resp events.APIGatewayV2HTTPResponse, field string) {
	t.Helper()
	var ans struct{ Error, Field, Reason string }
	if err := json.Unmarshal([]byte(resp.Body), &ans); err != nil || resp.StatusCode != 400 || ans.Error != "invalid_usage" ||
		ans.Field != field || ans.Reason == "" {
		t.Fatalf("%s, want 400 invalid_usage naming %s", answer(resp), field)
	}
}

// TestSvixHeadersAtTheUsageDoor: a body signed under Svix's header names
// is accepted, its svix-id the delivery's identity.
func TestSvixHeadersAtTheUsageDoor(t *testing.T) {
	t.Parallel()
	f := newUsageFixture(t)
	now := time.Now().UTC()
	body := usageEvent("evt_svix", "usage.recorded", `"record_id":"ur_svix","workload_ref":"w1","units":3,"occurred_at":"`+now.Add(-time.Minute).Format(time.RFC3339)+`"`)
	req := signedTo(t, "usage", "msg_svix", body, now)
	for _, name := range []string{"id", "timestamp", "signature"} {
		req.Headers["svix-"+name] = req.Headers["webhook-"+name]
		delete(req.Headers, "webhook-"+name)
	}
	if got := answer(f.handle(t, req)); got != `200 {"status":"accepted"}` {
		t.Fatalf("%s", got)
	}
	req.Headers[webhook.HeaderWebhookID] = "msg_other"
	if resp := f.handle(t, req); resp.StatusCode != 401 {
		t.Fatalf("differing ids: %s, want 401", answer(resp))
	}
}
