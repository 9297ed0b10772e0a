package receiver_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/hookline/hookline/internal/testkit"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/receiver"
	"github.com/hookline/hookline/pkg/secrets"
	"github.com/hookline/hookline/pkg/webhook"
)

const (
	standardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	stripeSecret   = "sk_test_stripe_secret"
)

// countingDDB and countingSQS count the AWS calls the receiver makes.
type countingDDB struct {
	intake.DynamoDBAPI
	calls atomic.Int32
}

func (c *countingDDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.calls.Add(1)
	return c.DynamoDBAPI.PutItem(ctx, in, o...)
}

func (c *countingDDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.calls.Add(1)
	return c.DynamoDBAPI.GetItem(ctx, in, o...)
}

func (c *countingDDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.calls.Add(1)
	return c.DynamoDBAPI.UpdateItem(ctx, in, o...)
}

type countingSQS struct {
	intake.SQSAPI
	calls atomic.Int32
}

func (c *countingSQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, o ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	c.calls.Add(1)
	return c.SQSAPI.SendMessage(ctx, in, o...)
}

type fixture struct {
	env     *localaws.Env
	ddb     *countingDDB
	sqs     *countingSQS
	store   *intake.Store
	handler *receiver.Handler
	now     time.Time
	lease   time.Duration
}

// calls returns the AWS calls, and the SQS calls among them, made since
// the last call of calls.
func (f *fixture) calls() (all, sqs int32) {
	sqs = f.sqs.calls.Swap(0)
	return f.ddb.calls.Swap(0) + sqs, sqs
}

func newFixture(t *testing.T, ddb intake.DynamoDBAPI, q intake.SQSAPI) *fixture {
	t.Helper()
	env := localaws.StartForTest(t)
	if ddb == nil {
		ddb = env.DynamoDB
	}
	if q == nil {
		q = env.SQS
	}
	f := &fixture{env: env, ddb: &countingDDB{DynamoDBAPI: ddb}, sqs: &countingSQS{SQSAPI: q}, now: time.Now(), lease: 500 * time.Millisecond}
	store, err := intake.New(intake.Config{DynamoDB: f.ddb, SQS: f.sqs, Table: env.TableName("IntakeTable"), Lease: f.lease})
	if err != nil {
		t.Fatal(err)
	}
	f.store = store
	lookup := secrets.Env{Lookup: func(k string) (string, bool) {
		v, ok := map[string]string{"PAY": "whsec_b2xkLXNlY3JldC1vbGQtc2VjcmV0LW9sZA==," + standardSecret, "LEGACY": stripeSecret}[k]
		return v, ok
	}}
	f.handler, err = receiver.New(receiver.Config{
		Intake: store,
		Sources: []receiver.Source{
			{Spec: webhook.SourceSpec{Name: "payments", Scheme: webhook.SchemeStandard, SecretEnv: "PAY", MaxBody: 4096}, QueueURL: env.QueueURL("payments"), Secrets: lookup},
			{Spec: webhook.SourceSpec{Name: "legacy", Scheme: webhook.SchemeStripe, SecretEnv: "LEGACY"}, QueueURL: env.QueueURL("usage"), Secrets: lookup},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func standardRequest(t testing.TB, id, body string, ts time.Time) events.APIGatewayV2HTTPRequest {
	t.Helper()
	sig, err := webhook.SignStandard(standardSecret, id, ts, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return request("payments", body, map[string]string{
		"webhook-id": id, "webhook-timestamp": fmt.Sprint(ts.Unix()), "webhook-signature": sig, "content-type": "application/json",
	})
}

func request(source, body string, headers map[string]string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		RouteKey: "ANY /webhooks/{source}", RawPath: "/webhooks/" + source, Body: body, Headers: headers,
		PathParameters: map[string]string{"source": source},
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "req-" + source, HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"}},
	}
}

func (f *fixture) handle(t testing.TB, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp, err := f.handler.Handle(context.Background(), req)
	if err != nil {
		t.Fatalf("Handle returned an error (Lambda would answer 500): %v", err)
	}
	return resp
}

func (f *fixture) drain(t *testing.T, queue string) []sqstypes.Message {
	t.Helper()
	var out []sqstypes.Message
	for {
		res, err := f.env.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(f.env.QueueURL(queue)), MaxNumberOfMessages: 10, VisibilityTimeout: 30,
			MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == 0 {
			return out
		}
		out = append(out, res.Messages...)
	}
}

func TestEveryOutcome(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil)
	now := time.Now()
	body := `{"type":"payment.succeeded","data":{"amount":1200}}`
	stripeBody := `{"id":"evt_stripe_1","type":"charge.succeeded","created":` + fmt.Sprint(now.Unix()) + `}`
	tampered := standardRequest(t, "msg_tamper", body, now)
	tampered.Body = strings.Replace(body, "1200", "9200", 1)
	missing := standardRequest(t, "msg_nosig", body, now)
	delete(missing.Headers, "webhook-signature")
	get := standardRequest(t, "msg_get", body, now)
	get.RequestContext.HTTP.Method = "GET"
	base64Body := standardRequest(t, "msg_b64", body, now)
	base64Body.Body, base64Body.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(body)), true
	big := strings.Repeat("x", 5000)

	tests := []struct {
		name       string
		req        events.APIGatewayV2HTTPRequest
		wantStatus int
		wantBody   string
		wantQueued int
	}{
		{"new event is accepted", standardRequest(t, "msg_1", body, now), 200, `{"status":"accepted"}`, 1},
		{"redelivery is a duplicate, sent again", standardRequest(t, "msg_1", body, now.Add(time.Minute)), 200, `{"status":"duplicate"}`, 1},
		{"same id with another payload is a conflict", standardRequest(t, "msg_1", `{"type":"payment.succeeded","data":{"amount":1}}`, now), 409, `{"error":"event_id_conflict"}`, 0},
		{"base64 body is verified over its bytes", base64Body, 200, `{"status":"accepted"}`, 1},
		{"tampered body", tampered, 401, `{"error":"bad_signature"}`, 0},
		{"missing signature", missing, 401, `{"error":"missing_signature"}`, 0},
		{"stale timestamp", standardRequest(t, "msg_old", body, now.Add(-6*time.Minute)), 401, `{"error":"stale_timestamp"}`, 0},
		{"future timestamp", standardRequest(t, "msg_future", body, now.Add(6*time.Minute)), 401, `{"error":"stale_timestamp"}`, 0},
		{"malformed json", standardRequest(t, "msg_bad", `{"type":`, now), 400, `{"error":"malformed_body"}`, 0},
		{"oversized body", standardRequest(t, "msg_big", `{"x":"`+big+`"}`, now), 413, `{"error":"body_too_large"}`, 0},
		{"unknown source", request("nope", body, nil), 404, `{"error":"unknown_source"}`, 0},
		{"wrong method", get, 405, `{"error":"method_not_allowed"}`, 0},
		{"stripe event is accepted", request("legacy", stripeBody, map[string]string{"stripe-signature": webhook.SignStripe(stripeSecret, now, []byte(stripeBody))}), 200, `{"status":"accepted"}`, 1},
		{"stripe event without id", request("legacy", `{"type":"x"}`, map[string]string{"stripe-signature": webhook.SignStripe(stripeSecret, now, []byte(`{"type":"x"}`))}), 400, `{"error":"missing_event_id"}`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given a request, when the receiver handles it,
			resp := f.handle(t, tc.req)
			// then the status and body are exactly the documented ones
			if resp.StatusCode != tc.wantStatus || resp.Body != tc.wantBody {
				t.Fatalf("got %d %s, want %d %s", resp.StatusCode, resp.Body, tc.wantStatus, tc.wantBody)
			}
			// and exactly the expected number of messages was enqueued.
			queue := "payments"
			if tc.req.PathParameters["source"] == "legacy" {
				queue = "usage"
			}
			if got := len(f.drain(t, queue)); got != tc.wantQueued {
				t.Fatalf("enqueued %d messages, want %d", got, tc.wantQueued)
			}
		})
	}
}

func TestAcceptedEventIsDurableAndAttributed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil)
	body := `{"type":"payment.succeeded"}`
	if resp := f.handle(t, standardRequest(t, "msg_rec", body, time.Now())); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	rec, ok, err := f.store.Get(context.Background(), "payments", "msg_rec")
	if err != nil || !ok {
		t.Fatalf("intake record: %v %v", ok, err)
	}
	if rec.Status != intake.StatusReceived || rec.Payload != body || rec.PayloadSHA256 != intake.PayloadHash([]byte(body)) || rec.ExpiresAt == 0 || rec.ProviderTimestamp == "" {
		t.Fatalf("record = %+v", rec)
	}
	msgs := f.drain(t, "payments")
	if len(msgs) != 1 || aws.ToString(msgs[0].Body) != body {
		t.Fatalf("messages = %+v", msgs)
	}
	attrs := msgs[0].MessageAttributes
	if aws.ToString(attrs["source"].StringValue) != "payments" || aws.ToString(attrs["event_id"].StringValue) != "msg_rec" || aws.ToString(attrs["received_at"].StringValue) == "" {
		t.Fatalf("attributes = %+v", attrs)
	}
}

// TestAWSCallsPerEvent counts the calls of each intake case: a new event
// is one PutItem and one SendMessage; a redelivery waits out the send
// lease, takes it and sends again.
func TestAWSCallsPerEvent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil)
	req := standardRequest(t, "msg_calls", `{"a":1}`, time.Now())
	f.handle(t, req)
	if got, sent := f.calls(); got != 2 || sent != 1 {
		t.Fatalf("new event made %d AWS calls (%d SQS), want 2 (PutItem, SendMessage)", got, sent)
	}
	// PutItem, UpdateItem and SendMessage; minidyn omits the ALL_OLD item
	// of the failed put, so the fallback read is the one extra call here
	// that AWS itself never needs.
	resp := f.handle(t, req)
	if got, sent := f.calls(); got < 3 || got > 4 || sent != 1 || resp.Body != `{"status":"duplicate"}` {
		t.Fatalf("redelivery: %d %s after %d AWS calls (%d SQS), want 200 duplicate after 3 (4 on minidyn) with one send",
			resp.StatusCode, resp.Body, got, sent)
	}
}

// TestConcurrentDeliveriesEnqueueOnce: providers retry in parallel. Of
// deliveries that meet, one sends; the others wait out its send lease,
// one of them takes it and sends again, and the rest answer 503
// in_progress. So there is at most one more message per lease, and
// exactly one delivery is the first.
func TestConcurrentDeliveriesEnqueueOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil)
	req := standardRequest(t, "msg_conc", `{"a":1}`, time.Now())
	start := time.Now()
	var wg sync.WaitGroup
	answers := make([]string, 5)
	for i := range answers {
		wg.Go(func() {
			resp := f.handle(t, req)
			answers[i] = fmt.Sprint(resp.StatusCode, " ", resp.Body)
		})
	}
	wg.Wait()
	count := map[string]int{}
	for _, a := range answers {
		count[a]++
	}
	accepted, dup, busy := count[`200 {"status":"accepted"}`], count[`200 {"status":"duplicate"}`], count[`503 {"error":"in_progress"}`]
	// One more send per lease that ran out while they were answered: one,
	// unless a delivery was held up for a whole lease before its put.
	leases := max(1, int(time.Since(start)/f.lease))
	if accepted != 1 || dup > leases || accepted+dup+busy != len(answers) {
		t.Fatalf("answers %v, want one accepted, at most %d duplicates, the rest in_progress", count, leases)
	}
	if n := len(f.drain(t, "payments")); n != accepted+dup {
		t.Fatalf("enqueued %d times, want %d", n, accepted+dup)
	}
}

func TestCrashBetweenRecordAndSendIsSentOnRedelivery(t *testing.T) {
	t.Parallel()
	// Given a first attempt whose send failed (SQS down) after the record,
	down := testkit.DeadSQS(t)
	f := newFixture(t, nil, nil)
	broken, err := intake.New(intake.Config{DynamoDB: f.env.DynamoDB, SQS: down, Table: f.env.TableName("IntakeTable"), Lease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"a":2}`)
	ev := intake.Event{Source: "payments", EventID: "msg_crash", QueueURL: f.env.QueueURL("payments"), Payload: body}
	if _, err := broken.Accept(context.Background(), ev); err == nil {
		t.Fatal("accept with SQS down succeeded")
	}
	rec, _, _ := f.store.Get(context.Background(), "payments", "msg_crash")
	if rec.Status != intake.StatusReceived {
		t.Fatalf("status after failed send = %s, want received", rec.Status)
	}
	// when the provider redelivers,
	resp := f.handle(t, standardRequest(t, "msg_crash", string(body), time.Now()))
	// then it is sent now, once.
	if resp.StatusCode != 200 || resp.Body != `{"status":"accepted"}` {
		t.Fatalf("redelivery got %d %s", resp.StatusCode, resp.Body)
	}
	if n := len(f.drain(t, "payments")); n != 1 {
		t.Fatalf("enqueued %d, want 1", n)
	}
}

func TestDependencyDownAnswers503(t *testing.T) {
	t.Parallel()
	deadDDB := testkit.DeadDynamoDB(t)
	tests := []struct {
		name string
		ddb  intake.DynamoDBAPI
		sqs  intake.SQSAPI
	}{
		{"dynamodb down", deadDDB, nil},
		{"sqs down", nil, testkit.DeadSQS(t)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.ddb, tc.sqs)
			resp := f.handle(t, standardRequest(t, "msg_down", `{"a":1}`, time.Now()))
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Headers["Retry-After"] == "" || resp.Body != `{"error":"unavailable"}` {
				t.Fatalf("got %d %v %s", resp.StatusCode, resp.Headers, resp.Body)
			}
			if n := len(f.drain(t, "payments")); n != 0 {
				t.Fatalf("enqueued %d messages with a dependency down", n)
			}
			if tc.ddb == nil {
				rec, ok, _ := f.store.Get(context.Background(), "payments", "msg_down")
				if !ok || rec.Status == intake.StatusEnqueued {
					t.Fatalf("record = %+v (found %v); want received, never enqueued", rec, ok)
				}
			}
		})
	}
}

func TestOutcomesAreCountedAsEMF(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil)
	var lines bytes.Buffer
	h, err := receiver.New(receiver.Config{Intake: f.store, Metrics: emf.New(&lines, "hookline"), Sources: []receiver.Source{{
		Spec:     webhook.SourceSpec{Name: "payments", Scheme: webhook.SchemeStandard, SecretEnv: "PAY"},
		QueueURL: f.env.QueueURL("payments"), Secrets: secrets.Env{Lookup: func(string) (string, bool) { return standardSecret, true }},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	good := standardRequest(t, "msg_emf", `{"a":1}`, time.Now().Add(-2*time.Second))
	bad := standardRequest(t, "msg_emf_bad", `{"a":1}`, time.Now())
	bad.Body = `{"a":2}`
	// A record an older build marked enqueued answers duplicate.
	old := standardRequest(t, "msg_emf_old", `{"a":3}`, time.Now())
	putEnqueuedRecord(t, f, "payments", "msg_emf_old", `{"a":3}`)
	for _, req := range []events.APIGatewayV2HTTPRequest{good, old, bad} {
		h.Handle(context.Background(), req)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(lines.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		for _, name := range []string{receiver.MetricAccepted, receiver.MetricDuplicate, receiver.MetricRejected, receiver.MetricEventToIntake} {
			if _, ok := m[name]; ok {
				seen[name] = true
				if name == receiver.MetricRejected && m["Reason"] != "bad_signature" {
					t.Fatalf("rejection line without its reason: %s", line)
				}
			}
		}
	}
	for _, name := range []string{receiver.MetricAccepted, receiver.MetricDuplicate, receiver.MetricRejected, receiver.MetricEventToIntake} {
		if !seen[name] {
			t.Errorf("no %s metric in:\n%s", name, lines.String())
		}
	}
}

// putEnqueuedRecord writes the record of an event as builds before the
// intake dropped its second write left it: marked enqueued.
func putEnqueuedRecord(t *testing.T, f *fixture, source, eventID, body string) {
	t.Helper()
	item, err := attributevalue.MarshalMap(intake.Record{PK: intake.Key(source, eventID), Source: source, EventID: eventID,
		ReceivedAt: time.Now().UTC().Format(time.RFC3339), PayloadSHA256: intake.PayloadHash([]byte(body)), Payload: body,
		Status: intake.StatusEnqueued, MessageID: "m-1", ExpiresAt: time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(f.env.TableName("IntakeTable")), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// TestUnknownSourcesShareOneMetricDimension: a caller who sends to
// /webhooks/<anything> must not create a CloudWatch metric per path segment.
func TestUnknownSourcesShareOneMetricDimension(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil)
	var lines bytes.Buffer
	h, err := receiver.New(receiver.Config{Intake: f.store, Metrics: emf.New(&lines, "hookline"), Sources: []receiver.Source{{
		Spec:     webhook.SourceSpec{Name: "payments", Scheme: webhook.SchemeStandard, SecretEnv: "PAY"},
		QueueURL: f.env.QueueURL("payments"), Secrets: secrets.Env{Lookup: func(string) (string, bool) { return standardSecret, true }},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	// given requests to many made-up sources, and one with no source at all
	for _, name := range []string{"random-1", "random-2", "x%00y", strings.Repeat("z", 300), ""} {
		// when each is handled
		res, _ := h.Handle(context.Background(), request(name, `{}`, nil))
		if res.StatusCode != 404 {
			t.Fatalf("source %q answered %d, want 404", name, res.StatusCode)
		}
	}
	// then every metric line carries the one fixed source dimension
	sources := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(lines.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		sources[fmt.Sprint(m["Source"])] = true
	}
	if len(sources) != 1 || !sources[receiver.UnknownSource] {
		t.Fatalf("source dimensions %v, want only %q", sources, receiver.UnknownSource)
	}
}

// TestMaxBodyMustFitOneMessage: a body limit above what one SQS message
// (and one DynamoDB item) holds is refused at start-up, not discovered as
// a 413 or a 503 per large webhook.
func TestMaxBodyMustFitOneMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil)
	for _, tc := range []struct {
		name    string
		maxBody int64
		ok      bool
	}{
		{name: "default", maxBody: 0, ok: true},
		{name: "exactly the message limit", maxBody: intake.MaxMessageBody, ok: true},
		{name: "one byte over", maxBody: intake.MaxMessageBody + 1},
		{name: "what one intake record holds", maxBody: intake.MaxPayload},
		{name: "the DynamoDB item limit itself", maxBody: intake.MaxItemSize},
		{name: "1 MiB", maxBody: 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// given a source whose max_body is tc.maxBody
			_, err := receiver.New(receiver.Config{Intake: f.store, Sources: []receiver.Source{{
				Spec:     webhook.SourceSpec{Name: "payments", Scheme: webhook.SchemeStandard, SecretEnv: "PAY", MaxBody: tc.maxBody},
				QueueURL: f.env.QueueURL("payments"), Secrets: secrets.Env{},
			}}})
			// then start-up fails exactly when it cannot fit one message
			if (err == nil) != tc.ok {
				t.Fatalf("New with max_body %d: err = %v, want ok=%v", tc.maxBody, err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "SQS") {
				t.Fatalf("error does not say why: %v", err)
			}
		})
	}
}

// TestABodyThatIsNotUTF8IsRefused: JSON is UTF-8 (RFC 8259), and an SQS
// message body is text: the SDK's JSON encoding replaces each invalid
// byte with U+FFFD, so a signed body with one would reach the worker
// altered, and no longer match what was signed. It is refused with 400
// before anything is recorded or sent.
func TestABodyThatIsNotUTF8IsRefused(t *testing.T) {
	// Given a correctly signed body with an invalid UTF-8 byte in a string
	f := newFixture(t, nil, nil)
	body := "{\"type\":\"payment.succeeded\",\"data\":{\"note\":\"caf\xe9\"}}"
	// When the receiver handles it
	resp := f.handle(t, standardRequest(t, "msg_latin1", body, time.Now()))
	// Then it is refused as malformed, and nothing was recorded or sent
	msgs := f.drain(t, "payments")
	if resp.StatusCode != 400 || resp.Body != `{"error":"malformed_body"}` {
		sent := ""
		if len(msgs) == 1 {
			sent = fmt.Sprintf("; the queue got %q for the signed %q", aws.ToString(msgs[0].Body), body)
		}
		t.Fatalf("got %d %s%s; want 400 malformed_body", resp.StatusCode, resp.Body, sent)
	}
	if len(msgs) != 0 {
		t.Fatalf("enqueued %d messages, want none", len(msgs))
	}
	if _, ok, err := f.store.Get(context.Background(), "payments", "msg_latin1"); ok || err != nil {
		t.Fatalf("intake record of a refused body: found %v, %v", ok, err)
	}
}
