package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/spend"
)

// pauseOver creates workload id with cap 1000 and pauses it at 1,290.
func pauseOver(t *testing.T, env *localaws.Env, id string) *spend.Spend {
	t.Helper()
	ctx := context.Background()
	outbox, err := pager.NewOutbox(pager.OutboxConfig{DB: env.DynamoDB, Table: env.TableName("LedgerTable")})
	if err != nil {
		t.Fatal(err)
	}
	s, err := spend.New(spend.Config{DB: env.DynamoDB, LedgerTable: env.TableName("LedgerTable"),
		WorkloadsTable: env.TableName("WorkloadsTable"), Pages: outbox,
		Webhook:    spend.PathContract{MaxAge: time.Hour, Interval: time.Minute},
		Poll:       spend.PathContract{MaxAge: time.Hour, Interval: 5 * time.Minute},
		ReconOwner: "billing-oncall", ReconRoutingKey: "rk-recon"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Workloads.CreateWorkload(ctx, spend.NewWorkload{ID: id, Owner: "o", RoutingKey: "rk", Cap: 1000}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := s.Ledger.Apply(ctx, spend.Usage{RecordID: "ur_" + id, WorkloadRef: id, Units: 1290,
		OccurredAt: now, ObservedAt: now, Path: spend.PathWebhook, EventID: "evt_usage_ur_" + id}); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestWorkloadResumeOverTheCap(t *testing.T) {
	env := cliEnv(t)
	s := pauseOver(t, env, "workload-over")
	steps := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{name: "refused over the cap", args: []string{"workload", "resume", "workload-over"}, wantCode: exitUsage},
		{name: "force needs a reason", args: []string{"workload", "resume", "workload-over", "--force"}, wantCode: exitUsage},
		{name: "forced on purpose", args: []string{"workload", "resume", "workload-over", "--force", "--by", "ana", "--reason", "drain the queue"},
			want: "status paused -> active"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			code, out := run(t, st.args...)
			if code != st.wantCode || !strings.Contains(out, st.want) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s", code, st.wantCode, st.want, out)
			}
		})
	}
	w, err := s.Workloads.Get(context.Background(), "workload-over")
	if err != nil || w.Override.By != "ana" || w.Override.Reason != "drain the queue" || w.Override.Epoch != w.CapEpoch {
		t.Fatalf("override = %+v, %v", w.Override, err)
	}
}

func TestWorkloadResumeRefusalSaysTotalCapAndOverride(t *testing.T) {
	env := cliEnv(t)
	pauseOver(t, env, "workload-msg")
	var errs strings.Builder
	old := stderr
	stderr = &errs
	defer func() { stderr = old }()
	code, _ := run(t, "workload", "resume", "workload-msg")
	msg := errs.String()
	for _, want := range []string{"1290", "1000", "set-cap", "--force"} {
		if code != exitUsage || !strings.Contains(msg, want) {
			t.Fatalf("exit %d, stderr lacks %q:\n%s", code, want, msg)
		}
	}
}

func TestEventExplainFindsADeferredRecordByEventID(t *testing.T) {
	env := cliEnv(t)
	s := pauseOver(t, env, "workload-def")
	now := time.Now()
	if _, err := s.Ledger.Apply(context.Background(), spend.Usage{RecordID: "ur_nobody", WorkloadRef: "nobody", Units: 4,
		OccurredAt: now, ObservedAt: now, Path: spend.PathWebhook, EventID: "evt_usage_ur_nobody"}); err != nil {
		t.Fatal(err)
	}
	code, out := run(t, "event", "explain", "evt_usage_ur_nobody")
	if code != exitOK || !strings.Contains(out, "record ur_nobody, 4 units DEFERRED") || !strings.Contains(out, "status open") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	code, out = run(t, "event", "explain", "evt_usage_ur_nobody", "--json")
	if code != exitOK || !strings.Contains(out, `"deferred_state"`) || !strings.Contains(out, `"record_id": "ur_nobody"`) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
