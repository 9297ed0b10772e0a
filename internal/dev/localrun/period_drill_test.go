package localrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/period"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/testkit"
)

// The drill of a billing period, driven from outside the run:
// the clock moved through the control endpoint, usage recorded in the
// provider simulator, which sends its signed webhooks, admission read over HTTP and the runbook as `workload
// explain` prints it. Deadlines are generous and nothing sleeps, so that
// a loaded machine only makes it slower.

// periodDrillWait bounds each step of the drill.
const periodDrillWait = 60 * time.Second

// TestPeriodDrillFromOutside: a workload with a monthly period anchored
// on the 31st in America/Los_Angeles crosses its cap, is paused and paged
// once naming the period; the clock crosses the boundary and it resumes
// with a recorded decision; the new period counts from zero while a late
// record of the old one counts there; late usage after the close pages
// once with its amount; admission and explain show both periods.
func TestPeriodDrillFromOutside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const id, ref = "wl-period", "ref-period"
	periods, err := spend.ParsePeriods(period.Config{Period: "month", Anchor: "2026-01-31T00:00:00",
		TimeZone: "America/Los_Angeles"}, "2h", "")
	if err != nil {
		t.Fatal(err)
	}
	sys, ledger := startDrill(t, everySecond())

	// Given the run's clock a day into a period (the one after the
	// period that holds wall time, so that the clock only moves forward),
	p1, err := periods.At(sys.Clock().Now())
	if err != nil {
		t.Fatal(err)
	}
	if p1, err = periods.At(p1.End); err != nil {
		t.Fatal(err)
	}
	moveClock(t, sys, p1.Start.Add(24*time.Hour))
	p2, err := periods.At(p1.End)
	if err != nil {
		t.Fatal(err)
	}
	if s := p1.Start; s.Day() != 31 && !lastDayOfMonth(s) {
		t.Fatalf("period %s starts on day %d: not the 31st or its month's last day", p1, s.Day())
	}
	// and a workload of that period with a cap of 1000,
	createWorkload(t, ledger, spend.NewWorkload{ID: id, Owner: "o", RoutingKey: "rk", Cap: 1000, Periods: periods}, ref)
	if code, a := admission(t, sys, id); code != http.StatusOK || a["period"] != p1.String() || a["attributed"] != float64(0) {
		t.Fatalf("admission at the start: %d %v, want period %s", code, a, p1)
	}

	// When usage crosses the cap,
	for i, units := range []int64{600, 600} {
		rec := fmt.Sprintf("ur_p1_%d", i)
		postUsage(t, sys, rec, ref, units, sys.Clock().Now())
	}
	// then the workload is paused, and paged once, naming the period,
	testkit.Eventually(t, periodDrillWait, "paused at 1200", func() bool {
		w, err := ledger.Spend.Workloads.Get(ctx, id)
		return err == nil && w.Total == 1200 && w.Status == spend.StatusPaused
	})
	pause := waitPages(t, sys, ledger.Outbox.Flush, "spend cap action=pause workload="+id, 1)[0]
	if !strings.Contains(pause.Payload.Summary, " period="+p1.String()) {
		t.Fatalf("the pause page %q does not name the period %s", pause.Payload.Summary, p1)
	}
	if code, a := admission(t, sys, id); code != http.StatusLocked || a["period"] != p1.String() || a["attributed"] != float64(1200) {
		t.Fatalf("admission while paused: %d %v", code, a)
	}

	// When the export has shown both records to the reconciler (a month's
	// jump would otherwise put any it had not yet read past the
	// consistency horizon, and page them unseen),
	waitConfirmed(t, ledger.Spend.Ledger, "ur_p1_0", "ur_p1_1")
	// and the clock crosses the boundary (the close is two hours after
	// it),
	moveClock(t, sys, p1.End.Add(10*time.Minute))
	// then admission answers the new period at once,
	if code, a := admission(t, sys, id); code != http.StatusOK || a["period"] != p2.String() || a["attributed"] != float64(0) ||
		a["period_end"] != p2.End.UTC().Format(time.RFC3339) {
		t.Fatalf("admission after the boundary: %d %v, want period %s from zero", code, a, p2)
	}
	// and a reconciliation run crosses it: the workload resumes (the
	// default policy) from a total of zero, with a recorded decision
	testkit.Eventually(t, periodDrillWait, "resumed in the new period", func() bool {
		w, err := ledger.Spend.Workloads.Get(ctx, id)
		return err == nil && w.PeriodID == p2.ID() && w.Status == spend.StatusActive && w.Total == 0
	})
	x, err := ledger.Spend.Explainer.Explain(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Decisions) == 0 || x.Decisions[0].Action != spend.ActionResumeAtBoundary {
		t.Fatalf("decisions %+v, want the newest %s", x.Decisions, spend.ActionResumeAtBoundary)
	}
	waitPages(t, sys, ledger.Outbox.Flush, "spend cap action="+spend.ActionResumeAtBoundary+" workload="+id, 1)

	// When a record of the new period and a late one of the old (before
	// its close) arrive,
	postUsage(t, sys, "ur_p2_0", ref, 100, sys.Clock().Now())
	postUsage(t, sys, "ur_p1_late", ref, 50, p1.End.Add(-time.Hour))
	// then the new period counts only its own, and the old one the late
	// record, with no late-usage page (it arrived before the close)
	waitPeriods(t, ledger.Spend.Explainer, id, "the new period at 100, the old at 1250", func(cur, prev *spend.PeriodView) bool {
		return cur.Total == 100 && prev.Total == 1250 && prev.LateUnits == 0
	})

	// When the export has shown those two as well, and the clock passes
	// the old period's close, and two more late records of it arrive, one
	// after the other,
	waitConfirmed(t, ledger.Spend.Ledger, "ur_p2_0", "ur_p1_late")
	moveClock(t, sys, p1.End.Add(3*time.Hour))
	postUsage(t, sys, "ur_p1_after_close_0", ref, 40, p1.End.Add(-30*time.Minute))
	waitPeriods(t, ledger.Spend.Explainer, id, "the first record after the close", func(_, prev *spend.PeriodView) bool {
		return prev.Total == 1290 && prev.LateUnits == 40
	})
	postUsage(t, sys, "ur_p1_after_close_1", ref, 7, p1.End.Add(-20*time.Minute))
	// then both count in the old period, and the current total stays,
	waitPeriods(t, ledger.Spend.Explainer, id, "both records after the close", func(cur, prev *spend.PeriodView) bool {
		return cur.Total == 100 && prev.Total == 1297 && prev.LateUnits == 47 && !prev.LatePagedAt.IsZero()
	})
	// and the late usage is paged once, with the first one's amount
	late := waitPages(t, sys, ledger.Outbox.Flush, "spend late usage workload="+id, 1)[0]
	want := spend.LateLine("late usage", id, p1, 40, "ur_p1_after_close_0", period.Close(p1, periods.Grace))
	if late.Payload.Summary != want {
		t.Fatalf("late usage page %q, want %q", late.Payload.Summary, want)
	}

	// And admission shows the current period, and explain both, as on-call
	// reads them
	if code, a := admission(t, sys, id); code != http.StatusOK || a["period"] != p2.String() || a["attributed"] != float64(100) {
		t.Fatalf("admission at the end: %d %v", code, a)
	}
	store, err := reconcile.NewStore(reconcile.StoreConfig{DB: sys.AWS.DynamoDB, Table: sys.AWS.TableName("LedgerTable")})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ops.ExplainWorkload(ctx, ops.ExplainSources{Spend: ledger.Spend.Explainer, Intervals: store}, id, sys.Clock().Now())
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"period           " + p2.String() + "  total 100 of cap 1000",
		"previous period  " + p1.String() + "  total 1297 of cap 1000, closed",
		"late usage 47 units (paged",
	} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("explain lacks %q:\n%s", line, text.String())
		}
	}
	// and nothing more was paged: one pause, one boundary, one late usage
	if n := len(sys.Sim.Pager.Pages()); n != 3 {
		t.Fatalf("%d pages, want 3: %v", n, sys.Sim.Pager.Pages())
	}
}

// waitConfirmed waits until the reconciler has read each record in the
// export: a clock moved past the consistency horizon before then would
// page it unseen, which is what the horizon means, not what the drill is
// about.
func waitConfirmed(t *testing.T, ledger *spend.Ledger, records ...string) {
	t.Helper()
	for _, rec := range records {
		testkit.Eventually(t, periodDrillWait, rec+" confirmed by the export", func() bool {
			e, err := ledger.Entry(context.Background(), rec)
			return err == nil && slices.Contains(e.Paths, spend.PathPoll)
		})
	}
}

// lastDayOfMonth reports whether t is the last day of its month.
func lastDayOfMonth(t time.Time) bool { return t.AddDate(0, 0, 1).Day() == 1 }

// moveClock sets the run's clock to at through its control endpoint.
func moveClock(t *testing.T, sys *localrun.System, at time.Time) {
	t.Helper()
	code, body := clockCall(t, sys, fmt.Sprintf(`{"set":%q}`, at.UTC().Format(time.RFC3339)))
	if code != http.StatusOK {
		t.Fatalf("set the clock to %s: %d %s", at, code, body)
	}
}

// postUsage records usage of record, occurred at at, in the provider
// simulator's export from outside (POST /sim/usage), published there now
// (a late record is late to the export too), and the simulator sends its
// webhook signed at the run's time.
func postUsage(t *testing.T, sys *localrun.System, record, ref string, units int64, at time.Time) {
	t.Helper()
	late := max(sys.Clock().Now().Sub(at), 0).Truncate(time.Second)
	body, _ := json.Marshal(map[string]any{"record_id": record, "workload_ref": ref, "units": units,
		"occurred_at": at.UTC().Format(time.RFC3339), "publish_delay": late.String(), "webhook": "send"})
	resp, err := http.Post(sys.Sim.URL()+"/sim/usage", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), `"receiver_status":200`) {
		t.Fatalf("usage %s: %d %s", record, resp.StatusCode, got)
	}
}

// waitPages waits for n pages whose summary starts with prefix, flushing
// the outbox meanwhile, and returns them.
func waitPages(t *testing.T, sys *localrun.System, flush func(context.Context) (pager.FlushResult, error), prefix string, n int) []pager.Event {
	t.Helper()
	var got []pager.Event
	testkit.Eventually(t, periodDrillWait, fmt.Sprintf("%d pages %q", n, prefix), func() bool {
		if _, err := flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, p := range sys.Sim.Pager.Pages() {
			if strings.HasPrefix(p.Payload.Summary, prefix) {
				got = append(got, p)
			}
		}
		return len(got) >= n
	})
	if len(got) != n {
		t.Fatalf("%d pages %q, want %d", len(got), prefix, n)
	}
	return got
}

// waitPeriods waits until workload id's current and previous periods
// satisfy ok.
func waitPeriods(t *testing.T, x *spend.Explainer, id, what string, ok func(cur, prev *spend.PeriodView) bool) {
	t.Helper()
	var cur, prev *spend.PeriodView
	testkit.Eventually(t, periodDrillWait, what, func() bool {
		var err error
		cur, prev, err = x.Periods(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return cur != nil && prev != nil && ok(cur, prev)
	})
}
