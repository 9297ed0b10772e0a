package lab

import (
	"fmt"
	"strings"
	"time"
)

// Stage is one leg of webhook → charge, over the events charged in the
// paced run: where the time went.
type Stage struct {
	Name string  `json:"name"`
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
}

// stamps are the times one event passed the legs' boundaries.
type stamps struct {
	sent, answered, picked time.Time
}

func (o *observer) stampsLocked(id string) *stamps {
	s := o.stamps[id]
	if s == nil {
		s = &stamps{}
		o.stamps[id] = s
	}
	return s
}

// sent records when a webhook's request left the sender.
func (o *observer) sent(id string, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stampsLocked(id).sent = at
}

// picked records when the worker first got an event.
func (o *observer) picked(ids []string, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		if s := o.stampsLocked(id); s.picked.IsZero() {
			s.picked = at
		}
	}
}

// stages splits webhook → charge into its legs, over the events charged
// so far whose every boundary was seen.
func (o *observer) stages() []Stage {
	o.mu.Lock()
	defer o.mu.Unlock()
	legs := make([][]time.Duration, 4)
	for id, charged := range o.charged {
		s, due := o.stamps[id], o.offered[id]
		if s == nil || s.sent.IsZero() || s.answered.IsZero() || s.picked.IsZero() || due.IsZero() {
			continue
		}
		legs[0] = append(legs[0], s.sent.Sub(due))
		legs[1] = append(legs[1], s.answered.Sub(s.sent))
		legs[2] = append(legs[2], s.picked.Sub(s.sent))
		legs[3] = append(legs[3], charged.Sub(s.picked))
	}
	names := []string{"sender (due → sent)", "receiver (sent → 200)", "to the worker (sent → picked up)", "worker (picked up → charged)"}
	out := make([]Stage, len(names))
	for i, n := range names {
		p50, p99 := percentiles(legs[i])
		out[i] = Stage{Name: n, P50: ms(p50), P99: ms(p99)}
	}
	return out
}

// slowest is the stage with the highest p99.
func slowest(st []Stage) (Stage, bool) {
	var top Stage
	for _, s := range st {
		if s.P99 > top.P99 {
			top = s
		}
	}
	return top, top.Name != ""
}

func stagesLine(st []Stage) string {
	parts := make([]string, len(st))
	for i, s := range st {
		parts[i] = fmt.Sprintf("%s p50 %.0f ms, p99 %.0f ms", s.Name, s.P50, s.P99)
	}
	return strings.Join(parts, "; ")
}
