package reconcile_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
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
