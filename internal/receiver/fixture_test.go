package receiver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/receiver"
	"github.com/hookline/hookline/pkg/secrets"
	"github.com/hookline/hookline/pkg/webhook"
)

// fixtureSecret signed testdata/events/http-api-request.json at its
// webhook-timestamp, 2026-11-30T10:00:00Z.
const fixtureSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestHandlesTheHTTPAPIFixture: the request exactly as API Gateway
// delivers it (testdata/events/http-api-request.json) is verified,
// recorded and enqueued, then recognised as a duplicate.
func TestHandlesTheHTTPAPIFixture(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../testdata/events/http-api-request.json")
	if err != nil {
		t.Fatal(err)
	}
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(data, &req); err != nil {
		t.Fatal(err)
	}
	env := localaws.StartForTest(t)
	store, err := intake.New(intake.Config{DynamoDB: env.DynamoDB, SQS: env.SQS, Table: env.TableName("IntakeTable")})
	if err != nil {
		t.Fatal(err)
	}
	signedAt := time.Date(2026, 11, 30, 10, 0, 1, 0, time.UTC)
	h, err := receiver.New(receiver.Config{Intake: store, Now: func() time.Time { return signedAt }, Sources: []receiver.Source{{
		Spec:     webhook.SourceSpec{Name: "payments", Scheme: webhook.SchemeStandard, SecretEnv: "PAY"},
		QueueURL: env.QueueURL("payments"), Secrets: secrets.Env{Lookup: func(string) (string, bool) { return fixtureSecret, true }},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`200 {"status":"accepted"}`, `200 {"status":"duplicate"}`} {
		res, err := h.Handle(context.Background(), req)
		if got := fmt.Sprint(res.StatusCode, " ", res.Body); err != nil || got != want {
			t.Fatalf("%s (err %v), want %s", got, err, want)
		}
	}
}
