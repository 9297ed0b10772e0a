package lab

import (
	"encoding/json"
	"fmt"
	"time"
)

// LiveState is what the live page shows, sent once a second.
type LiveState struct {
	// T is the second now; Seconds are the last chartSeconds complete
	// ones.
	T       int      `json:"t"`
	Knobs   Knobs    `json:"knobs"`
	Seconds []Second `json:"seconds"`
	// Totals are since the start.
	Totals Totals `json:"totals"`
	// Now is the mean of the last nowSeconds seconds.
	Now Window `json:"now"`
	// Capacity sets the design's estimate beside the same quantities at
	// the knobs now and measured.
	Capacity []CapacityRow `json:"capacity"`
	// Changes are the last [LiveChanges] changes asked for, of
	// ChangesTotal since the start; Last compares the seconds before the
	// last one with those since.
	Changes      []Change      `json:"changes"`
	ChangesTotal int           `json:"changes_total"`
	Last         *BeforeAfter  `json:"last,omitempty"`
	Answers      []CheckAnswer `json:"answers"`
}

// Totals are counts since the lab started.
type Totals struct {
	Offered      int `json:"offered"`
	Accepted     int `json:"accepted"`
	Charged      int `json:"charged"`
	Duplicates   int `json:"duplicates"`
	Redeliveries int `json:"redeliveries"`
}

// Window is the mean per second of a run of seconds.
type Window struct {
	Seconds      int     `json:"seconds"`
	Offered      float64 `json:"offered"`
	Accepted     float64 `json:"accepted"`
	Charged      float64 `json:"charged"`
	Duplicates   float64 `json:"duplicates"`
	Redeliveries float64 `json:"redeliveries"`
	QueueDepth   float64 `json:"queue_depth"`
	OldestAge    float64 `json:"oldest_age_s"`
	P50          float64 `json:"p50_ms"`
	P99          float64 `json:"p99_ms"`
	// LostAcks is the share of acknowledgements lost in the window.
	LostAcks float64 `json:"lost_acks"`
}

// BeforeAfter is the last change with the seconds before and since, and
// the last few of those since.
type BeforeAfter struct {
	Change Change `json:"change"`
	Before Window `json:"before"`
	After  Window `json:"after"`
	Recent Window `json:"recent"`
}

// CapacityRow is one line of the design's capacity estimate.
type CapacityRow struct {
	Quantity string `json:"quantity"`
	Design   string `json:"design"`
	Expected string `json:"expected"`
	Measured string `json:"measured"`
}

// CheckAnswer is one of the design's check-yourself questions, answered
// with the run's figures.
type CheckAnswer struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// The design's capacity estimate.
const (
	designRate     = 500.0
	designLostAcks = 0.002
)

const (
	chartSeconds  = 120 // seconds the charts show
	nowSeconds    = 10  // seconds "now" and "before" average over
	recentSeconds = 5   // the last seconds since a change
	visibilitySec = 5   // the lab's visibility timeout, s
)

// State is the live lab's state now.
func (l *Live) State() LiveState {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	st := LiveState{T: l.nowTLocked(), Knobs: l.knobsLocked(now), Changes: append([]Change(nil), l.changes...),
		ChangesTotal: l.nChanges}
	st.Seconds = append([]Second(nil), l.secs[max(len(l.secs)-chartSeconds, 0):]...)
	for _, s := range l.secs {
		st.Totals.Offered += s.Offered
		st.Totals.Accepted += s.Accepted
		st.Totals.Charged += s.Charged
		st.Totals.Duplicates += s.Duplicates
		st.Totals.Redeliveries += s.Redeliveries
	}
	st.Now = l.windowLocked(st.T-nowSeconds, st.T)
	if n := len(l.changes); n > 0 {
		c := l.changes[n-1]
		st.Last = &BeforeAfter{Change: c, Before: l.windowLocked(c.T-nowSeconds, c.T), After: l.windowLocked(c.T, st.T),
			Recent: l.windowLocked(max(c.T, st.T-recentSeconds), st.T)}
	}
	st.Capacity = capacity(st.Knobs, st.Now)
	st.Answers = answers(st.Knobs, st.Now, st.Totals)
	return st
}

// StateJSON is [Live.State] as JSON.
func (l *Live) StateJSON() ([]byte, error) {
	b, err := json.Marshal(l.State())
	if err != nil {
		return nil, fmt.Errorf("lab: state: %w", err)
	}
	return b, nil
}

// windowLocked averages the kept seconds with from <= T < to.
func (l *Live) windowLocked(from, to int) Window {
	var w Window
	var asked, lost [2]int64
	first := true
	for i, s := range l.secs {
		if s.T < from || s.T >= to {
			continue
		}
		if first {
			first = false
			if i > 0 {
				asked[0], lost[0] = l.acks[i-1][0], l.acks[i-1][1]
			}
		}
		asked[1], lost[1] = l.acks[i][0], l.acks[i][1]
		w.Seconds++
		w.Offered += float64(s.Offered)
		w.Accepted += float64(s.Accepted)
		w.Charged += float64(s.Charged)
		w.Duplicates += float64(s.Duplicates)
		w.Redeliveries += float64(s.Redeliveries)
		w.QueueDepth += float64(max(s.QueueDepth, 0))
		w.OldestAge += s.OldestAge
		w.P50 += s.P50
		w.P99 += s.P99
	}
	if w.Seconds == 0 {
		return w
	}
	n := float64(w.Seconds)
	for _, f := range []*float64{&w.Offered, &w.Accepted, &w.Charged, &w.Duplicates, &w.Redeliveries, &w.QueueDepth, &w.OldestAge, &w.P50, &w.P99} {
		*f /= n
	}
	if d := asked[1] - asked[0]; d > 0 {
		w.LostAcks = float64(lost[1]-lost[0]) / float64(d)
	}
	return w
}

// capacity is the design's estimate beside the same at the knobs now and
// measured over the last seconds.
func capacity(k Knobs, now Window) []CapacityRow {
	rate := k.Rate * max(k.SpikeFactor, 1)
	dupNow := rate * k.LostAcks
	if k.Idempotency {
		dupNow = 0
	}
	dupDesign := designRate * designLostAcks
	return []CapacityRow{
		{"webhooks/s", fmt.Sprintf("%.0f", designRate), fmt.Sprintf("%.0f", rate), fmt.Sprintf("%.0f", now.Offered)},
		{"lost acknowledgements", pct(designLostAcks), pct(k.LostAcks), pct(now.LostAcks)},
		{"redelivered events/s", fmt.Sprintf("≈ %.1f", designRate*designLostAcks), fmt.Sprintf("≈ %.1f", rate*k.LostAcks), fmt.Sprintf("%.1f", now.Redeliveries)},
		{"duplicate charges/s", fmt.Sprintf("≈ %.1f without idempotency", dupDesign), fmt.Sprintf("≈ %.1f (idempotency %s)", dupNow, onOff(k.Idempotency)), fmt.Sprintf("%.1f", now.Duplicates)},
		{"duplicate charges a day", fmt.Sprintf("≈ %s", thousands(dupDesign*86400)), fmt.Sprintf("≈ %s", thousands(dupNow*86400)), thousands(now.Duplicates * 86400)},
	}
}

func pct(share float64) string { return fmt.Sprintf("%.2g%%", 100*share) }

// thousands writes x rounded, with thin separators: 86,400.
func thousands(x float64) string {
	s := fmt.Sprintf("%.0f", x)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// answers answers the design's three check-yourself questions with the
// figures of the run in progress.
func answers(k Knobs, now Window, tot Totals) []CheckAnswer {
	return []CheckAnswer{
		{"Why can a queue not guarantee exactly-once delivery?",
			fmt.Sprintf("The worker acknowledges (deletes) a message after it acted, and that acknowledgement can be lost; the queue cannot tell a lost acknowledgement from a worker that died, so after the visibility timeout (%d s here) it delivers again. In the last %d s %s of acknowledgements were lost and SQS redelivered %.1f events/s (%d since the start), every one of them already processed.",
				visibilitySec, now.Seconds, pct(now.LostAcks), now.Redeliveries, tot.Redeliveries)},
		{"What should the idempotency key be, and how long must you keep it?",
			fmt.Sprintf("The source and the provider's event ID (payments:evt_…), never the HTTP request or the SQS message: a provider's retry is a new request and a new message with the same event ID. Keep it longer than the longest path an event can come back by: here a lost acknowledgement returns after %d s, but providers retry for days and a dead-letter redrive can come later still, so keep keys for days, not minutes.",
				visibilitySec)},
		{"Why record the key before the side effect, not after it?",
			fmt.Sprintf("A redelivery can arrive while the first delivery is still charging, or after it charged and before it wrote anything down; if the key is written after the charge, both deliveries charge. Claimed first, with one conditional write, the second delivery finds the claim and does not charge. Now, with idempotency %s: %.1f duplicate charges/s against %.1f redeliveries/s.",
				onOff(k.Idempotency), now.Duplicates, now.Redeliveries)},
	}
}

// findingsWindow is how far back "what broke?" looks: the last 30 s, but
// not before the last change once 5 s have passed since it.
const findingsWindow = 30

// WhatBroke judges the recent seconds against the lab's goals and
// remembers the findings for [Live.Fixes]. It says which seconds it
// judged.
func (l *Live) WhatBroke() ([]Finding, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.nowTLocked()
	from := max(now-findingsWindow, 0)
	since := fmt.Sprintf("the last %d s", now-from)
	if n := len(l.changes); n > 0 {
		if c := l.changes[n-1]; c.T > from && now-c.T >= 5 {
			from, since = c.T, fmt.Sprintf("the %d s since %q", now-c.T, c.Text)
		}
	}
	r := l.reportLocked(from, now)
	l.findings = Findings(r)
	return l.findings, since
}

// Fixes are the findings of the last "what broke?", whose fixes are shown
// only when asked for.
func (l *Live) Fixes() []Finding {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Finding(nil), l.findings...)
}

// reportLocked is a [Report] of the seconds from <= T < to, for
// [Findings]: no ceilings, no spike drain, nothing counted lost.
func (l *Live) reportLocked(from, to int) *Report {
	k := l.knobsLocked(time.Now())
	r := &Report{Name: "live", Rate: k.Rate, PeakRate: k.Rate * max(k.SpikeFactor, 1), LostAcks: k.LostAcks, Idempotency: k.Idempotency, Profile: k.Profile}
	n := 0
	for _, s := range l.secs {
		if s.T < from || s.T >= to {
			continue
		}
		n++
		r.Offered += s.Offered
		r.Accepted += s.Accepted
		r.Charged += s.Charged
		r.Duplicates += s.Duplicates
		r.Redeliveries += s.Redeliveries
		r.MaxQueueDepth = max(r.MaxQueueDepth, s.QueueDepth)
		r.MaxOldestAge = max(r.MaxOldestAge, s.OldestAge)
	}
	if n == 0 {
		return r
	}
	p50, p99 := percentiles(l.e.obs.latenciesOf(from, to))
	r.P50, r.P99 = ms(p50), ms(p99)
	r.Duration = (time.Duration(n) * time.Second).String()
	r.DuplicatesPerDay = float64(r.Duplicates) / float64(n) * 86400
	if r.Offered > 0 {
		r.Success = min(float64(r.Charged)/float64(r.Offered), 1)
	}
	return r
}
