package ops_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/stack"
	"github.com/hookline/hookline/internal/testkit"
)

func TestReplay(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	clk := testkit.NewManualClock(t0)
	h := newHarness(t, harnessOptions{now: clk.Now})
	ctx := context.Background()
	// given three payment events accepted a minute apart, already consumed
	for i, id := range []string{"evt_a", "evt_b", "evt_c"} {
		clk.Set(t0.Add(time.Duration(i) * time.Minute))
		_, err := h.intake.Accept(ctx, intake.Event{Source: "payments", EventID: id, QueueURL: h.env.QueueURL("payments"),
			Payload: []byte(paymentBody(id, 100)), ProviderTimestamp: t0})
		must(t, err)
	}
	testkit.Eventually(t, 30*time.Second, "three enqueued", func() bool { vis, _ := h.counts(t, "payments"); return vis == 3 })
	h.drain(t, "payments")
	// Replay reads the same clock as the intake, so the records' ages do
	// not depend on the day the test runs.
	o, err := ops.New(ops.Config{SQS: h.env.SQS, Resolver: h.resolver, Intake: h.intake, Now: clk.Now})
	must(t, err)

	tests := []struct {
		name        string
		opts        ops.ReplayOptions
		wantSent    []string
		wantMissing int
		wantErr     error
	}{
		{name: "by event", opts: ops.ReplayOptions{Source: "payments", EventIDs: []string{"evt_b", "evt_nope"}},
			wantSent: []string{"evt_b"}, wantMissing: 1},
		{name: "by time range", opts: ops.ReplayOptions{Source: "payments", Since: t0.Add(30 * time.Second), Until: t0.Add(2 * time.Minute)},
			wantSent: []string{"evt_b", "evt_c"}},
		{name: "range with max", opts: ops.ReplayOptions{Source: "payments", Since: t0, Until: t0.Add(time.Hour), Max: 1},
			wantSent: []string{"evt_a"}},
		{name: "other source is empty", opts: ops.ReplayOptions{Source: "usage", Since: t0, Until: t0.Add(time.Hour)}},
		{name: "dry run sends nothing", opts: ops.ReplayOptions{Source: "payments", EventIDs: []string{"evt_a"}, DryRun: true}},
		{name: "both modes", opts: ops.ReplayOptions{Source: "payments", EventIDs: []string{"evt_a"}, Since: t0, Until: t0},
			wantErr: ops.ErrInvalidOptions},
		{name: "neither mode", opts: ops.ReplayOptions{Source: "payments"}, wantErr: ops.ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// when the operator replays
			rep, err := o.Replay(ctx, tt.opts)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			must(t, err)
			// then exactly the wanted events are back on the queue, with the
			// body and attributes of their first delivery
			got := h.drain(t, "payments")
			ids := eventIDs(got)
			if len(got) != len(tt.wantSent) || rep.Missing != tt.wantMissing {
				t.Fatalf("queue got %v, report %+v", ids, rep)
			}
			for _, id := range tt.wantSent {
				if ids[id] != 1 {
					t.Fatalf("queue got %v, want %v", ids, tt.wantSent)
				}
			}
			for _, m := range got {
				id := aws.ToString(m.MessageAttributes["event_id"].StringValue)
				if aws.ToString(m.Body) != paymentBody(id, 100) || aws.ToString(m.MessageAttributes["source"].StringValue) != "payments" ||
					aws.ToString(m.MessageAttributes["received_at"].StringValue) == "" {
					t.Fatalf("replayed %s: body %s attrs %v", id, aws.ToString(m.Body), m.MessageAttributes)
				}
			}
			if tt.opts.DryRun && (rep.Sent != 1 || rep.Items[0].Outcome != ops.OutcomeWouldSend) {
				t.Fatalf("dry run report %+v", rep)
			}
		})
	}
}

func TestReplayRefusesRecordsPastRetention(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	tests := []struct {
		name   string
		age    time.Duration // how long after intake the replay runs
		keep   time.Duration // the idempotency retention ops is given (0: the template's)
		send   bool
		reason string
	}{
		{name: "within the keys' retention", age: 30 * day, send: true},
		{name: "older than the keys' retention less the margin", age: 34*day + 12*time.Hour, reason: ops.ReasonKeyRetention},
		{name: "past the intake record's expiry", age: 36 * day, reason: ops.ReasonIntakeExpired},
		{name: "older than a configured retention less the margin", age: 10 * day, keep: 10 * day, reason: ops.ReasonKeyRetention},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each case has its own local AWS and clock
			clk := testkit.NewManualClock(t0)
			h := newHarness(t, harnessOptions{now: clk.Now})
			ctx := context.Background()
			// given a payment event accepted and consumed long ago, whose
			// intake record DynamoDB has not deleted yet
			_, err := h.intake.Accept(ctx, intake.Event{Source: "payments", EventID: "evt_old", QueueURL: h.env.QueueURL("payments"),
				Payload: []byte(paymentBody("evt_old", 100)), ProviderTimestamp: t0})
			must(t, err)
			testkit.Eventually(t, 30*time.Second, "enqueued", func() bool { vis, _ := h.counts(t, "payments"); return vis == 1 })
			h.drain(t, "payments")
			clk.Set(t0.Add(tt.age))
			o, err := ops.New(ops.Config{SQS: h.env.SQS, Resolver: h.resolver, Intake: h.intake, Now: clk.Now, IdempotencyRetention: tt.keep})
			must(t, err)
			for _, opts := range []ops.ReplayOptions{
				{Source: "payments", EventIDs: []string{"evt_old"}},
				{Source: "payments", Since: t0.Add(-time.Hour), Until: clk.Now()},
			} {
				// when the operator replays it by event or by time
				rep, err := o.Replay(ctx, opts)
				must(t, err)
				got := h.drain(t, "payments")
				if tt.send {
					if len(got) != 1 || rep.Partial() {
						t.Fatalf("queue got %d, report %+v; want it sent", len(got), rep)
					}
					continue
				}
				// then nothing is sent, and the report says the record was
				// skipped and why, so the command exits nonzero
				if len(got) != 0 {
					t.Fatalf("replayed a record past retention: queue got %d, report %+v", len(got), rep)
				}
				if !rep.Partial() || rep.Skipped != 1 || rep.Items[0].Outcome != ops.OutcomeTooOld || rep.Items[0].Reason != tt.reason || rep.Items[0].Error == "" {
					t.Fatalf("report %+v, want one skipped record with its reason", rep)
				}
			}
		})
	}
}

func TestReplayOptionsRefuseNegativeRetention(t *testing.T) {
	// SQS is never called: New refuses the options first.
	var sqs struct{ ops.SQSAPI }
	r, err := ops.NewResolver(ops.ResolverConfig{Template: &stack.Template{}, SQS: sqs})
	must(t, err)
	for _, cfg := range []ops.Config{{IdempotencyRetention: -time.Hour}, {ReplayMargin: -time.Hour}} {
		cfg.SQS, cfg.Resolver = sqs, r
		if _, err := ops.New(cfg); err == nil {
			t.Fatalf("ops.New(%+v) accepted a negative duration", cfg)
		}
	}
}
