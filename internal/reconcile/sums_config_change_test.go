package reconcile_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/sums"
)

// changeConfig is a Stripe source of hour buckets, settled after 3h, whose
// width and start the tests change between runs.
func changeConfig(width, start string) string {
	return `{"stripe-test": {"provider": "stripe", "usage_source": "meters", "account": "acct_1",
	"start": "` + start + `", "settle": "3h", "lag": "2m", "interval": "5m", "width": "` + width + `",
	"meters": {"api": {"provider_meter": "mtr_api", "aggregation": "sum"}}},
	"stripe-other": {"provider": "stripe", "usage_source": "other", "account": "acct_2", "livemode": true,
	"start": "2026-11-30T00:00:00Z", "meters": {"api": {"provider_meter": "mtr_other", "aggregation": "count"}}}}`
}

// runOf runs the reconciler and returns the run of stripe-test and the
// run's error.
func (f *sumsFixture) runOf(t *testing.T) (reconcile.SumsRun, error) {
	t.Helper()
	runs, err := f.rec.Run(context.Background(), "run-"+f.now.Format("150405"))
	for _, r := range runs {
		if r.Source == "stripe-test" {
			return r, err
		}
	}
	t.Fatalf("no run of stripe-test: %v", err)
	return reconcile.SumsRun{}, err
}

// deploy runs the reconciler, checks workload id's total is want, then
// deploys config and runs it ten minutes later.
func (f *sumsFixture) deploy(t *testing.T, id string, want int64, config string) (reconcile.SumsRun, error) {
	t.Helper()
	if _, err := f.runOf(t); err != nil || f.total(t, id) != want {
		t.Fatalf("run before the deploy: %v, total %d, want %d", err, f.total(t, id), want)
	}
	f.configure(t, config)
	f.now = f.now.Add(10 * time.Minute)
	return f.runOf(t)
}

func TestSumsAWidthChangeCountsNothingTwice(t *testing.T) {
	// given 5 units at Stripe in two hour buckets, counted, under a cap of 7
	f := newSumsFixtureOf(t, changeConfig("1h", "2026-11-30T00:00:00Z"), hour0.Add(3*time.Hour+30*time.Minute))
	f.workload(t, "wl-w", 7, "cus_w")
	f.stripe.set("mtr_api", "cus_w", hour0, 2)
	f.stripe.set("mtr_api", "cus_w", hour0.Add(time.Hour), 3)
	// when a deploy moves the source to day buckets and the next run comes
	run, err := f.deploy(t, "wl-w", 5, changeConfig("24h", "2026-11-30T00:00:00Z"))
	// then the run is refused, naming the width, and the day is counted
	// nowhere a second time: the total stays 5 and nothing is paused
	w, gerr := f.spend.Workloads.Get(context.Background(), "wl-w")
	if gerr != nil || w.Total != 5 || w.Status == spend.StatusPaused {
		t.Fatalf("workload = total %d status %s (%v), want 5 and not paused", w.Total, w.Status, gerr)
	}
	if !errors.Is(err, reconcile.ErrSumsConfigChanged) || !strings.Contains(run.Error, "width") {
		t.Fatalf("run after the width change: %v (%s), want ErrSumsConfigChanged naming width", err, run.Error)
	}
	// when the width is put back, the source runs again
	f.configure(t, changeConfig("1h", "2026-11-30T00:00:00Z"))
	f.now = f.now.Add(10 * time.Minute)
	if _, err := f.runOf(t); err != nil || f.total(t, "wl-w") != 5 {
		t.Fatalf("run with the width put back: %v, total %d, want 5", err, f.total(t, "wl-w"))
	}
}

func TestSumsAStartMovedEarlierIsRefusedNamingIt(t *testing.T) {
	// given a source that has run from 2026-11-30T02:00, and a webhook
	// record before that counted outside any bucket
	f := newSumsFixtureOf(t, changeConfig("1h", "2026-11-30T02:00:00Z"), hour0.Add(3*time.Hour+30*time.Minute))
	f.workload(t, "wl-s", 1_000_000, "cus_s")
	f.webhook(t, "s1", "wl-s", 4, hour0.Add(time.Hour+10*time.Minute))
	f.stripe.set("mtr_api", "cus_s", hour0.Add(time.Hour), 4)
	// when a deploy moves its start two hours earlier
	run, err := f.deploy(t, "wl-s", 4, changeConfig("1h", "2026-11-30T00:00:00Z"))
	// then the run is refused naming start, and the record is not counted
	// again through its bucket
	if got := f.total(t, "wl-s"); got != 4 {
		t.Fatalf("total = %d, want 4", got)
	}
	if !errors.Is(err, reconcile.ErrSumsConfigChanged) || !strings.Contains(run.Error, "start") {
		t.Fatalf("run after start moved: %v (%s), want ErrSumsConfigChanged naming start", err, run.Error)
	}
}

// renameConfig is stripe-test reading mtr_api as the meter name, with the
// door's other names of it.
func renameConfig(name, doorNames string) string {
	return `{"stripe-test": {"provider": "stripe", "usage_source": "meters", "account": "acct_1",
	"start": "2026-11-30T00:00:00Z", "settle": "3h", "lag": "2m", "interval": "5m",
	"meters": {"` + name + `": {"provider_meter": "mtr_api", "aggregation": "sum", "door_names": ` + doorNames + `}}}}`
}

func TestSumsAMeterRenamedOverItsProviderMeterCountsNothingTwice(t *testing.T) {
	// given 5 units at Stripe in two hour buckets, counted under meter api
	f := newSumsFixtureOf(t, renameConfig("api", "[]"), hour0.Add(3*time.Hour+30*time.Minute))
	f.workload(t, "wl-r", 1_000_000, "cus_r")
	f.stripe.set("mtr_api", "cus_r", hour0.Add(time.Hour), 2)
	f.stripe.set("mtr_api", "cus_r", hour0.Add(2*time.Hour), 3)
	// when a deploy renames the meter to calls over the same provider meter
	run, err := f.deploy(t, "wl-r", 5, renameConfig("calls", "[]"))
	// then the run is refused, naming the meters, and the hours are not
	// counted again under the new name
	if got := f.total(t, "wl-r"); got != 5 {
		t.Fatalf("total after the rename = %d, want 5", got)
	}
	if !errors.Is(err, reconcile.ErrSumsConfigChanged) || !strings.Contains(run.Error, "door_names") {
		t.Fatalf("run after the rename: %v (%s), want ErrSumsConfigChanged naming door_names", err, run.Error)
	}
	// when the rename is stated instead, keeping the name and listing the
	// door's new one, records under the new name count in the old buckets
	f.configure(t, renameConfig("api", `["calls"]`))
	f.now = f.now.Add(10 * time.Minute)
	if _, err := f.spend.Ledger.Apply(context.Background(), spend.Usage{RecordID: "c1", WorkloadRef: "cus_r", Units: 4,
		OccurredAt: hour0.Add(2*time.Hour + 5*time.Minute), ObservedAt: f.now, Path: spend.PathWebhook, EventID: "evt_c1",
		Source: "meters", Meter: "calls"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.runOf(t); err != nil || f.total(t, "wl-r") != 6 {
		t.Fatalf("run with the rename stated: %v, total %d, want 6 (max(4, 3) at 02:00 beside 2)", err, f.total(t, "wl-r"))
	}
}

// boundaryConfig is stripe-test from start in hour buckets until from
// and in day buckets from then on, its width change stated in widths.
func boundaryConfig(start, from string) string {
	return `{"stripe-test": {"provider": "stripe", "usage_source": "meters", "account": "acct_1",
	"start": "` + start + `", "settle": "3h", "lag": "2m", "interval": "5m",
	"widths": [{"width": "1h"}, {"width": "24h", "from": "` + from + `"}],
	"meters": {"api": {"provider_meter": "mtr_api", "aggregation": "sum"}}}}`
}

// both puts units at Stripe and applies their webhook at at.
func (f *sumsFixture) both(t *testing.T, rec, ref string, units int64, at time.Time) {
	t.Helper()
	f.stripe.set("mtr_api", ref, at, float64(units))
	f.webhook(t, rec, ref, units, at)
}

func TestSumsAWidthChangeAtAStatedBoundaryCountsNothingTwice(t *testing.T) {
	// given a source of hour buckets that counted 5 units on 2026-11-30,
	// under a cap of 15
	day1 := hour0.Add(24 * time.Hour)
	f := newSumsFixtureOf(t, changeConfig("1h", "2026-11-30T00:00:00Z"), hour0.Add(23*time.Hour+20*time.Minute))
	f.workload(t, "wl-b", 15, "cus_b")
	f.both(t, "b1", "cus_b", 2, hour0.Add(22*time.Hour+10*time.Minute))
	f.both(t, "b2", "cus_b", 3, hour0.Add(23*time.Hour+5*time.Minute))
	// when a deploy before midnight states day buckets from midnight on
	run, err := f.deploy(t, "wl-b", 5, boundaryConfig("2026-11-30T00:00:00Z", day1.Format(time.RFC3339)))
	// then the source runs normally
	if err != nil || run.Outcome != "ok" {
		t.Fatalf("run after the stated change: %v (%s %s), want ok", err, run.Outcome, run.Error)
	}
	// when usage goes on past midnight, with late webhooks on both sides
	// of the boundary, and the source runs until the hours settle
	f.now = day1.Add(20 * time.Minute)
	f.both(t, "b3", "cus_b", 2, day1.Add(5*time.Minute))
	f.both(t, "b4", "cus_b", 1, hour0.Add(23*time.Hour+50*time.Minute)) // late, hour 23
	f.stripe.set("mtr_api", "cus_b", day1.Add(10*time.Minute), 3)       // its webhook comes later
	if _, err := f.runOf(t); err != nil || f.total(t, "wl-b") != 11 {
		t.Fatalf("run after midnight: %v, total %d, want 11 (2 + 4 by the hour, 5 for the day)", err, f.total(t, "wl-b"))
	}
	f.now = day1.Add(40 * time.Minute)
	f.webhook(t, "b5", "cus_b", 3, day1.Add(10*time.Minute))            // late, day side, already counted
	f.both(t, "b6", "cus_b", 2, hour0.Add(22*time.Hour+55*time.Minute)) // late, hour 22
	f.webhook(t, "b7", "cus_b", 1, day1.Add(30*time.Minute))            // webhook only, day side
	for f.now.Before(day1.Add(3*time.Hour + 30*time.Minute)) {
		if _, err := f.runOf(t); err != nil {
			t.Fatalf("run at %s: %v", f.now.Format(time.RFC3339), err)
		}
		f.now = f.now.Add(10 * time.Minute)
	}
	// then the total is max(W, P) per bucket once: hours 22 (4) and 23
	// (4), and the day 2026-12-01 (max(6, 5)), and the workload runs on
	w, err := f.spend.Workloads.Get(context.Background(), "wl-b")
	if err != nil || w.Total != 14 || w.Status == spend.StatusPaused {
		t.Fatalf("workload = total %d status %s (%v), want 14 and not paused", w.Total, w.Status, err)
	}
	// and no hour settled with a gap, and every read asked one width
	// that its whole window has
	if pages := f.pages(t, "bucket-gap#wl-b#"); len(pages) != 0 {
		t.Fatalf("settle pages %v, want none: the paths agree", pages)
	}
	for _, q := range f.stripe.asked {
		want := time.Hour
		if !q.Start.Before(day1) {
			want = 24 * time.Hour
		}
		if q.Width != want || (q.Start.Before(day1) && q.End.After(day1)) {
			t.Fatalf("query %s..%s at %s, want one side of the boundary at its own width",
				q.Start.Format(time.RFC3339), q.End.Format(time.RFC3339), q.Width)
		}
	}
}

func TestSumsAWidthChangeStatedTooLateIsRefusedNamingWidths(t *testing.T) {
	// given a source of hour buckets whose runs counted to 2026-11-30T04:00
	f := newSumsFixtureOf(t, changeConfig("1h", "2026-11-29T00:00:00Z"), hour0.Add(3*time.Hour+30*time.Minute))
	f.workload(t, "wl-l", 1_000_000, "cus_l")
	f.both(t, "l1", "cus_l", 2, hour0.Add(time.Hour))
	// when a deploy states day buckets from 2026-11-30, which those runs
	// counted in hours
	run, err := f.deploy(t, "wl-l", 2, boundaryConfig("2026-11-29T00:00:00Z", "2026-11-30T00:00:00Z"))
	// then the run is refused naming widths, and nothing is counted again
	if !errors.Is(err, reconcile.ErrSumsConfigChanged) || !strings.Contains(run.Error, "widths") {
		t.Fatalf("run after a late boundary: %v (%s), want ErrSumsConfigChanged naming widths", err, run.Error)
	}
	if got := f.total(t, "wl-l"); got != 2 {
		t.Fatalf("total = %d, want 2", got)
	}
}

// TestCheckSourcesRefusesAtStartWhatARunWouldRefuse: the spend worker
// buckets webhook records by the same widths and start as the runs, so
// it checks the recorded state when it starts: a plain width change is
// refused there, naming the source and widths, before any record is
// bucketed by it; the recorded configuration, and a boundary stated
// after the buckets the runs reached, start.
func TestCheckSourcesRefusesAtStartWhatARunWouldRefuse(t *testing.T) {
	ctx := context.Background()
	// given a source of hour buckets whose runs have recorded their state
	f := newSumsFixtureOf(t, changeConfig("1h", "2026-11-30T00:00:00Z"), hour0.Add(3*time.Hour+30*time.Minute))
	f.workload(t, "wl-s", 1_000_000, "cus_s")
	f.both(t, "s1", "cus_s", 2, hour0.Add(time.Hour))
	if _, err := f.runOf(t); err != nil {
		t.Fatal(err)
	}
	table := f.env.TableName("LedgerTable")
	check := func(config string) error {
		t.Helper()
		srcs, err := sums.ParseSources(config)
		if err != nil {
			t.Fatal(err)
		}
		return reconcile.CheckSources(ctx, f.env.DynamoDB, table, srcs, f.now.Add(10*time.Minute))
	}
	// when a function starts with the recorded configuration, it starts
	if err := check(changeConfig("1h", "2026-11-30T00:00:00Z")); err != nil {
		t.Fatalf("the recorded configuration: %v, want none", err)
	}
	// and with day buckets stated from a day the runs have not reached
	if err := check(boundaryConfig("2026-11-30T00:00:00Z", "2026-12-02T00:00:00Z")); err != nil {
		t.Fatalf("a boundary ahead: %v, want none", err)
	}
	// but a plain change to day buckets, or a start moved earlier, is
	// refused naming the source and the field
	for _, tc := range []struct{ name, config, field string }{
		{name: "a plain width change", config: changeConfig("24h", "2026-11-30T00:00:00Z"), field: "widths"},
		{name: "a start moved earlier", config: changeConfig("1h", "2026-11-29T00:00:00Z"), field: "start"},
	} {
		err := check(tc.config)
		if !errors.Is(err, reconcile.ErrSumsConfigChanged) || !strings.Contains(err.Error(), "stripe-test: "+tc.field) {
			t.Errorf("%s: %v, want ErrSumsConfigChanged naming stripe-test: %s", tc.name, err, tc.field)
		}
	}
}
