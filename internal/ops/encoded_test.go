package ops_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/testkit"
)

// A payload that SQS would refuse as a message body (a character
// outside its set, such as U+FFFF) travels gzip-compressed and then
// base64-encoded, with the message attribute body_encoding=gzip+base64
// (docs/intake-ordering.md). The operator's readers decode it.

// encodedBody is payload as such a message carries it.
func encodedBody(t *testing.T, payload string) string {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, err := io.WriteString(w, payload)
	must(t, err)
	must(t, w.Close())
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// decodedBody is the payload a received message carries.
func decodedBody(t *testing.T, m sqstypes.Message) string {
	t.Helper()
	body := aws.ToString(m.Body)
	if a, ok := m.MessageAttributes["body_encoding"]; !ok || aws.ToString(a.StringValue) != "gzip+base64" {
		return body
	}
	gz, err := base64.StdEncoding.DecodeString(body)
	must(t, err)
	r, err := gzip.NewReader(bytes.NewReader(gz))
	must(t, err)
	p, err := io.ReadAll(r)
	must(t, err)
	return string(p)
}

// ffffPaymentBody is a payment body with U+FFFF in a customer's name.
func ffffPaymentBody(eventID string, amount int64) string {
	return fmt.Sprintf(`{"id":%q,"type":"payment.requested","data":{"customer":"cus_%s","amount":%d,"currency":"usd","name":"Ada `+"\uffff"+`"}}`,
		eventID, eventID, amount)
}

var gzipBase64 = map[string]string{"body_encoding": "gzip+base64"}

func TestPeekAndRedriveReadAnEncodedBody(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	// Given two payments dead-lettered with encoded bodies, one of them
	// already charged (its key COMPLETED),
	for _, id := range []string{"evt_enc_done", "evt_enc_new"} {
		body := ffffPaymentBody(id, 1200)
		if id == "evt_enc_done" {
			p, err := paymentworker.ParseMessage(events.SQSMessage{Body: body, MessageAttributes: map[string]events.SQSMessageAttribute{
				"source": {DataType: "String", StringValue: aws.String("payments")}, "event_id": {DataType: "String", StringValue: aws.String(id)},
			}})
			must(t, err)
			c, err := h.registry.Claim(ctx, p.Key(), p.Hash())
			must(t, err)
			must(t, h.registry.Complete(ctx, p.Key(), c.Token, []byte(`{"charge_id":"ch_1","status":"succeeded"}`)))
		}
		h.deadLetterWith(t, "payments-dlq", "payments", id, encodedBody(t, body), gzipBase64)
	}
	// and a usage record the ledger holds, dead-lettered encoded
	overCap(t, h)
	h.deadLetterWith(t, "usage-dlq", "usage", "evt_usage_rec_1", encodedBody(t, usageBody("rec_1", "workload-7", 900)), gzipBase64)
	testkit.Eventually(t, 30*time.Second, "messages counted", func() bool {
		p, _ := h.counts(t, "payments-dlq")
		u, _ := h.counts(t, "usage-dlq")
		return p == 2 && u == 1
	})
	// when the operator peeks, each shows the state of its effect
	for queue, want := range map[string]map[string]string{
		"payments-dlq": {"payments:evt_enc_done": "COMPLETED true", "payments:evt_enc_new": "none false"},
		"usage-dlq":    {"rec_1": "APPLIED true"},
	} {
		msgs, err := h.ops.Peek(ctx, queue, 10)
		must(t, err)
		states := statesByEvent(msgs, func(m ops.Message) (string, string) {
			return m.Status.Key, fmt.Sprint(m.Status.State, " ", m.Status.Done, m.Status.Error)
		})
		if !equalMaps(states, want) {
			t.Fatalf("%s: states %v, want %v", queue, states, want)
		}
	}
	// and a redrive that skips completed keys moves only the new one,
	// still encoded
	rep, err := h.ops.Redrive(ctx, ops.RedriveOptions{Queue: "payments-dlq", SkipCompleted: true})
	must(t, err)
	outcomes := statesByEvent(rep.Items, func(it ops.RedriveItem) (string, string) { return it.EventID, it.Outcome })
	if want := map[string]string{"evt_enc_done": ops.OutcomeSkipped, "evt_enc_new": ops.OutcomeMoved}; !equalMaps(outcomes, want) {
		t.Fatalf("outcomes %v, want %v", outcomes, want)
	}
	moved := h.drain(t, "payments")
	if len(moved) != 1 || decodedBody(t, moved[0]) != ffffPaymentBody("evt_enc_new", 1200) {
		t.Fatalf("source queue got %d messages, want evt_enc_new's payload", len(moved))
	}
}

func TestReplaySendsAPayloadSQSWouldRefuseAsItsBody(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	// Given a payment accepted with U+FFFF in a customer's name, consumed
	payload := ffffPaymentBody("evt_rep_ffff", 700)
	if _, err := h.intake.Accept(ctx, intake.Event{Source: "payments", EventID: "evt_rep_ffff", QueueURL: h.env.QueueURL("payments"),
		Payload: []byte(payload)}); err != nil {
		t.Fatalf("accept: %v", err)
	}
	testkit.Eventually(t, 30*time.Second, "enqueued", func() bool { vis, _ := h.counts(t, "payments"); return vis == 1 })
	h.drain(t, "payments")
	// when the operator replays it
	rep, err := h.ops.Replay(ctx, ops.ReplayOptions{Source: "payments", EventIDs: []string{"evt_rep_ffff"}})
	must(t, err)
	// then it is sent, and the message carries the payload as it came
	if rep.Sent != 1 || rep.Failed != 0 {
		t.Fatalf("replay %+v", rep)
	}
	msgs := h.drain(t, "payments")
	if len(msgs) != 1 || decodedBody(t, msgs[0]) != payload {
		t.Fatalf("queue holds %d messages, want the payload once", len(msgs))
	}
}
