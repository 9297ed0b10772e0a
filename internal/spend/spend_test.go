package spend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/pager"
)

// observed is the observation time of every test record.
var observed = time.Date(2026, 11, 30, 3, 17, 0, 0, time.UTC)

const maxAge = 6 * time.Hour

type recorder struct {
	mu        sync.Mutex
	counts    map[string]int64
	durations map[string]int
}

func (r *recorder) Count(name string, n int64, _ map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[name] += n
}

func (r *recorder) Duration(name string, _ time.Duration, _ map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.durations[name]++
}

func (r *recorder) count(name string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[name]
}

type fixture struct {
	s       *Spend
	outbox  *pager.Outbox
	metrics *recorder
	now     time.Time
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	env := localaws.StartForTest(t)
	return newFixtureOn(t, env, nil)
}

func newFixtureOn(t testing.TB, env *localaws.Env, sender pager.Sender) *fixture {
	t.Helper()
	return newFixtureWith(t, env, env.DynamoDB, sender)
}

// newFixtureWith is newFixtureOn with the ledger's client replaced by db
// (a wrapper around env.DynamoDB).
func newFixtureWith(t testing.TB, env *localaws.Env, db DB, sender pager.Sender) *fixture {
	t.Helper()
	f := &fixture{metrics: &recorder{counts: map[string]int64{}, durations: map[string]int{}},
		now: time.Date(2026, 11, 30, 3, 18, 0, 0, time.UTC)}
	var err error
	f.outbox, err = pager.NewOutbox(pager.OutboxConfig{DB: env.DynamoDB, Table: env.TableName("LedgerTable"),
		Sender: sender, BaseBackoff: time.Second, MaxBackoff: time.Minute, Now: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	f.s, err = New(Config{DB: db, LedgerTable: env.TableName("LedgerTable"),
		WorkloadsTable: env.TableName("WorkloadsTable"), Pages: f.outbox,
		Webhook:    PathContract{ExpectedArrival: 5 * time.Second, MaxAge: maxAge, Interval: time.Minute},
		Poll:       PathContract{ExpectedArrival: 10 * time.Minute, MaxAge: maxAge, Interval: 15 * time.Minute},
		ReconOwner: "billing-oncall", ReconRoutingKey: "rk-recon", Metrics: f.metrics, Now: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) clock() time.Time { return f.now }

func (f *fixture) workload(t testing.TB, id string, capUnits, step int64) {
	t.Helper()
	if _, err := f.s.Workloads.CreateWorkload(context.Background(), NewWorkload{ID: id, Owner: "team-" + id,
		RoutingKey: "rk-" + id, Cap: capUnits, Step: step}); err != nil {
		t.Fatal(err)
	}
}

func usage(rec, ref string, units int64) Usage {
	return Usage{RecordID: rec, WorkloadRef: ref, Units: units, OccurredAt: observed.Add(-time.Second),
		ObservedAt: observed, Path: PathWebhook, EventID: "evt_" + rec}
}

func (f *fixture) apply(t testing.TB, u Usage) Result {
	t.Helper()
	res, err := f.s.Ledger.Apply(context.Background(), u)
	if err != nil {
		t.Fatalf("Apply %s: %v", u.RecordID, err)
	}
	return res
}

func (f *fixture) total(t testing.TB, id string) int64 {
	t.Helper()
	w, err := f.s.Workloads.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return w.Total
}

// pages returns the pending pages whose dedup key starts with prefix.
func (f *fixture) pages(t testing.TB, prefix string) []pager.Page {
	t.Helper()
	all, err := f.outbox.Pending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []pager.Page
	for _, p := range all {
		if strings.HasPrefix(p.DedupKey, prefix) {
			out = append(out, p)
		}
	}
	return out
}

func TestPageLine(t *testing.T) {
	// given the decision of the design's example, when formatted, then the line matches byte for byte
	got := PageLine(ActionPause, "workload-7", 1012, 1000, "evt_123", "ur_123", time.Date(2026, 11, 30, 3, 17, 0, 0, time.UTC))
	want := "spend cap action=pause workload=workload-7 attributed=1012 cap=1000 event=evt_123 record=ur_123 observed=2026-11-30T03:17:00Z"
	if got != want {
		t.Errorf("PageLine =\n%q\nwant\n%q", got, want)
	}
	// and a non-UTC time is written in UTC with seconds
	local := time.Date(2026, 11, 30, 4, 17, 0, 999, time.FixedZone("CET", 3600))
	if got := PageLine(ActionPause, "workload-7", 1012, 1000, "evt_123", "ur_123", local); got != want {
		t.Errorf("PageLine(CET) = %q", got)
	}
	// and a record seen only by polling names no event, only the record
	want = "spend cap action=pause workload=workload-7 attributed=1012 cap=1000 record=ur_123 observed=2026-11-30T03:17:00Z"
	if got := PageLine(ActionPause, "workload-7", 1012, 1000, "", "ur_123", local); got != want {
		t.Errorf("PageLine(no event) = %q", got)
	}
}

func TestSameRecordFiveTimes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tests := []struct {
		name       string
		concurrent bool
	}{
		{name: "sequential"},
		{name: "concurrent", concurrent: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given a workload and one usage record
			id := "w-five-" + tc.name
			f.workload(t, id, 1000, 0)
			u := usage("rec-five-"+tc.name, id, 42)
			before := f.metrics.count(MetricDuplicate)

			// when the record is applied five times
			results := make([]Result, 5)
			var wg sync.WaitGroup
			for i := range results {
				run := func() {
					res, err := f.s.Ledger.Apply(context.Background(), u)
					if err != nil {
						t.Errorf("Apply: %v", err)
					}
					results[i] = res
				}
				if tc.concurrent {
					wg.Go(run)
				} else {
					run()
				}
			}
			wg.Wait()

			// then exactly one applied, four are duplicates, and the total is exact
			n := map[Outcome]int{}
			for _, r := range results {
				n[r.Outcome]++
			}
			if n[Applied] != 1 || n[Duplicate] != 4 {
				t.Errorf("outcomes = %v, want 1 applied and 4 duplicates", n)
			}
			if got := f.total(t, id); got != 42 {
				t.Errorf("total = %d, want 42", got)
			}
			if got := f.metrics.count(MetricDuplicate) - before; got != 4 {
				t.Errorf("duplicate count = %d, want 4", got)
			}
		})
	}
}

func TestDeferred(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.workload(t, "w-retired", 1000, 0)
	f.workload(t, "w-bystander", 1000, 0)
	if err := f.s.Workloads.Retire(ctx, "w-retired"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		ref        string
		wantReason string
		wantID     string
	}{
		{name: "retired workload", ref: "w-retired", wantReason: ReasonRetiredWorkload, wantID: "w-retired"},
		{name: "unknown reference", ref: "acct-unknown", wantReason: ReasonUnknownWorkload},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given a valid record for tc.ref
			u := usage("rec-defer-"+tc.ref, tc.ref, 70)

			// when applied (twice)
			res := f.apply(t, u)
			again := f.apply(t, u)

			// then it is deferred with a deadline, a reason and an owner
			if res.Outcome != Deferred || again.Outcome != Deferred || res.Deferred == nil {
				t.Fatalf("outcomes = %s, %s; want deferred", res.Outcome, again.Outcome)
			}
			d := res.Deferred
			if d.Reason != tc.wantReason || d.Owner != "billing-oncall" || d.WorkloadID != tc.wantID ||
				!d.Deadline.Equal(f.now.Add(maxAge)) || d.Units != 70 || d.Status != "open" {
				t.Errorf("deferred = %+v", d)
			}
			// and no total moved and no ledger entry exists
			for _, id := range []string{"w-retired", "w-bystander"} {
				if got := f.total(t, id); got != 0 {
					t.Errorf("total of %s = %d, want 0", id, got)
				}
			}
			if _, err := f.s.Ledger.Entry(ctx, u.RecordID); !errors.Is(err, ErrNotFound) {
				t.Errorf("Entry err = %v, want ErrNotFound", err)
			}
			open, err := f.s.Ledger.OpenDeferred(ctx, f.now.Add(maxAge))
			if err != nil || !containsRecord(open, u.RecordID) {
				t.Errorf("OpenDeferred = %v, %v; want %s listed", open, err, u.RecordID)
			}
			if early, _ := f.s.Ledger.OpenDeferred(ctx, f.now.Add(time.Minute)); containsRecord(early, u.RecordID) {
				t.Errorf("record listed as due before its deadline")
			}
		})
	}
	if got := f.metrics.count(MetricDeferred); got != 2 {
		t.Errorf("deferred count = %d, want 2", got)
	}

	t.Run("reattribute after alias", func(t *testing.T) {
		// given the unknown reference now aliases a workload
		if err := f.s.Workloads.AddAlias(ctx, "acct-unknown", "w-bystander"); err != nil {
			t.Fatal(err)
		}
		// when the deferred record is reattributed
		res, err := f.s.Ledger.Reattribute(ctx, "rec-defer-acct-unknown")
		// then it is applied to that workload and no longer open
		if err != nil || res.Outcome != Applied || res.WorkloadID != "w-bystander" || res.Total != 70 {
			t.Fatalf("Reattribute = %+v, %v", res, err)
		}
		open, _ := f.s.Ledger.OpenDeferred(ctx, time.Time{})
		if containsRecord(open, "rec-defer-acct-unknown") {
			t.Errorf("reattributed record still open")
		}
	})
}

func containsRecord(ds []DeferredRecord, rec string) bool {
	for _, d := range ds {
		if d.RecordID == rec {
			return true
		}
	}
	return false
}

func TestAlias(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.workload(t, "w-img", 1000, 0)
	f.workload(t, "w-other", 1000, 0)

	// given an alias from the provider's reference
	if err := f.s.Workloads.AddAlias(ctx, "prov:proj/images", "w-img"); err != nil {
		t.Fatal(err)
	}
	// when a record names the reference, then it lands on the workload
	res := f.apply(t, usage("rec-alias", "prov:proj/images", 9))
	if res.Outcome != Applied || res.WorkloadID != "w-img" || res.Total != 9 {
		t.Errorf("Apply = %+v", res)
	}
	w, err := f.s.Workloads.Resolve(ctx, "prov:proj/images")
	if err != nil || w.ID != "w-img" {
		t.Errorf("Resolve = %v, %v", w.ID, err)
	}
	// and the same alias again is fine, while taking it for another workload is not
	if err := f.s.Workloads.AddAlias(ctx, "prov:proj/images", "w-img"); err != nil {
		t.Errorf("repeat AddAlias: %v", err)
	}
	if err := f.s.Workloads.AddAlias(ctx, "prov:proj/images", "w-other"); !errors.Is(err, ErrAliasTaken) {
		t.Errorf("AddAlias to another = %v, want ErrAliasTaken", err)
	}
	if err := f.s.Workloads.AddAlias(ctx, "prov:x", "w-none"); !errors.Is(err, ErrUnknownWorkload) {
		t.Errorf("AddAlias to missing = %v, want ErrUnknownWorkload", err)
	}
	if _, err := f.s.Workloads.CreateWorkload(ctx, NewWorkload{ID: "w-img", Owner: "o", RoutingKey: "r", Cap: 1}); !errors.Is(err, ErrWorkloadExists) {
		t.Errorf("CreateWorkload twice = %v, want ErrWorkloadExists", err)
	}
}

func TestCapBoundary(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tests := []struct {
		name       string
		units      []int64
		wantStatus Status
		wantPages  int
	}{
		{name: "below cap", units: []int64{500, 499}, wantStatus: StatusActive},
		{name: "exactly cap is not over", units: []int64{500, 500}, wantStatus: StatusActive},
		{name: "cap plus one is over", units: []int64{500, 500, 1}, wantStatus: StatusPaused, wantPages: 1},
		{name: "one record far over", units: []int64{1012}, wantStatus: StatusPaused, wantPages: 1},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given a workload with cap 1000
			id := fmt.Sprintf("w-boundary-%d", i)
			f.workload(t, id, 1000, 0)
			// when the records are applied in turn
			var last Result
			for j, n := range tc.units {
				last = f.apply(t, usage(fmt.Sprintf("rec-%s-%d", id, j), id, n))
			}
			// then the status and the pages follow total > cap
			w, _ := f.s.Workloads.Get(context.Background(), id)
			if w.Status != tc.wantStatus {
				t.Errorf("status = %s, want %s (total %d)", w.Status, tc.wantStatus, w.Total)
			}
			pages := f.pages(t, "spend-cap:"+id+":")
			if len(pages) != tc.wantPages || len(last.Decisions) != tc.wantPages {
				t.Fatalf("pages = %d, decisions = %d, want %d", len(pages), len(last.Decisions), tc.wantPages)
			}
			if tc.wantPages == 0 {
				return
			}
			d := last.Decisions[0]
			lastRec := fmt.Sprintf("rec-%s-%d", id, len(tc.units)-1)
			want := PageLine(ActionPause, id, w.Total, 1000, "evt_"+lastRec, lastRec, observed)
			if d.Line != want || pages[0].Event.Payload.Summary != want || d.RecordID != lastRec {
				t.Errorf("decision line %q, page %q, want %q", d.Line, pages[0].Event.Payload.Summary, want)
			}
			cd := pages[0].Event.Payload.CustomDetails
			if cd["attributed"] != float64(w.Total) || cd["cap"] != float64(1000) || cd["event"] != "evt_"+lastRec ||
				cd["next_reconciliation"] == "" || cd["last_accepted_event"] == nil {
				t.Errorf("custom_details = %v", cd)
			}
			if pages[0].Event.RoutingKey != "rk-"+id || pages[0].DedupKey != DedupKey(id, ActionPause, 0, 0) {
				t.Errorf("page routed to %q with key %q", pages[0].Event.RoutingKey, pages[0].DedupKey)
			}
		})
	}
}

func TestConcurrentCrossing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, n := range []int{2, 20} {
		t.Run(fmt.Sprintf("%d events", n), func(t *testing.T) {
			// given a workload 5 units below its cap
			id := fmt.Sprintf("w-race-%d", n)
			f.workload(t, id, 1000, 0)
			f.apply(t, usage("rec-"+id+"-base", id, 995))

			// when n records that each cross the cap arrive at once
			var mu sync.Mutex
			var decisions []Decision
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					res, err := f.s.Ledger.Apply(context.Background(), usage(fmt.Sprintf("rec-%s-%d", id, i), id, 10))
					if err != nil {
						t.Errorf("Apply: %v", err)
					}
					mu.Lock()
					decisions = append(decisions, res.Decisions...)
					mu.Unlock()
				})
			}
			wg.Wait()

			// then exactly one pause, one decision and one page, and the total is exact
			stored, err := f.s.Explainer.Decisions(context.Background(), id, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(decisions) != 1 || len(stored) != 1 || len(f.pages(t, "spend-cap:"+id+":")) != 1 {
				t.Errorf("won %d, stored %d decisions, %d pages; want 1 each", len(decisions), len(stored), len(f.pages(t, "spend-cap:"+id+":")))
			}
			w, _ := f.s.Workloads.Get(context.Background(), id)
			if w.Status != StatusPaused || w.Total != 995+int64(10*n) {
				t.Errorf("workload %s total %d, want paused with %d", w.Status, w.Total, 995+10*n)
			}
		})
	}
}

func TestEscalationOncePerStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	// given a workload with cap 1000 and a step of 100, paused at 1012
	id := "w-esc"
	f.workload(t, id, 1000, 100)
	f.apply(t, usage("rec-esc-0", id, 1012))

	steps := []struct {
		name      string
		units     int64
		wantPages int // escalation pages so far
	}{
		{name: "still in the first step", units: 88, wantPages: 0},   // 1100 = cap + 1*step: not past it
		{name: "past the first step", units: 1, wantPages: 1},        // 1101
		{name: "within the second step", units: 99, wantPages: 1},    // 1200
		{name: "two steps at once", units: 150, wantPages: 2},        // 1350: k=3, one page
		{name: "past the third step again", units: 10, wantPages: 2}, // 1360
	}
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			// when a record adds st.units
			f.apply(t, usage(fmt.Sprintf("rec-esc-%d", i+1), id, st.units))
			// then one escalation page per new step
			if got := len(f.pages(t, "spend-cap:"+id+":escalate:")); got != st.wantPages {
				t.Errorf("escalation pages = %d, want %d", got, st.wantPages)
			}
		})
	}

	t.Run("concurrent crossing of one step", func(t *testing.T) {
		// given the total at 1360 (k=3), when ten records of 10 arrive at once (to 1460, k=4)
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() {
				if _, err := f.s.Ledger.Apply(ctx, usage(fmt.Sprintf("rec-esc-c%d", i), id, 10)); err != nil {
					t.Errorf("Apply: %v", err)
				}
			})
		}
		wg.Wait()
		// then exactly one more escalation page, for step 4
		pages := f.pages(t, "spend-cap:"+id+":escalate:")
		if len(pages) != 3 {
			t.Fatalf("escalation pages = %d, want 3", len(pages))
		}
		if _, err := f.outbox.Get(ctx, DedupKey(id, ActionEscalate, 0, 4)); err != nil {
			t.Errorf("page for step 4: %v", err)
		}
	})
}

func TestDisagreement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.workload(t, "w-dis", 1000, 0)
	f.workload(t, "w-dis-other", 1000, 0)
	f.apply(t, usage("rec-dis", "w-dis", 40))

	tests := []struct {
		name      string
		ref       string
		units     int64
		wantPages int
	}{
		{name: "different amount", ref: "w-dis", units: 45, wantPages: 1},
		{name: "same disagreement again", ref: "w-dis", units: 45, wantPages: 1},
		{name: "different workload", ref: "w-dis-other", units: 40, wantPages: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given the record is in the ledger with 40 units for w-dis
			// when the poll path reports it with other values
			u := usage("rec-dis", tc.ref, tc.units)
			u.Path, u.EventID = PathPoll, ""
			res := f.apply(t, u)

			// then it is a disagreement, both versions are recorded, and nothing moved
			if res.Outcome != Disagreement || res.Disagreement == nil {
				t.Fatalf("outcome = %s, want disagreement", res.Outcome)
			}
			d := res.Disagreement
			if d.Kept.Units != 40 || d.Kept.Path != PathWebhook || d.Other.Units != tc.units || d.Other.Path != PathPoll ||
				d.Other.WorkloadID != tc.ref || d.Owner != "billing-oncall" {
				t.Errorf("disagreement = %+v", d)
			}
			if f.total(t, "w-dis") != 40 || f.total(t, "w-dis-other") != 0 {
				t.Errorf("totals moved: %d, %d", f.total(t, "w-dis"), f.total(t, "w-dis-other"))
			}
			pages := f.pages(t, "spend-disagree:rec-dis:")
			if len(pages) != tc.wantPages || pages[0].Event.RoutingKey != "rk-recon" {
				t.Errorf("disagreement pages = %d, want %d to the reconciliation owner", len(pages), tc.wantPages)
			}
		})
	}
	recorded, err := f.s.Explainer.Disagreements(ctx, "w-dis", 0)
	if err != nil || len(recorded) != 2 {
		t.Errorf("Disagreements = %d, %v; want 2", len(recorded), err)
	}
	if got := f.metrics.count(MetricDisagreement); got != 2 {
		t.Errorf("disagreement count = %d, want 2", got)
	}
}

func TestCrossPathDuplicateNotesPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.workload(t, "w-paths", 1000, 0)
	// given a record first seen by polling, without an event ID
	u := usage("rec-paths", "w-paths", 5)
	u.Path, u.EventID = PathPoll, ""
	f.apply(t, u)
	// when the webhook delivers it
	res := f.apply(t, usage("rec-paths", "w-paths", 5))
	// then it is a duplicate, the entry notes both paths, and the event finds it
	if res.Outcome != Duplicate || f.total(t, "w-paths") != 5 {
		t.Fatalf("outcome %s, total %d", res.Outcome, f.total(t, "w-paths"))
	}
	e, err := f.s.Ledger.Entry(ctx, "rec-paths")
	if err != nil || len(e.Paths) != 2 || e.EventID != "evt_rec-paths" || e.Path != PathPoll {
		t.Errorf("entry = %+v, %v", e, err)
	}
	x, err := f.s.Explainer.ExplainEvent(ctx, "evt_rec-paths")
	if err != nil || x.Entry == nil || x.Entry.RecordID != "rec-paths" {
		t.Errorf("ExplainEvent = %+v, %v", x, err)
	}
}

func TestResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	id := "w-resume"
	f.workload(t, id, 1000, 0)
	// given a paused workload
	f.apply(t, usage("rec-r1", id, 1001))
	if _, err := f.s.Caps.Resume(ctx, "w-unknown"); !errors.Is(err, ErrUnknownWorkload) {
		t.Errorf("Resume unknown = %v", err)
	}

	// when the operator raises the cap and resumes
	if err := f.s.Caps.SetCap(ctx, id, 2000); err != nil {
		t.Fatal(err)
	}
	w, err := f.s.Caps.Resume(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// then it is active in a new cap epoch, and admitted
	if w.Status != StatusActive || w.CapEpoch != 1 {
		t.Errorf("after resume: %s epoch %d", w.Status, w.CapEpoch)
	}
	if a, _ := f.s.Caps.Admission(ctx, id); !a.Allowed {
		t.Errorf("admission after resume = %+v", a)
	}
	if _, err := f.s.Caps.Resume(ctx, id); !errors.Is(err, ErrNotPaused) {
		t.Errorf("Resume of an active workload = %v, want ErrNotPaused", err)
	}
	// and a new crossing pages again under a new dedup key
	res := f.apply(t, usage("rec-r2", id, 1000))
	if len(res.Decisions) != 1 || res.Decisions[0].DedupKey != DedupKey(id, ActionPause, 1, 0) {
		t.Fatalf("decisions = %+v", res.Decisions)
	}
	pages := f.pages(t, "spend-cap:"+id+":pause:")
	if len(pages) != 2 || pages[0].DedupKey == pages[1].DedupKey {
		t.Errorf("pause pages = %v", pages)
	}
}

func TestAdmission(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.workload(t, "w-adm-ok", 1000, 0)
	f.workload(t, "w-adm-over", 1000, 0)
	f.apply(t, usage("rec-adm", "w-adm-over", 1500))
	tests := []struct {
		name    string
		id      string
		want    Admission
		wantErr error
	}{
		{name: "allowed", id: "w-adm-ok", want: Admission{Allowed: true, Cap: 1000, Status: "active"}},
		{name: "denied", id: "w-adm-over", want: Admission{Reason: ReasonSpendCap, Attributed: 1500, Cap: 1000, Status: "paused"}},
		{name: "unknown", id: "w-adm-none", wantErr: ErrUnknownWorkload},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given the workload tc.id, when asked for admission, then the answer follows its status
			got, err := f.s.Caps.Admission(ctx, tc.id)
			if !errors.Is(err, tc.wantErr) || got != tc.want {
				t.Errorf("Admission = %+v, %v; want %+v, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestExplain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	id := "w-explain"
	f.workload(t, id, 1000, 0)
	if err := f.s.Workloads.Retire(ctx, "w-explain"); err != nil {
		t.Fatal(err)
	}
	// given a deferred record for the workload while it was retired, then
	// a paused workload with a disagreement
	f.apply(t, usage("rec-x-deferred", id, 3))
	if _, err := f.s.Caps.Resume(ctx, id); !errors.Is(err, ErrNotPaused) {
		t.Fatalf("Resume retired = %v", err)
	}
	reactivate(t, f, id)
	f.apply(t, usage("rec-x1", id, 600))
	f.apply(t, usage("rec-x2", id, 412))
	f.apply(t, usage("rec-x3", id, 7))
	f.apply(t, usage("rec-x1", id, 601))
	f.apply(t, usage("rec-unknown", "nobody", 11))
	next := f.now.Add(time.Hour)
	if err := f.s.Recon.PutReconRun(ctx, ReconRun{WorkloadID: id, StartedAt: f.now, FinishedAt: f.now, Records: 3, NextReconAt: next}); err != nil {
		t.Fatal(err)
	}

	// when explained
	x, err := f.s.Explainer.Explain(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// then it names the causing record, totals, last event, pending amounts and the deadline
	if x.Cause == nil || x.Cause.RecordID != "rec-x2" || x.Workload.Total != 1019 || x.Workload.Cap != 1000 ||
		x.Workload.Status != StatusPaused {
		t.Errorf("cause %+v, workload %+v", x.Cause, x.Workload)
	}
	if x.LastAccepted.RecordID != "rec-x3" || len(x.Decisions) != 1 || x.Decisions[0].Attributed != 1012 {
		t.Errorf("last %+v, decisions %+v", x.LastAccepted, x.Decisions)
	}
	if x.PendingDeferred != 3 || x.UnknownDeferred != 11 || len(x.Disagreements) != 1 {
		t.Errorf("pending %d, unknown %d, disagreements %d", x.PendingDeferred, x.UnknownDeferred, len(x.Disagreements))
	}
	if !x.NextReconAt.Equal(next) || len(x.ReconRuns) != 1 {
		t.Errorf("next recon %v, runs %d", x.NextReconAt, len(x.ReconRuns))
	}

	// and the event that tipped it explains the same decision
	ex, err := f.s.Explainer.ExplainEvent(ctx, "evt_rec-x2")
	if err != nil || ex.Entry == nil || len(ex.Decisions) != 1 || ex.Workload == nil {
		t.Fatalf("ExplainEvent = %+v, %v", ex, err)
	}
	if ex2, err := f.s.Explainer.ExplainEvent(ctx, "rec-unknown"); err != nil || ex2.Deferred == nil {
		t.Errorf("ExplainEvent(deferred) = %+v, %v", ex2, err)
	}
	if _, err := f.s.Explainer.ExplainEvent(ctx, "evt_none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ExplainEvent(none) = %v, want ErrNotFound", err)
	}
}

// reactivate brings a retired workload back, as an operator would with a
// direct status change (retirement has no API way back).
func reactivate(t *testing.T, f *fixture, id string) {
	t.Helper()
	if err := f.s.Workloads.updateWorkload(context.Background(), id, "reactivate", statusSet(StatusActive), nil); err != nil {
		t.Fatal(err)
	}
}

func TestPageDeliveredAfterPagerRecovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// given PagerDuty that answers 503, then 202
	var mu sync.Mutex
	calls, delivered := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		delivered++
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	sender, err := pager.NewHTTPSender(pager.HTTPSenderConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureOn(t, localaws.StartForTest(t), sender)
	f.workload(t, "w-pd", 100, 0)

	// when a record crosses the cap and the outbox is flushed while the pager is down
	f.apply(t, usage("rec-pd", "w-pd", 101))
	if res, err := f.outbox.Flush(ctx); err != nil || res.Retried != 1 {
		t.Fatalf("Flush while down = %+v, %v", res, err)
	}
	// then the page is still pending, and after recovery it is delivered exactly once
	if len(f.pages(t, "spend-cap:w-pd:")) != 1 {
		t.Fatal("page not pending after a failed send")
	}
	for range 3 {
		f.now = f.now.Add(time.Minute)
		if _, err := f.outbox.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sent, _ := f.outbox.Sent(ctx, 0)
	if delivered != 1 || calls != 2 || len(sent) != 1 || len(f.pages(t, "")) != 0 {
		t.Errorf("delivered %d in %d calls, sent %d", delivered, calls, len(sent))
	}
}
