package ops_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/spendledger"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/pkg/idempotency"
)

// harness is local AWS with every template resource, and the ops built
// on it the way the CLI builds them.
type harness struct {
	env      *localaws.Env
	resolver *ops.Resolver
	ops      *ops.Ops
	registry *idempotency.Registry
	spend    *spend.Spend
	intake   *intake.Store
	lookup   map[string]string
}

type harnessOptions struct {
	// sqs wraps the SQS client ops uses (fault injection).
	sqs func(ops.SQSAPI) ops.SQSAPI
	now func() time.Time
	// vars are the operator's environment variables.
	vars map[string]string
}

func newHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	h := &harness{env: localaws.StartForTest(t), lookup: map[string]string{}}
	maps.Copy(h.lookup, o.vars)
	// Point every variable at this run's resources, so the tests pass with
	// the prefixed names of a shared external endpoint too.
	for _, q := range h.env.Template.Queues {
		h.lookup[config.QueueURLVar(q.Name)] = h.env.QueueURL(q.Name)
	}
	var err error
	h.resolver, err = ops.NewResolver(ops.ResolverConfig{Template: h.env.Template, SQS: h.env.SQS, Lookup: h.lookupVar})
	must(t, err)
	for _, tb := range h.env.Template.Tables {
		for _, v := range h.resolver.TableVars(tb.LogicalID) {
			h.lookup[v] = h.env.TableName(tb.LogicalID)
		}
	}
	store, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: h.env.DynamoDB, Table: h.env.TableName("IdempotencyTable")})
	must(t, err)
	h.registry, err = idempotency.New(idempotency.Config{Store: store, Namespace: "payments"})
	must(t, err)
	spendCfg, err := config.SpendFromEnv(func(k string) (string, bool) {
		if k == "RECON_ROUTING_KEY" {
			return "test-route", true
		}
		return h.lookupVar(k)
	})
	must(t, err)
	spendCfg.PagerURL = "http://127.0.0.1:9"
	ledger, err := spendledger.New(app.Deps{Clients: app.Clients{DynamoDB: h.env.DynamoDB, SQS: h.env.SQS}}, spendCfg)
	must(t, err)
	h.spend = ledger.Spend
	h.intake, err = intake.New(intake.Config{DynamoDB: h.env.DynamoDB, SQS: h.env.SQS, Table: h.env.TableName("IntakeTable"), Now: o.now})
	must(t, err)
	checkers, err := ops.NewCheckers(h.resolver, ops.CheckerDeps{DynamoDB: h.env.DynamoDB, Ledger: h.spend.Ledger})
	must(t, err)
	var client ops.SQSAPI = h.env.SQS
	if o.sqs != nil {
		client = o.sqs(client)
	}
	h.ops, err = ops.New(ops.Config{SQS: client, Resolver: h.resolver, Checkers: checkers, Intake: h.intake})
	must(t, err)
	return h
}

func (h *harness) lookupVar(k string) (string, bool) {
	v, ok := h.lookup[k]
	return v, ok
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func paymentBody(eventID string, amount int64) string {
	return fmt.Sprintf(`{"id":%q,"type":"payment.requested","data":{"customer":"cus_%s","amount":%d,"currency":"usd"}}`, eventID, eventID, amount)
}

func str(v string) sqstypes.MessageAttributeValue {
	return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

// deadLetter puts a message on a queue as a worker dead-letters it: the
// intake attributes plus the failure attributes.
func (h *harness) deadLetter(t *testing.T, queue, source, eventID, body string) {
	t.Helper()
	h.deadLetterWith(t, queue, source, eventID, body, nil)
}

// deadLetterWith is deadLetter with more message attributes.
func (h *harness) deadLetterWith(t *testing.T, queue, source, eventID, body string, more map[string]string) {
	t.Helper()
	attrs := map[string]sqstypes.MessageAttributeValue{
		"source": str(source), "event_id": str(eventID), "received_at": str("2026-01-02T03:04:05.000Z"),
		"failure_reason": str("retries_exhausted: provider_retriable"), "first_failure_reason": str("provider_retriable"),
		"failed_at": str("2026-01-02T03:09:05Z"), "receive_count": str("5"),
	}
	for k, v := range more {
		attrs[k] = str(v)
	}
	_, err := h.env.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(h.env.QueueURL(queue)), MessageBody: aws.String(body), MessageAttributes: attrs,
	})
	must(t, err)
}

// drain receives and deletes every message of a queue and returns them.
func (h *harness) drain(t *testing.T, queue string) []sqstypes.Message {
	t.Helper()
	url := h.env.QueueURL(queue)
	var out []sqstypes.Message
	for {
		got, err := h.env.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 30,
			MessageAttributeNames: []string{"All"},
		})
		must(t, err)
		if len(got.Messages) == 0 {
			return out
		}
		for _, m := range got.Messages {
			_, err := h.env.SQS.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
			must(t, err)
			out = append(out, m)
		}
	}
}

// counts returns a queue's visible and in-flight counts.
func (h *harness) counts(t *testing.T, queue string) (visible, inFlight int) {
	t.Helper()
	out, err := h.env.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(h.env.QueueURL(queue)),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	must(t, err)
	visible, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	inFlight, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return visible, inFlight
}

func eventIDs(msgs []sqstypes.Message) map[string]int {
	out := map[string]int{}
	for _, m := range msgs {
		if a, ok := m.MessageAttributes["event_id"]; ok {
			out[aws.ToString(a.StringValue)]++
		}
	}
	return out
}

// waitCounts waits (2 s at most: the emulator applies sends, deletes and
// visibility changes a moment after answering) until a queue has the
// given visible and in-flight counts. A message left hidden by mistake
// stays hidden far longer, so this still fails then.
func (h *harness) waitCounts(t *testing.T, queue string, visible, inFlight int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		v, f := h.counts(t, queue)
		if v == visible && f == inFlight {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d visible, %d in flight; want %d, %d", queue, v, f, visible, inFlight)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
