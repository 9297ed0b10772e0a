package paymentworker_test

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/testkit"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
)

func events_(prefix string, n int) map[string]string {
	bodies := make(map[string]string, n)
	for i := range n {
		id := fmt.Sprintf("%s_%05d", prefix, i)
		bodies[id] = paymentBody(id, int64(1000+(i%50)*10))
	}
	return bodies
}

// lostAckRun pushes n events through the worker while every 500th
// acknowledgement (0.2%) is lost, and returns the duplicate charges.
func lostAckRun(t *testing.T, n int, noRegistry bool) (duplicates, dropped int) {
	var acks atomic.Int64
	r := newRig(t, rigOptions{noRegistry: noRegistry, dropAck: func(string) bool { return acks.Add(1)%500 == 0 }})
	r.enqueue(t, events_("evt_lost", n))
	testkit.Eventually(t, 3*time.Minute, "every event charged and every message acknowledged", func() bool {
		return r.sim.Charges.TotalCharges()-r.sim.Charges.Duplicates() == n && r.acked() >= n
	})
	// Each lost acknowledgement's message was deleted when it came back,
	// so the deletes reach n only after every redelivery. A message deleted
	// twice (its visibility lapsed mid-processing) can make that early, so
	// give any straggler one more visibility timeout before counting.
	time.Sleep(3 * time.Second)
	return r.sim.Charges.Duplicates(), int(r.mapping.Stats().DroppedAcks.Load())
}

var lostAckEvents = flag.Int("lost-ack-events", 2500, "lost-acknowledgement drill: events per run (make test runs 2,500; make soak 10,000)")

// TestDrillLostAcknowledgements runs 2,500 events with the registry and
// 2,500 without it, at once (make soak: 10,000 each, -lost-ack-events).
func TestDrillLostAcknowledgements(t *testing.T) {
	t.Parallel()
	n := *lostAckEvents
	if testing.Short() {
		n = 1000
	}
	// Given 0.2% of successful deletes lost (each comes back after its
	// visibility timeout) and a provider that ignores idempotency keys,
	// when n events go through the worker with the registry, and at the
	// same time through another worker without it,
	var dup, dropped, dupOff, droppedOff int
	t.Run("runs", func(t *testing.T) {
		t.Run("registry", func(t *testing.T) {
			t.Parallel()
			dup, dropped = lostAckRun(t, n, false)
		})
		t.Run("no registry", func(t *testing.T) {
			t.Parallel()
			dupOff, droppedOff = lostAckRun(t, n, true)
		})
	})
	if t.Failed() {
		return
	}
	fmt.Printf("lost-ack drill: %d events, %d/%d acks lost: %d duplicate charges with the registry, %d without\n", n, dropped, droppedOff, dup, dupOff)
	// then the registry allows no duplicate charge,
	if dropped == 0 || dup != 0 {
		t.Fatalf("with registry: %d acks lost, %d duplicate charges; want > 0 and 0", dropped, dup)
	}
	// and the same run without it does charge twice, so the drill can fail.
	if dupOff == 0 {
		t.Fatalf("without registry: %d acks lost but no duplicate charge; the drill proves nothing", droppedOff)
	}
}

func TestDrillSameEventFiveTimesConcurrently(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	body := paymentBody("evt_five", 4200)
	copies := map[string]string{}
	for i := range 5 {
		copies[fmt.Sprintf("evt_five#%d", i)] = body
	}
	r.enqueue(t, copies)
	testkit.Eventually(t, time.Minute, "all five copies acknowledged", func() bool { return r.acked() >= 5 })
	if got := r.sim.Charges.ChargeCount("evt_five"); got != 1 {
		t.Fatalf("charged %d times, want 1", got)
	}
}

func TestDrillCrashBetweenClaimAndCharge(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	// Given a worker that claimed the key and died before charging (its
	// invocation deadline bounds the claim),
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	held, err := r.reg.Claim(ctx, "payments:evt_crash1", paymentworker.Payment{Charge: provider.ChargeRequest{Customer: "cus_evt_crash1", Amount: 1500, Currency: "usd"}}.Hash())
	must(t, err)
	if held.Status != idempotency.StatusClaimed {
		t.Fatalf("setup claim = %v", held.Status)
	}
	// when the message is delivered,
	r.enqueue(t, map[string]string{"evt_crash1": paymentBody("evt_crash1", 1500)})
	// then after the dead claim expires exactly one charge is made.
	testkit.Eventually(t, time.Minute, "message acknowledged", func() bool { return r.acked() >= 1 })
	if got := r.sim.Charges.ChargeCount("evt_crash1"); got != 1 {
		t.Fatalf("charged %d times, want 1", got)
	}
	rec, ok, err := r.reg.Status(context.Background(), "payments:evt_crash1")
	if err != nil || !ok || rec.State != idempotency.StateCompleted {
		t.Fatalf("key = %+v (%v, %v), want COMPLETED", rec, ok, err)
	}
}

func TestDrillCrashBetweenChargeAndComplete(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	p, err := paymentworker.ParseMessage(sqsMessage("evt_crash2", paymentBody("evt_crash2", 2500)))
	must(t, err)
	// Given a worker that claimed, charged and died before Complete,
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = r.reg.Claim(ctx, p.Key(), p.Hash())
	must(t, err)
	if res := r.client.CreateCharge(ctx, p.Key(), p.Charge); res.Outcome != provider.Succeeded {
		t.Fatalf("setup charge: %v %v", res.Outcome, res.Err)
	}
	// when the message is delivered (to a provider that ignores keys),
	r.enqueue(t, map[string]string{"evt_crash2": paymentBody("evt_crash2", 2500)})
	testkit.Eventually(t, time.Minute, "message acknowledged", func() bool { return r.acked() >= 1 })
	// then the takeover finds the charge instead of making a second one.
	if got := r.sim.Charges.ChargeCount("evt_crash2"); got != 1 {
		t.Fatalf("charged %d times, want 1", got)
	}
	rec, _, _ := r.reg.Status(context.Background(), p.Key())
	if rec.State != idempotency.StateCompleted || !strings.Contains(string(rec.Result), `"status":"succeeded"`) {
		t.Fatalf("key = %+v, want COMPLETED with the found charge", rec)
	}
}

func TestDrillProviderStorms(t *testing.T) {
	t.Parallel()
	kinds := []providersim.Fault{
		{Kind: providersim.FaultServerError},
		{Kind: providersim.FaultRateLimit, RetryAfter: "0"},
		{Kind: providersim.FaultTimeoutBeforeCharge},
		{Kind: providersim.FaultReset},
		{Kind: providersim.FaultTimeoutAfterCharge},
		{Kind: providersim.FaultDropAfterCharge},
	}
	for _, f := range kinds {
		t.Run(f.Kind.String(), func(t *testing.T) {
			t.Parallel()
			// The function gets 10 s (the template gives 30) so a batch whose
			// calls all hang until the client's timeout still finishes in time.
			r := newRig(t, rigOptions{maxReceive: 20, timeout: 10 * time.Second})
			// Given a provider failing 30% of charge calls this way,
			r.sim.Faults.SetFaultRate(0.3, f)
			// when 100 events go through,
			n := 100
			r.enqueue(t, events_("evt_storm", n))
			testkit.Eventually(t, 3*time.Minute, "every event charged", func() bool {
				return r.sim.Charges.TotalCharges()-r.sim.Charges.Duplicates() == n && r.acked() >= n
			})
			// then each is charged once, retried through the faults.
			if r.sim.Charges.Duplicates() != 0 || r.sim.Faults.FaultsInjected()[f.Kind] == 0 {
				t.Fatalf("%d duplicates, %d faults injected", r.sim.Charges.Duplicates(), r.sim.Faults.FaultsInjected()[f.Kind])
			}
		})
	}
}

func dlqMessages(t *testing.T, r *rig) []map[string]string {
	t.Helper()
	out, err := r.env.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(r.env.QueueURL("payments-dlq")), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"},
	})
	must(t, err)
	var msgs []map[string]string
	for _, m := range out.Messages {
		attrs := map[string]string{"body": aws.ToString(m.Body)}
		for k, v := range m.MessageAttributes {
			attrs[k] = aws.ToString(v.StringValue)
		}
		msgs = append(msgs, attrs)
	}
	return msgs
}

func TestDrillPoisonMessagesReachTheDLQWithTheirReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		setup  func(*rig)
		reason string
	}{
		{"malformed body", `{"id":"evt_poison","type":"payment.requested","data":{"amount":"lots"}}`, nil,
			`malformed_message: source "payments": customer: /data/customer is missing; currency: /data/currency is missing; amount: /data/amount is not a number`},
		{"provider keeps failing", paymentBody("evt_down", 3000), func(r *rig) {
			r.sim.Faults.SetFaultRate(1, providersim.Fault{Kind: providersim.FaultServerError})
		}, "retries_exhausted: provider_outcome_unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOptions{})
			if tc.setup != nil {
				tc.setup(r)
			}
			id := "evt_poison"
			if strings.Contains(tc.body, "evt_down") {
				id = "evt_down"
			}
			r.enqueue(t, map[string]string{id: tc.body})
			var got []map[string]string
			testkit.Eventually(t, time.Minute, "dead-lettered", func() bool {
				got = append(got, dlqMessages(t, r)...)
				return len(got) > 0 && r.acked() >= 1
			})
			if len(got) != 1 || got[0]["failure_reason"] != tc.reason || got[0]["first_failure_reason"] != tc.reason || got[0]["event_id"] != id || got[0]["body"] != tc.body {
				t.Fatalf("dead letters = %+v, want one for %s with reason %q", got, id, tc.reason)
			}
			if r.sim.Charges.TotalCharges() != 0 {
				t.Fatalf("a poison message was charged")
			}
		})
	}
}

func TestDrillPayloadMismatchNeverCharges(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.enqueue(t, map[string]string{"evt_mm": paymentBody("evt_mm", 1000)})
	testkit.Eventually(t, time.Minute, "first charged", func() bool { return r.sim.Charges.ChargeCount("evt_mm") == 1 && r.acked() >= 1 })
	// The same event ID with another amount is not a duplicate: it is an
	// error, dead-lettered with its reason and never charged.
	r.enqueue(t, map[string]string{"evt_mm": paymentBody("evt_mm", 9000)})
	var got []map[string]string
	testkit.Eventually(t, time.Minute, "mismatch dead-lettered", func() bool {
		got = append(got, dlqMessages(t, r)...)
		return len(got) > 0
	})
	if got[0]["failure_reason"] != "payload_mismatch" || r.sim.Charges.ChargeCount("evt_mm") != 1 {
		t.Fatalf("dead letter %+v, %d charges", got[0], r.sim.Charges.ChargeCount("evt_mm"))
	}
}

func sqsMessage(eventID, body string) events.SQSMessage {
	src, id := "payments", eventID
	return events.SQSMessage{
		MessageId: "m-" + eventID, Body: body, Attributes: map[string]string{"ApproximateReceiveCount": "1"},
		MessageAttributes: map[string]events.SQSMessageAttribute{
			"source": {StringValue: &src, DataType: "String"}, "event_id": {StringValue: &id, DataType: "String"},
		},
	}
}

func TestReplayReturnsStoredResultWithoutCallingProvider(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	counting := &countingCharger{Charger: r.client}
	w, err := paymentworker.New(paymentworker.Config{Registry: r.reg, Provider: counting, Queue: noQueue{}})
	must(t, err)
	msg := sqsMessage("evt_replay", paymentBody("evt_replay", 7700))
	for i := range 3 {
		resp, err := w.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg}})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("delivery %d: %+v %v", i, resp, err)
		}
	}
	if counting.calls.Load() != 1 || r.sim.Charges.ChargeCount("evt_replay") != 1 {
		t.Fatalf("provider called %d times, %d charges; want 1 and 1", counting.calls.Load(), r.sim.Charges.ChargeCount("evt_replay"))
	}
	rec, _, _ := r.reg.Status(context.Background(), "payments:evt_replay")
	if !strings.Contains(string(rec.Result), `"amount":7700`) {
		t.Fatalf("stored result %s", rec.Result)
	}
}

func TestDeclineCompletesWithoutRetry(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	counting := &countingCharger{Charger: r.client}
	w, err := paymentworker.New(paymentworker.Config{Registry: r.reg, Provider: counting, Queue: noQueue{}})
	must(t, err)
	// Amounts ending in 02 are declined by the simulator.
	msg := sqsMessage("evt_decl", paymentBody("evt_decl", 1002))
	for range 2 {
		resp, _ := w.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg}})
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("a decline was retried: %+v", resp)
		}
	}
	rec, _, _ := r.reg.Status(context.Background(), "payments:evt_decl")
	if counting.calls.Load() != 1 || !strings.Contains(string(rec.Result), `"status":"declined"`) {
		t.Fatalf("%d provider calls, result %s", counting.calls.Load(), rec.Result)
	}
}

// noQueue is a queue that must not be used.
type noQueue struct{}

func (noQueue) RetryAfter(context.Context, string, time.Duration) {}
func (noQueue) DeadLetter(context.Context, events.SQSMessage, string) error {
	return fmt.Errorf("unexpected dead letter")
}
func (noQueue) MaxReceiveCount(context.Context) int { return 5 }
