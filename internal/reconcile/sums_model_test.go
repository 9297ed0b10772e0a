package reconcile_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/paced"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/sums"
)

// The sums fault model: a seeded usage history of six healthy workloads
// on one Stripe source, read by the reconciler every ten minutes for six
// hours across a UTC midnight, while deploys change the source between
// runs and two workloads are poisoned for good. Its model of the ledger
// is independent of the reconciler: each bucket of a workload counts
// max(W, P) once, W the webhooks the door applied under any of the
// meter's names and P the provider's final sum, whatever the deploys did
// in between. A bucket is an hour before the midnight and the day after
// it: a deploy before the midnight states day buckets from then on.
//
// HOOKLINE_SUMS_MODEL_SEED replays a seed; a failure prints its own.
//
// A width changed without a boundary is refused by the reconciler's runs,
// while the spend worker buckets at the width it is given
// (docs/design.md, "Changing a sums source's configuration"): the model
// makes that change only once every webhook it still sends is of the
// day's bucket, which either width puts at the midnight.

// modelRuns is how many runs the model takes, ten minutes apart.
const modelRuns = 36

// modelSource is the source's configuration as one deploy has it.
type modelSource struct {
	meter string    // the ledger's name of mtr_api
	door  string    // the name the door gives its records, if another
	start time.Time // the source's start
	width string    // the bucket width, or the first of widths
	// dayFrom, when set, states day buckets from then on.
	dayFrom time.Time
}

// doorMeter is the meter the door's records carry.
func (c modelSource) doorMeter() string { return cmp.Or(c.door, c.meter) }

func (c modelSource) json() string {
	width := fmt.Sprintf(`"width": %q`, c.width)
	if !c.dayFrom.IsZero() {
		width = fmt.Sprintf(`"widths": [{"width": %q}, {"width": "24h", "from": %q}]`, c.width, c.dayFrom.Format(time.RFC3339))
	}
	return fmt.Sprintf(`{"stripe-test": {"provider": "stripe", "usage_source": "meters", "account": "acct_1",
	"start": %q, "settle": "3h", "lag": "2m", "interval": "5m", %s, "quiet_every": 1,
	"meters": {%q: {"provider_meter": "mtr_api", "aggregation": "sum", "door_names": %s}}},
	"stripe-other": {"provider": "stripe", "usage_source": "other", "account": "acct_2", "livemode": true,
	"start": "2026-11-30T00:00:00Z", "meters": {"api": {"provider_meter": "mtr_other", "aggregation": "count"}}}}`,
		c.start.Format(time.RFC3339), width, c.meter, doorNames(c.door))
}

func doorNames(door string) string {
	if door == "" {
		return "[]"
	}
	return fmt.Sprintf("[%q]", door)
}

// modelEvent is a deploy or a provider fault the model applies before
// a run.
type modelEvent struct {
	name string
	// apply changes the configuration or the provider; it returns how many
	// runs the change is refused for (ErrSumsConfigChanged) and what the
	// refusal names.
	apply func() (refusedRuns int, names string)
}

type modelBucket struct{ w, p int64 }

// sumsModel is the model's state beside the fixture.
type sumsModel struct {
	t       *testing.T
	f       *sumsFixture
	rng     *rand.Rand
	cfg     modelSource
	buckets map[string]map[time.Time]*modelBucket // workload -> bucket start -> sums
	records int
	// deleted: the provider refuses every customer (the meter deleted).
	deleted bool
	// reading counts the runs that could read; lastRead is the last of
	// them that asked the provider for each reference.
	reading  int
	lastRead map[string]int
	used     map[time.Time]bool
}

var (
	modelHealthy  = []string{"wl-0", "wl-1", "wl-2", "wl-3", "wl-4", "wl-5"}
	modelOverflow = "wl-px" // a provider value would carry it past MaxTotal
	modelLoop     = "wl-py" // its summaries' cursor loops
	// modelMidnight is the UTC midnight the model's runs cross, from
	// which the source's buckets are days.
	modelMidnight = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
)

func modelSeed(t *testing.T) uint64 {
	if v := os.Getenv("HOOKLINE_SUMS_MODEL_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("HOOKLINE_SUMS_MODEL_SEED=%q: %v", v, err)
		}
		return seed
	}
	return rand.Uint64()%1_000_000 + 1
}

// configure deploys cfg.
func (m *sumsModel) configure(cfg modelSource) {
	m.t.Helper()
	m.cfg = cfg
	m.f.configure(m.t, cfg.json())
}

// usage draws this interval's usage of the healthy workloads: both ways,
// the webhook alone or the provider alone, in the last 50 minutes.
func (m *sumsModel) usage() {
	m.t.Helper()
	for i, id := range modelHealthy {
		if m.rng.Float64() < 0.4 {
			continue
		}
		m.records++
		at := m.f.now.Add(-time.Duration(3+m.rng.IntN(47)) * time.Minute).Add(time.Duration(m.rng.IntN(60)) * time.Second)
		at = maxTime(at, m.cfg.start)
		for m.used[at] { // one provider value per instant
			at = at.Add(time.Second)
		}
		m.used[at] = true
		units := int64(1 + m.rng.IntN(20))
		h := m.bucket(id, at)
		door, provider := true, true
		switch roll := m.rng.Float64(); {
		case roll < 0.15:
			door = false
		case roll < 0.25:
			provider = false
		}
		ref := fmt.Sprintf("cus_%d", i)
		if door {
			rec := fmt.Sprintf("r%04d", m.records)
			if _, err := m.f.spend.Ledger.Apply(context.Background(), spend.Usage{RecordID: rec, WorkloadRef: ref, Units: units,
				OccurredAt: at, ObservedAt: m.f.now, Path: spend.PathWebhook, EventID: "evt_" + rec, Source: "meters",
				Meter: m.cfg.doorMeter()}); err != nil {
				m.t.Fatalf("apply %s: %v", rec, err)
			}
			h.w += units
		}
		if provider {
			m.f.stripe.set("mtr_api", ref, at, float64(units))
			h.p += units
		}
	}
}

// bucket is the model's bucket of workload id that holds at: the hour
// before modelMidnight, the day from it.
func (m *sumsModel) bucket(id string, at time.Time) *modelBucket {
	start := at.UTC().Truncate(time.Second).Truncate(time.Hour)
	if !start.Before(modelMidnight) {
		start = at.UTC().Truncate(sums.Day)
	}
	if m.buckets[id] == nil {
		m.buckets[id] = map[time.Time]*modelBucket{}
	}
	if m.buckets[id][start] == nil {
		m.buckets[id][start] = &modelBucket{}
	}
	return m.buckets[id][start]
}

// want is a workload's total by the model: max(W, P) per bucket.
func (m *sumsModel) want(id string) int64 {
	var n int64
	for _, h := range m.buckets[id] {
		n += max(h.w, h.p)
	}
	return n
}

// refusals are the provider's answers to the poisoned and, while the
// meter is deleted, to every customer.
func (m *sumsModel) refusals() map[string]error {
	loop := fmt.Errorf("%w: %w", sums.ErrRead, &paced.WalkError{Page: 3, Cursor: "sbs_A", Err: paced.ErrCursorLoop})
	out := map[string]error{"cus_py": loop}
	if m.deleted {
		for _, ref := range []string{"cus_0", "cus_1", "cus_2", "cus_3", "cus_4", "cus_5", "cus_px", "cus_py"} {
			out[ref] = fmt.Errorf("%w: %w: Stripe answered 404 resource_missing: No such billing meter: 'mtr_api' [req_%s]",
				sums.ErrRead, sums.ErrRefused, ref)
		}
	}
	return out
}

// events are the deploys and faults of the model, each at a seeded run.
func (m *sumsModel) events() map[int]modelEvent {
	start := m.cfg.start
	out := map[int]modelEvent{}
	at := func(lo, hi int, e modelEvent) {
		for {
			if i := lo + m.rng.IntN(hi-lo); out[i].apply == nil {
				out[i] = e
				return
			}
		}
	}
	at(1, 4, modelEvent{"day buckets stated from the coming midnight", func() (int, string) {
		c := m.cfg
		c.dayFrom = modelMidnight
		m.configure(c)
		return 0, ""
	}})
	at(4, 10, modelEvent{"meter renamed api -> calls at the door, door_names stating it", func() (int, string) {
		c := m.cfg
		c.door = "calls"
		m.configure(c)
		return 0, ""
	}})
	at(12, 17, modelEvent{"start moved two hours earlier", func() (int, string) {
		c := m.cfg
		c.start = start.Add(-2 * time.Hour)
		m.configure(c)
		return 2, "start"
	}})
	at(21, 26, modelEvent{"width changed to a day without a boundary", func() (int, string) {
		c := m.cfg
		c.width, c.dayFrom = "24h", time.Time{}
		m.configure(c)
		return 2, "widths"
	}})
	at(27, 31, modelEvent{"meter deleted at the provider for two runs", func() (int, string) {
		m.deleted = true
		return 0, ""
	}})
	return out
}

func TestSumsFaultModel(t *testing.T) {
	seed := modelSeed(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sums fault model seed %d: replay with HOOKLINE_SUMS_MODEL_SEED=%d go test ./internal/reconcile -run 'TestSumsFaultModel$' -count=1", seed, seed)
		}
	})
	// given six healthy workloads, one whose provider value would carry
	// it past the maximum total and one whose summaries' cursor loops
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	m := &sumsModel{t: t, rng: rand.New(rand.NewPCG(seed, 45)), buckets: map[string]map[time.Time]*modelBucket{},
		lastRead: map[string]int{}, used: map[time.Time]bool{}}
	m.cfg = modelSource{meter: "api", start: start, width: "1h"}
	m.f = newSumsFixtureOf(t, m.cfg.json(), modelMidnight.Add(-2*time.Hour-40*time.Minute))
	m.configure(m.cfg)
	for i, id := range modelHealthy {
		m.f.workload(t, id, 1_000_000, fmt.Sprintf("cus_%d", i))
	}
	m.f.workload(t, modelOverflow, spend.MaxTotal, "cus_px")
	m.f.workload(t, modelLoop, 1_000_000, "cus_py")
	if _, err := m.f.spend.Ledger.Apply(context.Background(), spend.Usage{RecordID: "huge", WorkloadRef: modelOverflow,
		Units: spend.MaxTotal - 5, OccurredAt: m.f.now, ObservedAt: m.f.now, Path: spend.PathWebhook, EventID: "evt_huge"}); err != nil {
		t.Fatal(err)
	}
	m.f.stripe.set("mtr_api", "cus_px", m.f.now.Add(-10*time.Minute), 10)
	events := m.events()
	restore := m.cfg

	// when 36 runs go by, ten minutes apart, with usage between them and
	// the deploys and faults at their seeded runs
	refusedLeft, refusedName, deletedLeft := 0, "", 0
	var refusedRuns, failedRuns int
	for run := range modelRuns {
		if e, ok := events[run]; ok {
			t.Logf("before run %d: %s", run, e.name)
			restore = m.cfg
			refusedLeft, refusedName = e.apply()
			if m.deleted {
				deletedLeft = 2
			}
		}
		m.f.stripe.refuse = m.refusals()
		m.usage()
		mark := len(m.f.stripe.asked)
		runs, err := m.f.rec.Run(context.Background(), fmt.Sprintf("run-%02d", run))
		r := runOfSource(runs, "stripe-test")
		switch {
		case refusedLeft > 0:
			// then a refused change counts nothing, names its field, and
			// counts a failed run, which the template alarms on
			if !errors.Is(err, reconcile.ErrSumsConfigChanged) || !strings.Contains(r.Error, refusedName) {
				t.Fatalf("run %d after a %s change: %v (%s), want ErrSumsConfigChanged naming it", run, refusedName, err, r.Error)
			}
			refusedRuns++
			if refusedLeft--; refusedLeft == 0 {
				c := restore
				c.door = m.cfg.door
				m.configure(c)
			}
		case r.Outcome == "failed":
			// then only the looping cursor stops a run, until it is paged
			// as a stall and skipped
			if !errors.Is(err, paced.ErrCursorLoop) || !strings.Contains(r.Error, "cursor") {
				t.Fatalf("run %d failed: %v, want only the looping cursor to stop a run", run, err)
			}
			failedRuns++
		case err != nil:
			t.Fatalf("run %d: %v", run, err)
		default:
			m.checkRead(run, r, m.f.stripe.asked[mark:])
		}
		if deletedLeft > 0 {
			if deletedLeft--; deletedLeft == 0 {
				m.deleted = false
			}
		}
		m.f.now = m.f.now.Add(10 * time.Minute)
	}
	// and the quiet runs after the last usage read it all
	for run := modelRuns; run < modelRuns+3; run++ {
		m.f.stripe.refuse = m.refusals()
		if _, err := m.f.rec.Run(context.Background(), fmt.Sprintf("run-%02d", run)); err != nil {
			t.Fatalf("quiet run %d: %v", run, err)
		}
		m.f.now = m.f.now.Add(10 * time.Minute)
	}

	// then every total is exact by the model
	for _, id := range modelHealthy {
		if got, want := m.f.total(t, id), m.want(id); got != want {
			t.Errorf("total of %s = %d, want %d (max(W, P) per bucket)", id, got, want)
		}
	}
	if got := m.f.total(t, modelOverflow); got != spend.MaxTotal-5 {
		t.Errorf("total of %s = %d, want it unchanged", modelOverflow, got)
	}
	if got := m.f.total(t, modelLoop); got != 0 {
		t.Errorf("total of %s = %d, want 0", modelLoop, got)
	}
	if failedRuns != 2 {
		t.Errorf("runs stopped by the looping cursor = %d, want 2 before its stall is skipped", failedRuns)
	}
	// and each refused change failed its runs, which SumsRunFailed counts
	// and the template alarms on
	if refusedRuns != 4 {
		t.Errorf("refused runs = %d, want 2 for the start and 2 for the width", refusedRuns)
	}
	// and each cause paged once a UTC day: the poisoned workloads on both
	// sides of the midnight, the deleted meter on the day it was deleted
	for _, c := range []struct {
		prefix, says string
		days         int
	}{
		{"sums-failed#stripe-test#" + modelOverflow + "#", "would pass", 2},
		{"sums-stalled#stripe-test#", "workload=" + modelLoop, 2},
		{"sums-source#stripe-test#", "No such billing meter", 1},
	} {
		pages := m.f.pages(t, c.prefix)
		ok := len(pages) == c.days
		var got []string
		for _, p := range pages {
			ok = ok && strings.Contains(p.Event.Payload.Summary, c.says)
			got = append(got, p.DedupKey+": "+p.Event.Payload.Summary)
		}
		if !ok {
			t.Errorf("pages %s* = %q, want %d, one a day, saying %q", c.prefix, got, c.days, c.says)
		}
	}
	// and each settled bucket that disagrees, and no other, has its gap,
	// paged with its workload's settle
	for _, id := range modelHealthy {
		m.checkGaps(id)
	}
}

// checkGaps checks workload id's settled heads: each holds the model's
// max(W, P) and gap P - W, and the workload has a settle page exactly
// when one of them disagrees.
func (m *sumsModel) checkGaps(id string) {
	m.t.Helper()
	heads, err := m.f.spend.Explainer.Buckets(context.Background(), id, 100)
	if err != nil {
		m.t.Fatal(err)
	}
	disagree := false
	for _, b := range heads {
		h := m.buckets[id][b.Start]
		if h == nil || !b.Settled {
			continue
		}
		if b.Counted != max(h.w, h.p) || b.Gap != h.p-h.w {
			m.t.Errorf("%s: counted %d gap %d, want %d and %d", b.BucketKey, b.Counted, b.Gap, max(h.w, h.p), h.p-h.w)
		}
		disagree = disagree || h.p != h.w
	}
	if pages := m.f.pages(m.t, "bucket-gap#"+id+"#"); (len(pages) > 0) != disagree {
		m.t.Errorf("%s: %d settle pages, want them exactly when a settled bucket disagrees (%v)", id, len(pages), disagree)
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// checkRead checks that the healthy workloads are read every sweep: each
// was asked of the provider within the last stallAfter runs that could
// read (a workload the source's runs stop at holds a sweep back for at
// most that many runs before it is skipped), unless the provider refused
// them all (the meter deleted).
func (m *sumsModel) checkRead(run int, r reconcile.SumsRun, asked []sums.Query) {
	m.t.Helper()
	if m.deleted {
		if len(r.Refused) != len(modelHealthy)+2 {
			m.t.Fatalf("run %d with the meter deleted refused %v, want every workload", run, r.Refused)
		}
		return
	}
	for _, fl := range r.Failed {
		if slices.Contains(modelHealthy, fl.Workload) {
			m.t.Fatalf("run %d skipped healthy %s: %+v", run, fl.Workload, r.Failed)
		}
	}
	m.reading++
	for _, q := range asked {
		m.lastRead[q.Ref] = m.reading
	}
	for i, id := range modelHealthy {
		if ref := fmt.Sprintf("cus_%d", i); m.reading-m.lastRead[ref] >= modelStallAfter {
			m.t.Fatalf("run %d: %s last read %d reading runs ago, want at most %d", run, id, m.reading-m.lastRead[ref], modelStallAfter-1)
		}
	}
}

// modelStallAfter is the reconciler's stallAfter: the runs a stopping
// failure may hold a sweep back.
const modelStallAfter = 3

func runOfSource(runs []reconcile.SumsRun, source string) reconcile.SumsRun {
	for _, r := range runs {
		if r.Source == source {
			return r
		}
	}
	return reconcile.SumsRun{}
}
