package localrun_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/period"
	"github.com/hookline/hookline/internal/spend"
)

// The billing-period part of the end-to-end model
// (TestEndToEndFaultModelPeriods): four workloads of the
// usage webhooks have a period (days in UTC and months in
// America/Los_Angeles, each with a workload that resumes at the boundary
// and one that stays paused), all with a boundary a quarter of an hour
// after the run starts. The model moves the run's clock through its
// control endpoint twice while usage is in flight: across the boundary
// once every such workload is paused in its first period, and past the
// first period's close. Some records sent after the boundary occurred
// in the first period (late), before its close and after it.
const (
	e2ePeriodLead  = 15 * time.Minute // the boundary, after the run's start
	e2ePeriodGrace = 5 * time.Minute  // the first period's close, after the boundary
	e2ePeriodLate  = 0.08             // share of a periodic workload's records after the boundary that are late
	// e2eCrossAt and e2eCloseAt are the shares of the deliveries sent
	// before the model crosses the boundary and passes the close.
	e2eCrossAt = 0.4
	e2eCloseAt = 0.7
)

// e2ePeriodWorkloads are the workloads with a period: its length, zone and
// boundary policy.
var e2ePeriodWorkloads = map[string]struct {
	length, zone string
	policy       spend.BoundaryPolicy
}{
	"wl-hot":    {"day", "UTC", spend.AtBoundaryResume},
	"wl-cold-0": {"day", "UTC", spend.AtBoundaryStay},
	"wl-near-0": {"month", "America/Los_Angeles", spend.AtBoundaryResume},
	"wl-near-3": {"month", "America/Los_Angeles", spend.AtBoundaryStay},
}

// e2ePeriods is the plan of the period part and what its moves found.
type e2ePeriods struct {
	boundary time.Time // the first periods' end, the same instant for all
	crossAt  int       // index of the first delivery after the boundary
	closeAt  int       // index of the first delivery after the close
	// inFlight are the usage queue's messages when each move was made.
	inFlight [2]int
}

type periodOutcome struct {
	workloads, periods, exact, late, lateAfterClose, decisions int
	inFlight                                                   [2]int
}

// planPeriods gives the periodic workloads their periods and caps: each
// cap is half of what its records sent before the boundary add up to, so
// that every one of them crosses its cap in its first period and is
// paused when the clock crosses. It marks the late records.
func (r *e2eRun) planPeriods(ds []e2eDelivery) {
	if !r.mix.periods {
		return
	}
	boundary := time.Now().Add(e2ePeriodLead).Truncate(time.Second)
	for !r.boundaryFits(boundary) {
		boundary = boundary.Add(time.Hour) // a local time daylight saving skips or repeats
	}
	r.periods = &e2ePeriods{boundary: boundary, crossAt: int(float64(len(ds)) * e2eCrossAt), closeAt: int(float64(len(ds)) * e2eCloseAt)}
	first := map[*e2eRecord]int{}
	for i, d := range ds {
		if _, ok := first[d.rec]; d.rec != nil && !ok {
			first[d.rec] = i
		}
	}
	before := map[string]int64{}
	for _, rec := range r.records {
		if _, ok := e2ePeriodWorkloads[rec.ref]; !ok || rec.ghost {
			continue
		}
		if first[rec] < r.periods.crossAt {
			before[rec.ref] += rec.units
		} else {
			rec.late = r.d.Roll("period-late", rec.id) < e2ePeriodLate
		}
	}
	for i, w := range r.workloads {
		if _, ok := e2ePeriodWorkloads[w.id]; ok {
			p := r.periodsOf(w.id)
			r.workloads[i].periods, r.workloads[i].cap = &p, max(before[w.id]/2, 1)
		}
	}
}

// periodsOf is workload id's period, anchored at the model's boundary.
func (r *e2eRun) periodsOf(id string) spend.Periods {
	pw := e2ePeriodWorkloads[id]
	zone, err := time.LoadLocation(pw.zone)
	if err != nil {
		r.t.Fatal(err)
	}
	grace := e2ePeriodGrace.String()
	p, err := spend.ParsePeriods(period.Config{Period: pw.length, TimeZone: pw.zone,
		Anchor: r.periods.boundary.In(zone).Format("2006-01-02T15:04:05")}, grace, string(pw.policy))
	if err != nil {
		r.t.Fatal(err)
	}
	return p
}

// boundaryFits reports whether every periodic workload's period starts at
// b when anchored there.
func (r *e2eRun) boundaryFits(b time.Time) bool {
	saved := r.periods
	defer func() { r.periods = saved }()
	r.periods = &e2ePeriods{boundary: b}
	for id := range e2ePeriodWorkloads {
		p, err := r.periodsOf(id).At(b)
		if err != nil || !p.Start.Equal(b) {
			return false
		}
	}
	return true
}

// occurred is when rec occurred, as it is published now: the run's time,
// or for a late record published after the boundary a time in the ten
// minutes before it.
func (r *e2eRun) occurred(rec *e2eRecord) time.Time {
	now := r.sys.Clock().Now().UTC().Truncate(time.Millisecond)
	if r.periods == nil || !rec.late || now.Before(r.periods.boundary) {
		return now
	}
	return r.periods.boundary.Add(-time.Duration(1+r.d.Hash("late-at", rec.id)%600) * time.Second)
}

// beforeDelivery makes the period part's moves when delivery i is next:
// across the boundary once every periodic workload is paused, and past
// the close.
func (r *e2eRun) beforeDelivery(i int) {
	if r.periods == nil {
		return
	}
	switch i {
	case r.periods.crossAt:
		r.waitPaused()
		r.periods.inFlight[0] = r.depth("usage")
		r.moveTo(r.periods.boundary.Add(2 * time.Second))
	case r.periods.closeAt:
		r.periods.inFlight[1] = r.depth("usage")
		r.moveTo(r.periods.boundary.Add(e2ePeriodGrace + 2*time.Second))
	}
}

// waitPaused waits until every periodic workload is paused, as it must
// be once the records sent so far have been applied.
func (r *e2eRun) waitPaused() {
	deadline := time.Now().Add(2 * time.Minute)
	for ; time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		paused := 0
		for id := range e2ePeriodWorkloads {
			if w, err := r.spend.Workloads.Get(context.Background(), id); err == nil && w.Status == spend.StatusPaused {
				paused++
			}
		}
		if paused == len(e2ePeriodWorkloads) {
			return
		}
	}
	r.t.Errorf("seed %d: the periodic workloads were not all paused in their first period within 2m", r.seed)
}

// moveTo moves the run's clock to at, from outside, as a drill does.
func (r *e2eRun) moveTo(at time.Time) {
	if now := r.sys.Clock().Now(); !at.After(now) {
		at = now.Add(time.Second)
	}
	if code, body := clockCall(r.t, r.sys, fmt.Sprintf(`{"set":%q}`, at.UTC().Format(time.RFC3339Nano))); code != http.StatusOK {
		r.t.Errorf("seed %d: move the clock to %s: %d %s", r.seed, at, code, body)
	}
}

// periodSums are what workload w's records add up to in its first
// period, its second, and the first's records sent after its close.
func (r *e2eRun) periodSums(w e2eWorkload) (p1, p2 period.Period, first, second, afterClose int64) {
	p1, _ = w.periods.At(r.periods.boundary.Add(-time.Second))
	p2, _ = w.periods.At(r.periods.boundary)
	for _, rec := range r.records {
		if rec.ref != w.id || rec.ghost {
			continue
		}
		switch at := rec.at; {
		case at.Before(p2.Start):
			first += rec.units
			if rec.afterClose {
				afterClose += rec.units
			}
		default:
			second += rec.units
		}
	}
	return p1, p2, first, second, afterClose
}

// periodsReached reports whether every periodic workload's two periods
// hold their records' sums.
func (r *e2eRun) periodsReached() bool {
	for _, w := range r.workloads {
		if w.periods == nil {
			continue
		}
		_, _, first, second, _ := r.periodSums(w)
		cur, prev, err := r.spend.Explainer.Periods(context.Background(), w.id)
		if err != nil || cur == nil || prev == nil || cur.Total != second || prev.Total != first ||
			(prev.LateUnits > 0 && prev.LatePagedAt.IsZero()) {
			return false
		}
	}
	return true
}

// checkPeriods checks each periodic workload: both periods' totals exact,
// one pause page in the first period and one in the second when it
// crossed there and resumed at the boundary, one boundary decision by
// its policy, and late usage after the close paged once with the amount
// of the record its page names.
func (r *e2eRun) checkPeriods(rep *e2eReport) {
	if r.periods == nil {
		return
	}
	rep.periods.inFlight = r.periods.inFlight
	pages := r.sys.Sim.Pager.Pages()
	for _, w := range r.workloads {
		if w.periods == nil {
			continue
		}
		rep.periods.workloads++
		p1, p2, first, second, afterClose := r.periodSums(w)
		cur, prev, err := r.spend.Explainer.Periods(context.Background(), w.id)
		if err != nil || cur == nil || prev == nil {
			rep.problems = append(rep.problems, fmt.Sprintf("workload %s: periods %v %v: %v", w.id, cur, prev, err))
			continue
		}
		rep.periods.periods += 2
		rep.totals.workloads++
		exact := true
		for _, c := range []struct {
			name      string
			got       *spend.PeriodView
			want      period.Period
			wantTotal int64
		}{{"current", cur, p2, second}, {"previous", prev, p1, first}} {
			switch {
			case c.got.Period.ID() != c.want.ID():
				exact = false
				rep.problems = append(rep.problems, fmt.Sprintf("workload %s: %s period %s, want %s", w.id, c.name, c.got.Period, c.want))
			case c.got.Total != c.wantTotal:
				exact = false
				if c.got.Total > c.wantTotal {
					rep.totals.over++
				} else {
					rep.totals.under++
				}
				rep.problems = append(rep.problems, fmt.Sprintf("workload %s: %s period %s total %d, want %d", w.id, c.name, c.want, c.got.Total, c.wantTotal))
			default:
				rep.periods.exact++
			}
		}
		if exact {
			rep.totals.exact++
		}
		r.checkPeriodPages(rep, w, pages, second)
		r.checkLate(rep, w, prev, pages, first, afterClose)
	}
	for _, rec := range r.records {
		if rec.late && !rec.at.Before(r.periods.boundary) {
			rep.problems = append(rep.problems, fmt.Sprintf("late record %s occurred at %s, after the boundary", rec.id, rec.at))
		}
		if rec.late {
			rep.periods.late++
		}
	}
}

// checkPeriodPages wants w's pause pages (one in each period it crossed
// its cap in while active) and one boundary decision by its policy.
func (r *e2eRun) checkPeriodPages(rep *e2eReport, w e2eWorkload, pages []pager.Event, second int64) {
	want := 1
	if w.periods.AtBoundary == spend.AtBoundaryResume && second > w.cap {
		want++
	}
	rep.pages.crossings += want
	if n := len(pauseKeys(pages)[w.id]); n == want {
		rep.pages.paged += want
	} else {
		rep.problems = append(rep.problems, fmt.Sprintf("workload %s (%s, cap %d, second period %d) has %d pause pages, want %d",
			w.id, w.periods.AtBoundary, w.cap, second, n, want))
	}
	action, other := spend.ActionResumeAtBoundary, spend.ActionStayAtBoundary
	if w.periods.AtBoundary == spend.AtBoundaryStay {
		action, other = other, action
	}
	keys := func(a string) map[string]bool {
		out := map[string]bool{}
		for _, p := range pages {
			if p.Payload != nil && strings.HasPrefix(p.Payload.Summary, "spend cap action="+a+" workload="+w.id+" ") {
				out[p.DedupKey] = true
			}
		}
		return out
	}
	if n, m := len(keys(action)), len(keys(other)); n != 1 || m != 0 {
		rep.problems = append(rep.problems, fmt.Sprintf("workload %s: %d %s pages and %d %s, want 1 and 0", w.id, n, action, m, other))
	} else {
		rep.periods.decisions++
	}
}

// checkLate wants the late usage after w's first period's close (at least
// the records sent after it, at most the period's total) paged once, in
// the name of a record of that period and with its units.
func (r *e2eRun) checkLate(rep *e2eReport, w e2eWorkload, prev *spend.PeriodView, pages []pager.Event, first, afterClose int64) {
	rep.periods.lateAfterClose += int(afterClose)
	if prev.LateUnits < afterClose || prev.LateUnits > first {
		rep.problems = append(rep.problems, fmt.Sprintf("workload %s: late units %d, want %d to %d", w.id, prev.LateUnits, afterClose, first))
	}
	late := map[string]string{}
	for _, p := range pages {
		if p.Payload != nil && strings.HasPrefix(p.Payload.Summary, "spend late usage workload="+w.id+" ") {
			late[p.DedupKey] = p.Payload.Summary
		}
	}
	want := 0
	if prev.LateUnits > 0 {
		want = 1
	}
	if len(late) != want {
		rep.problems = append(rep.problems, fmt.Sprintf("workload %s: %d late usage pages for %d late units, want %d", w.id, len(late), prev.LateUnits, want))
	}
	for _, line := range late {
		_, id, _ := strings.Cut(line, " record=")
		id, _, _ = strings.Cut(id, " ")
		rec := r.recordByID(id)
		if rec == nil || rec.ref != w.id || !strings.Contains(line, fmt.Sprintf(" units=%d ", rec.units)) || !rec.at.Before(r.periods.boundary) {
			rep.problems = append(rep.problems, fmt.Sprintf("workload %s: the late usage page %q names no late record of the period with its units", w.id, line))
		}
	}
}

func (r *e2eRun) recordByID(id string) *e2eRecord {
	for _, rec := range r.records {
		if rec.id == id {
			return rec
		}
	}
	return nil
}

// periodPage reports whether p is a page checkPeriods checks.
func (r *e2eRun) periodPage(p pager.Event) bool {
	if r.periods == nil || p.Payload == nil {
		return false
	}
	for id := range e2ePeriodWorkloads {
		for _, prefix := range []string{"spend cap action=" + spend.ActionResumeAtBoundary, "spend cap action=" + spend.ActionStayAtBoundary, "spend late usage"} {
			if strings.HasPrefix(p.Payload.Summary, prefix+" workload="+id+" ") {
				return true
			}
		}
	}
	return false
}
