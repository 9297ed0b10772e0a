package ops_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/pkg/intake"
	"github.com/hookline/hookline/pkg/local/testkit"
	"github.com/hookline/hookline/pkg/ops"
)

func TestReplay(t *testing.T) {
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
	testkit.Eventually(t, 5*time.Second, "three enqueued", func() bool { vis, _ := h.counts(t, "payments"); return vis == 3 })
	h.drain(t, "payments")

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
			rep, err := h.ops.Replay(ctx, tt.opts)
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
