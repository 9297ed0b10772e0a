package ops_test

import (
	"context"
	"errors"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/testkit"
)

// seedPayments dead-letters three payment events: evt_done (its key
// COMPLETED), evt_wip (its key IN_PROGRESS) and evt_new (never processed).
func seedPayments(t *testing.T, h *harness) {
	t.Helper()
	ctx := context.Background()
	for _, id := range []string{"evt_done", "evt_wip", "evt_new"} {
		body := paymentBody(id, 1200)
		p, err := paymentworker.ParseMessage(events.SQSMessage{Body: body, MessageAttributes: map[string]events.SQSMessageAttribute{
			"source": {DataType: "String", StringValue: aws.String("payments")}, "event_id": {DataType: "String", StringValue: aws.String(id)},
		}})
		must(t, err)
		switch id {
		case "evt_done":
			c, err := h.registry.Claim(ctx, p.Key(), p.Hash())
			must(t, err)
			must(t, h.registry.Complete(ctx, p.Key(), c.Token, []byte(`{"charge_id":"ch_1","status":"succeeded"}`)))
		case "evt_wip":
			_, err := h.registry.Claim(ctx, p.Key(), p.Hash())
			must(t, err)
		}
		h.deadLetter(t, "payments-dlq", "payments", id, body)
	}
	// The emulator counts a sent message a moment after SendMessage returns.
	testkit.Eventually(t, 30*time.Second, "three messages counted", func() bool { vis, _ := h.counts(t, "payments-dlq"); return vis == 3 })
}

func statesByEvent[T any](items []T, get func(T) (string, string)) map[string]string {
	out := map[string]string{}
	for _, it := range items {
		k, v := get(it)
		out[k] = v
	}
	return out
}

func TestListDLQs(t *testing.T) {
	t.Parallel()
	// given three messages dead-lettered on payments and none on usage
	h := newHarness(t, harnessOptions{})
	seedPayments(t, h)
	// when the operator lists the dead-letter queues
	got, err := h.ops.ListDLQs(context.Background())
	must(t, err)
	// then both template DLQs are listed with their source and depth, and
	// the sampled age is known only where there are messages
	byName := map[string]ops.DLQInfo{}
	for _, d := range got {
		byName[d.Name] = d
	}
	p, u := byName["payments-dlq"], byName["usage-dlq"]
	if p.Source != "payments" || p.Depth != 3 || !p.AgeKnown || p.Error != "" {
		t.Fatalf("payments-dlq = %+v", p)
	}
	if u.Source != "usage" || u.Depth != 0 || u.AgeKnown || u.Error != "" {
		t.Fatalf("usage-dlq = %+v", u)
	}
	// and listing consumed nothing
	h.waitCounts(t, "payments-dlq", 3, 0)
}

func TestPeekLeavesMessagesVisible(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	seedPayments(t, h)
	for round := 1; round <= 2; round++ {
		// when the operator peeks (twice)
		msgs, err := h.ops.Peek(context.Background(), "payments-dlq", 10)
		must(t, err)
		// then every message is shown with its key's state and failure reasons
		states := statesByEvent(msgs, func(m ops.Message) (string, string) { return m.EventID, m.Status.State })
		want := map[string]string{"evt_done": ops.StateCompleted, "evt_wip": ops.StateInProgress, "evt_new": ops.StateNone}
		if len(msgs) != 3 || !equalMaps(states, want) {
			t.Fatalf("round %d: states %v, want %v", round, states, want)
		}
		for _, m := range msgs {
			if m.EventID == "evt_wip" && (m.Status.Attempts != 1 || m.Status.HeldUntil.IsZero()) {
				t.Fatalf("round %d: the claim's attempt and lease are not shown: %+v", round, m.Status)
			}
			if m.Status.Key != "payments:"+m.EventID || m.ReceiveCount != 5 || m.FirstFailureReason != "provider_retriable" ||
				!strings.HasPrefix(m.FailureReason, "retries_exhausted") || m.SentAt.IsZero() {
				t.Fatalf("round %d: message %+v", round, m)
			}
		}
		// and all of them are visible again at once (the emulator applies a
		// visibility change a moment after answering; a message Peek failed
		// to release would stay hidden for its 30 s peek visibility)
		h.waitCounts(t, "payments-dlq", 3, 0)
	}
	// and --max bounds what is shown
	msgs, err := h.ops.Peek(context.Background(), "payments-dlq", 2)
	must(t, err)
	if len(msgs) != 2 {
		t.Fatalf("peek max 2 returned %d", len(msgs))
	}
}

func TestPeekRejectsQueuesThatAreNotDeadLetterQueues(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	tests := []struct {
		name  string
		queue string
		want  error
	}{
		{name: "source queue", queue: "payments", want: ops.ErrNotDeadLetterQueue},
		{name: "unknown", queue: "nope", want: ops.ErrNotDeadLetterQueue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := h.ops.Peek(context.Background(), tt.queue, 1); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestRedriveDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	seedPayments(t, h)
	// when the operator previews a redrive that skips completed keys
	rep, err := h.ops.Redrive(context.Background(), ops.RedriveOptions{Queue: "payments-dlq", DryRun: true, SkipCompleted: true})
	must(t, err)
	// then it says, per message, what it would do
	outcomes := statesByEvent(rep.Items, func(it ops.RedriveItem) (string, string) { return it.EventID, it.Outcome })
	want := map[string]string{"evt_done": ops.OutcomeWouldSkip, "evt_wip": ops.OutcomeWouldMove, "evt_new": ops.OutcomeWouldMove}
	if !equalMaps(outcomes, want) || rep.Moved != 2 || rep.Skipped != 1 || rep.Failed != 0 || !rep.DryRun {
		t.Fatalf("dry run report %+v, outcomes %v", rep, outcomes)
	}
	// and changes nothing: the DLQ keeps all three, visible, the source
	// queue stays empty
	h.waitCounts(t, "payments-dlq", 3, 0)
	if got := h.drain(t, "payments"); len(got) != 0 {
		t.Fatalf("dry run sent %d messages to the source queue", len(got))
	}
}

func TestRedriveSkipCompletedMovesOnlyTheRightOnes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	seedPayments(t, h)
	var progress []ops.Progress
	// when the operator redrives, skipping completed keys
	rep, err := h.ops.Redrive(context.Background(), ops.RedriveOptions{Queue: "payments-dlq", SkipCompleted: true,
		Progress: func(p ops.Progress) { progress = append(progress, p) }})
	must(t, err)
	outcomes := statesByEvent(rep.Items, func(it ops.RedriveItem) (string, string) { return it.EventID, it.Outcome })
	want := map[string]string{"evt_done": ops.OutcomeSkipped, "evt_wip": ops.OutcomeMoved, "evt_new": ops.OutcomeMoved}
	if !equalMaps(outcomes, want) || rep.Partial() {
		t.Fatalf("report %+v, outcomes %v", rep, outcomes)
	}
	// then the source queue holds exactly the two that need work, with
	// their attributes, and the DLQ is empty
	moved := h.drain(t, "payments")
	if ids := eventIDs(moved); len(moved) != 2 || ids["evt_wip"] != 1 || ids["evt_new"] != 1 {
		t.Fatalf("source queue got %v", ids)
	}
	for _, m := range moved {
		if aws.ToString(m.MessageAttributes["source"].StringValue) != "payments" ||
			aws.ToString(m.MessageAttributes["first_failure_reason"].StringValue) != "provider_retriable" {
			t.Fatalf("attributes not kept: %v", m.MessageAttributes)
		}
	}
	h.waitCounts(t, "payments-dlq", 0, 0)
	// and progress was reported once per message against the depth
	if len(progress) != 3 || progress[2].Done != 3 || progress[0].Total != 3 {
		t.Fatalf("progress %+v", progress)
	}
}

// failingDeletes fails the first n DeleteMessage calls, as a crash between
// the send and the delete would leave things.
type failingDeletes struct {
	ops.SQSAPI
	left atomic.Int32
}

func (f *failingDeletes) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	if f.left.Add(-1) >= 0 {
		return nil, errors.New("injected: connection reset before the delete")
	}
	return f.SQSAPI.DeleteMessage(ctx, in, opts...)
}

func TestRedriveCrashBetweenSendAndDeleteLosesNothing(t *testing.T) {
	t.Parallel()
	// given a delete that fails once after its send succeeded
	var fd *failingDeletes
	h := newHarness(t, harnessOptions{sqs: func(c ops.SQSAPI) ops.SQSAPI {
		fd = &failingDeletes{SQSAPI: c}
		fd.left.Store(1)
		return fd
	}})
	seedPayments(t, h)
	// when the operator redrives everything
	rep, err := h.ops.Redrive(context.Background(), ops.RedriveOptions{Queue: "payments-dlq"})
	must(t, err)
	// then the run is partial, the failed message is reported as sent but
	// not deleted, and it is still in the DLQ (visible again)
	if rep.Moved != 2 || rep.Failed != 1 || !rep.Partial() {
		t.Fatalf("report %+v", rep)
	}
	var failed ops.RedriveItem
	for _, it := range rep.Items {
		if it.Outcome == ops.OutcomeFailed {
			failed = it
		}
	}
	if !strings.Contains(failed.Error, "not deleted") {
		t.Fatalf("failed item error %q", failed.Error)
	}
	h.waitCounts(t, "payments-dlq", 1, 0)
	// and every event reached the source queue: nothing is lost
	if ids := eventIDs(h.drain(t, "payments")); len(ids) != 3 {
		t.Fatalf("source queue got %v, want all three events", ids)
	}
	// when the operator runs the redrive again
	rep, err = h.ops.Redrive(context.Background(), ops.RedriveOptions{Queue: "payments-dlq"})
	must(t, err)
	// then the leftover copy moves too (a duplicate the worker absorbs)
	if rep.Moved != 1 || rep.Partial() || rep.Items[0].EventID != failed.EventID {
		t.Fatalf("second run %+v", rep)
	}
}

func TestRedriveMaxAndInterrupt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	seedPayments(t, h)
	// when the operator moves at most two messages, rate-limited
	rep, err := h.ops.Redrive(context.Background(), ops.RedriveOptions{Queue: "payments-dlq", Max: 2, Rate: 20})
	must(t, err)
	// then two moved and one is left, visible
	if rep.Moved != 2 || len(rep.Items) != 2 {
		t.Fatalf("max 2: %+v", rep)
	}
	h.waitCounts(t, "payments-dlq", 1, 0)
	// when the run is interrupted before it starts a message
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err = h.ops.Redrive(ctx, ops.RedriveOptions{Queue: "payments-dlq"})
	// then it stops cleanly, reports the interruption and moved nothing
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if rep.Moved != 0 || (err == nil && !rep.Interrupted) {
		t.Fatalf("interrupted run %+v, err %v", rep, err)
	}
	h.waitCounts(t, "payments-dlq", 1, 0)
}

func TestNativeMoveMovesEverything(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	seedPayments(t, h)
	ctx := context.Background()
	// when the operator starts a native move and waits for it
	task, err := h.ops.StartMove(ctx, "payments-dlq", 0)
	must(t, err)
	if task.Destination == "" || !strings.HasSuffix(task.Source, "payments-dlq") {
		t.Fatalf("task %+v", task)
	}
	var seen []string
	done, err := h.ops.WaitMove(ctx, "payments-dlq", task.Handle, 100e6, func(m ops.MoveTask) { seen = append(seen, m.Status) })
	must(t, err)
	// then it completes having moved all three, and the status lists it
	if done.Status != ops.MoveCompleted || done.Moved != 3 || len(seen) == 0 {
		t.Fatalf("task ended %+v (states %v)", done, seen)
	}
	tasks, err := h.ops.MoveTasks(ctx, "payments-dlq")
	must(t, err)
	if len(tasks) == 0 || tasks[0].Status != ops.MoveCompleted {
		t.Fatalf("tasks %+v", tasks)
	}
	if ids := eventIDs(h.drain(t, "payments")); len(ids) != 3 {
		t.Fatalf("source queue got %v", ids)
	}
	h.waitCounts(t, "payments-dlq", 0, 0)
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if b[k] != a[k] {
			return false
		}
	}
	return true
}

// TestPeekReadsBodiesWithTheWorkersMappings: with PAYMENT_MAPPINGS set as
// the worker has it, a Stripe invoice in the DLQ is checked under the key
// the worker used, and a body that does not map says why.
func TestPeekReadsBodiesWithTheWorkersMappings(t *testing.T) {
	t.Parallel()
	mappings, err := os.ReadFile("../../testdata/payments/stripe-mappings.json")
	must(t, err)
	h := newHarness(t, harnessOptions{vars: map[string]string{"PAYMENT_MAPPINGS": string(mappings)}})
	ms, err := paymentworker.ParseMappings(mappings)
	must(t, err)
	ctx := context.Background()
	invoice := `{"id":"evt_inv","type":"invoice.finalized","data":{"object":{"id":"in_9","customer":"cus_9","amount_due":4200,"currency":"usd"}}}`
	p, err := paymentworker.ParseMessageWith(events.SQSMessage{Body: invoice, MessageAttributes: map[string]events.SQSMessageAttribute{
		"source": {DataType: "String", StringValue: aws.String("payments")}, "event_id": {DataType: "String", StringValue: aws.String("evt_inv")},
	}}, ms)
	must(t, err)
	c, err := h.registry.Claim(ctx, p.Key(), p.Hash())
	must(t, err)
	must(t, h.registry.Complete(ctx, p.Key(), c.Token, []byte(`{"charge_id":"ch_1","status":"succeeded"}`)))
	h.deadLetter(t, "payments-dlq", "payments", "evt_inv", invoice)
	h.deadLetter(t, "payments-dlq", "payments", "evt_nocus", `{"id":"evt_nocus","type":"invoice.finalized","data":{"object":{"id":"in_nocus","amount_due":100,"currency":"usd"}}}`)
	testkit.Eventually(t, 30*time.Second, "two messages counted", func() bool { vis, _ := h.counts(t, "payments-dlq"); return vis == 2 })

	msgs, err := h.ops.Peek(ctx, "payments-dlq", 10)
	must(t, err)
	got := statesByEvent(msgs, func(m ops.Message) (string, string) { return m.EventID, m.Status.State + " " + m.Status.Error })
	want := map[string]string{
		"evt_inv":   ops.StateCompleted + " ",
		"evt_nocus": ops.StateUnknown + ` malformed_message: source "payments": customer: /data/object/customer is missing`,
	}
	if !equalMaps(got, want) {
		t.Fatalf("states %v, want %v", got, want)
	}
}
