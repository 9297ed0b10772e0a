package localrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/testkit"
	"github.com/hookline/hookline/pkg/webhook"
)

// clockCall reads the run's clock (body "") or posts a move to it, and
// returns the status and the answer.
func clockCall(t *testing.T, sys *localrun.System, body string) (int, []byte) {
	t.Helper()
	url := sys.ControlURL + localrun.ClockPath
	var resp *http.Response
	var err error
	if body == "" {
		resp, err = http.Get(url)
	} else {
		resp, err = http.Post(url, "application/json", strings.NewReader(body))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestClockMovedFromOutside: a drill moves the run's clock 720 h through
// its control endpoint, and the receiver, the simulator, the spend worker,
// the payment worker and the reconciler's schedule all read the moved
// time.
func TestClockMovedFromOutside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Given a run on the template's schedule (the reconciler every 5
	// minutes, so that it has not run by the move), and a workload
	sys, ledger := startDrill(t, workload(spend.NewWorkload{ID: "wl-clock", Cap: 1000}, "ref-clock"))
	wall := time.Now()
	moved := wall.Add(720 * time.Hour)

	// When the clock is advanced 720 h from outside
	code, body := clockCall(t, sys, `{"advance":"720h"}`)
	var r localrun.ClockReading
	if err := json.Unmarshal(body, &r); code != http.StatusOK || err != nil {
		t.Fatalf("advance: %d %s (%v)", code, body, err)
	}
	// Then it reads 720 h ahead of wall time
	if r.Ahead != "720h0m0s" || r.Now.Before(moved) || r.Now.After(time.Now().Add(720*time.Hour)) {
		t.Fatalf("after the advance: %+v, want 720h0m0s ahead, at %s", r, moved)
	}
	if code, body := clockCall(t, sys, ""); code != http.StatusOK || !strings.Contains(string(body), `"ahead":"720h0m0s"`) {
		t.Fatalf("read: %d %s", code, body)
	}

	// and the reconciler, whose schedule the move passed, runs at
	// once on the moved clock and sets the workload's next due time from it
	store, err := reconcile.NewStore(reconcile.StoreConfig{DB: sys.AWS.DynamoDB, Table: sys.AWS.TableName("LedgerTable")})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "a reconciliation run on the moved clock", func() bool {
		runs, err := store.Runs(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range runs {
			if !run.StartedAt.Before(moved) && run.Outcome == "ok" {
				return true
			}
		}
		return false
	})
	sc, found, err := store.Schedule(ctx, "wl-clock")
	if err != nil || !found || sc.NextDue.Before(moved) {
		t.Fatalf("the workload's schedule: %+v found=%v err=%v, want due after %s", sc, found, err, moved)
	}

	// When the simulator records usage, it signs its webhook at the moved
	// time, the receiver accepts it, and the spend worker observes and
	// accepts it at the moved time
	recordUsage(t, sys, "ur_clock_1", "ref-clock", 10, "send")
	waitTotal(t, ledger, "wl-clock", 10)
	w, err := ledger.Spend.Workloads.Get(ctx, "wl-clock")
	if err != nil {
		t.Fatal(err)
	}
	if last := w.LastAccepted; last.ObservedAt.Before(moved) || last.AcceptedAt.Before(moved) {
		t.Fatalf("last accepted %+v, want observed and accepted after %s", last, moved)
	}

	// When a payment webhook is signed at wall time, the receiver refuses
	// it as outside its replay window; signed at the run's time, it is
	// accepted and charged once
	pay := []byte(`{"id":"evt_clock_1","type":"payment.requested","data":{"customer":"cus_1","amount":4500,"currency":"usd"}}`)
	if code, got, err := signedPostAt(sys, "payments", "evt_clock_1", time.Now(), pay); err != nil || code != http.StatusUnauthorized {
		t.Fatalf("signed at wall time: %d %s %v, want 401", code, got, err)
	}
	if code, got := postSigned(t, sys, "payments", "evt_clock_1", pay); code != http.StatusOK {
		t.Fatalf("signed at the run's time: %d %s", code, got)
	}
	testkit.Eventually(t, 30*time.Second, "charged", func() bool { return sys.Sim.Charges.ChargeCount("evt_clock_1") == 1 })
}

// TestClockRefusesABadMove: a move back, a move of nothing and a body
// that names no move are refused with a 400 that says why, and the clock
// stays where it was.
func TestClockRefusesABadMove(t *testing.T) {
	t.Parallel()
	sys := start(t, localrun.Config{NoWorkers: true})
	for _, tc := range []struct {
		name, body, want string
	}{
		{name: "back", body: `{"advance":"-1h"}`, want: "only moves forward"},
		{name: "zero", body: `{"advance":"0s"}`, want: "only moves forward"},
		{name: "to the past", body: `{"set":"2001-01-01T00:00:00Z"}`, want: "only moves forward"},
		{name: "too far", body: `{"advance":"876001h"}`, want: "at most 10 years"},
		{name: "not a duration", body: `{"advance":"a month"}`, want: "not a duration"},
		{name: "not a time", body: `{"set":"tomorrow"}`, want: "not an RFC 3339 time"},
		{name: "both", body: `{"advance":"1h","set":"2099-01-01T00:00:00Z"}`, want: "exactly one"},
		{name: "neither", body: `{}`, want: "exactly one"},
		{name: "unknown field", body: `{"rewind":"1h"}`, want: "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// given the run's clock, when the move is posted, then it is a
			// 400 naming the problem
			code, body := clockCall(t, sys, tc.body)
			if code != http.StatusBadRequest || !strings.Contains(string(body), tc.want) {
				t.Fatalf("%s: %d %s, want 400 with %q", tc.body, code, body, tc.want)
			}
		})
	}
	// and the clock did not move
	if ahead := sys.Clock().Ahead(); ahead != 0 {
		t.Fatalf("the clock is %s ahead after refused moves", ahead)
	}
}

// TestClockMoveWaitsForInvocations: a move waits for the invocation in
// flight, so that no invocation sees the clock jump under a lease it
// took by it.
func TestClockMoveWaitsForInvocations(t *testing.T) {
	t.Parallel()
	// Given an invocation in flight
	var c localrun.Clock
	release := c.Hold()
	done := make(chan struct{})
	go func() {
		c.Advance(time.Hour)
		close(done)
	}()
	// When a move is asked for, then it waits
	select {
	case <-done:
		t.Fatal("the clock moved under an invocation in flight")
	case <-time.After(50 * time.Millisecond):
	}
	if c.Ahead() != 0 {
		t.Fatalf("ahead %s while the invocation runs", c.Ahead())
	}
	// and moves once the invocation ends
	release()
	<-done
	if c.Ahead() != time.Hour {
		t.Fatalf("ahead %s, want 1h", c.Ahead())
	}
}

// signedPostAt is signedPost with the signature's time at.
func signedPostAt(sys *localrun.System, source, id string, at time.Time, body []byte) (int, string, error) {
	h, err := webhook.SignHeaders(webhook.SchemeStandard, []string{localrun.DevSecrets[localrun.SecretVar(source)]}, id, at, body)
	if err != nil {
		return 0, "", err
	}
	req, _ := http.NewRequest(http.MethodPost, sys.URL+"/webhooks/"+source, bytes.NewReader(body))
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}
