package lab

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/pkg/provider"
)

// Second is what one second of a run saw.
type Second struct {
	T            int     `json:"t"`
	Offered      int     `json:"offered"`
	Accepted     int     `json:"accepted"`
	Charged      int     `json:"charged"`
	Duplicates   int     `json:"duplicates"`
	Redeliveries int     `json:"redeliveries"`
	QueueDepth   int     `json:"queue_depth"`
	OldestAge    float64 `json:"oldest_age_s"`
	P50          float64 `json:"p50_ms"`
	P99          float64 `json:"p99_ms"`
}

// observer records what happened to every event, by second.
type observer struct {
	mu       sync.Mutex
	start    time.Time
	offered  map[string]time.Time // when each webhook was due
	accepted map[string]bool
	refused  map[string]int // why webhooks were not accepted, by reason
	charged  map[string]time.Time
	declined map[string]bool
	dead     map[string]string
	// unsettled holds the accepted events not settled yet, with when each
	// was due, so that a sample looks at the backlog, not at every event
	// of the run.
	unsettled map[string]time.Time
	secs      []Second
	lat       [][]time.Duration
	stamps    map[string]*stamps
}

func newObserver(start time.Time) *observer {
	o := &observer{}
	o.resetLocked(start)
	return o
}

// reset forgets everything seen so far and starts the series at start.
func (o *observer) reset(start time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.resetLocked(start)
}

func (o *observer) resetLocked(start time.Time) {
	o.start, o.offered, o.accepted, o.refused = start, map[string]time.Time{}, map[string]bool{}, map[string]int{}
	o.charged, o.declined, o.dead = map[string]time.Time{}, map[string]bool{}, map[string]string{}
	o.unsettled, o.stamps, o.secs, o.lat = map[string]time.Time{}, map[string]*stamps{}, nil, nil
}

// at returns the second that t falls in, growing the series.
func (o *observer) at(t time.Time) *Second {
	i := max(int(t.Sub(o.start)/time.Second), 0)
	for len(o.secs) <= i {
		o.secs = append(o.secs, Second{T: len(o.secs)})
		o.lat = append(o.lat, nil)
	}
	return &o.secs[i]
}

func (o *observer) offer(id string, due time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.offered[id] = due
	o.at(due).Offered++
}

// accept records the answer to a webhook: refusal is "" when it was
// accepted, else why not ([RefusedUnsent], "status 503", [RefusedError]).
func (o *observer) accept(id, refusal string) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if refusal != "" {
		o.refused[refusal]++
		return
	}
	o.accepted[id] = true
	o.stampsLocked(id).answered = now
	if !o.settledLocked(id) { // the worker may settle it before the answer is counted
		o.unsettled[id] = o.offered[id]
	}
	o.at(now).Accepted++
}

// settle records a final charge result seen by the worker.
func (o *observer) settle(id string, res provider.Result) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.offered[id]; !ok {
		return // offered before a reset (the warm-up)
	}
	switch res.Outcome {
	case provider.Declined:
		o.declined[id] = true
		delete(o.unsettled, id)
	case provider.Succeeded:
		s := o.at(now)
		if _, again := o.charged[id]; again {
			s.Duplicates++
			return
		}
		o.charged[id] = now
		delete(o.unsettled, id)
		s.Charged++
		if due, ok := o.offered[id]; ok {
			o.lat[s.T] = append(o.lat[s.T], now.Sub(due))
		}
	}
}

func (o *observer) deadLetter(id, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.offered[id]; !ok {
		return // offered before a reset (the warm-up)
	}
	o.dead[id] = reason
	delete(o.unsettled, id)
}

func (o *observer) redelivered(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.at(time.Now()).Redeliveries += n
}

// sample records the queue depth and the oldest unsettled event's age now.
func (o *observer) sample(depth int) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.at(now)
	s.QueueDepth = depth
	oldest := now
	for _, due := range o.unsettled {
		if due.Before(oldest) {
			oldest = due
		}
	}
	s.OldestAge = now.Sub(oldest).Seconds()
}

// forget drops the events due before t, and the latencies of the seconds
// before it, so that a live lab's memory stays bounded. An event forgotten
// is no longer counted when it comes back.
func (o *observer) forget(t time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id, due := range o.offered {
		if due.Before(t) {
			delete(o.offered, id)
			delete(o.accepted, id)
			delete(o.charged, id)
			delete(o.declined, id)
			delete(o.dead, id)
			delete(o.stamps, id)
			delete(o.unsettled, id)
		}
	}
	for i := range min(max(int(t.Sub(o.start)/time.Second), 0), len(o.lat)) {
		o.lat[i] = nil
	}
}

// settled reports whether id was charged, declined or dead-lettered.
func (o *observer) settled(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.settledLocked(id)
}

func (o *observer) settledLocked(id string) bool {
	_, charged := o.charged[id]
	return charged || o.declined[id] || o.dead[id] != ""
}

// deadReason is why id was dead-lettered; dead is false when it was not.
func (o *observer) deadReason(id string) (reason string, dead bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	reason = o.dead[id]
	return reason, reason != ""
}

// open counts accepted events not yet settled.
func (o *observer) open() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.unsettled)
}

// acceptedOf counts the ids whose webhook was accepted.
func (o *observer) acceptedOf(ids []string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, id := range ids {
		if o.accepted[id] {
			n++
		}
	}
	return n
}

// openOf counts the events of ids that were accepted and are not settled
// yet.
func (o *observer) openOf(ids []string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, id := range ids {
		if _, open := o.unsettled[id]; open {
			n++
		}
	}
	return n
}

// series finishes the per-second latencies and returns a copy.
func (o *observer) series() []Second {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]Second, len(o.secs))
	for i := range out {
		out[i] = o.secondLocked(i)
	}
	return out
}

// second returns second n with its latencies finished, or false when the
// run has not reached it.
func (o *observer) second(n int) (Second, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if n >= len(o.secs) {
		return Second{}, false
	}
	return o.secondLocked(n), true
}

func (o *observer) secondLocked(i int) Second {
	s := o.secs[i]
	p50, p99 := percentiles(o.lat[i])
	s.P50, s.P99 = ms(p50), ms(p99)
	return s
}

// latencies returns every webhook -> charge latency.
func (o *observer) latencies() []time.Duration { return o.latenciesOf(0, math.MaxInt) }

// latenciesOf returns the webhook -> charge latencies of the seconds
// from <= T < to.
func (o *observer) latenciesOf(from, to int) []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	var all []time.Duration
	for i := max(from, 0); i < min(to, len(o.lat)); i++ {
		all = append(all, o.lat[i]...)
	}
	return all
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)*99/100, len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// watchedCharger tells the observer about every final result.
type watchedCharger struct {
	paymentworker.Charger
	o *observer
}

func (c watchedCharger) CreateCharge(ctx context.Context, key string, req provider.ChargeRequest) provider.Result {
	res := c.Charger.CreateCharge(ctx, key, req)
	c.o.settle(req.EventID, res)
	return res
}

func (c watchedCharger) LookupCharge(ctx context.Context, key string) (*provider.Charge, bool, error) {
	ch, found, err := c.Charger.LookupCharge(ctx, key)
	if err == nil && found && ch.EventID != "" {
		// A charge found by lookup settles its event too.
		res := provider.Result{Outcome: provider.Succeeded, Charge: ch}
		if ch.Status == provider.StatusDeclined {
			res.Outcome = provider.Declined
		}
		if ch.Status == provider.StatusSucceeded || ch.Status == provider.StatusDeclined {
			c.o.settleFound(ch.EventID, res)
		}
	}
	return ch, found, err
}

// settleFound records a charge found by lookup: never a duplicate of
// itself.
func (o *observer) settleFound(id string, res provider.Result) {
	o.mu.Lock()
	_, seen := o.charged[id]
	o.mu.Unlock()
	if !seen {
		o.settle(id, res)
	}
}

// watchedQueue tells the observer about dead letters.
type watchedQueue struct {
	paymentworker.Queue
	o *observer
}

func (q watchedQueue) DeadLetter(ctx context.Context, m events.SQSMessage, reason string) error {
	err := q.Queue.DeadLetter(ctx, m, reason)
	if err == nil {
		if a, ok := m.MessageAttributes["event_id"]; ok && a.StringValue != nil {
			q.o.deadLetter(*a.StringValue, reason)
		}
	}
	return err
}
