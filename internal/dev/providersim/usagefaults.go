package providersim

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CallFault programs the next calls of a usage face's endpoint to fail:
// the fault vocabulary's 429 and 5xx, shared by Stripe's meters, OpenAI's
// usage and OpenMeter. Each face writes the answer in its own wire format.
type CallFault struct {
	// Endpoint names one endpoint of the face (its MeterEndpoint on
	// Stripe's, "events" or "meter_query" on OpenMeter's); empty: every
	// endpoint, each failing Next calls (OpenAI's face has one for all).
	Endpoint string
	// Next is how many calls fail; 0 ends a fault programmed before.
	Next int
	// Status is the answer: 429 (the default) or a 5xx.
	Status int
	// RetryAfter is the Retry-After of the answer, in the face's header
	// (OpenAI's retry-after-ms, Retry-After in seconds elsewhere). For a
	// 429, 0 is the face's default; a 5xx carries one only when it is
	// positive, as a 503 may. Negative sends none.
	RetryAfter time.Duration
}

// ErrInvalidFault reports a fault a usage face cannot take.
var ErrInvalidFault = errors.New("providersim: invalid fault")

// faultKinds are the faults of the vocabulary one face applies.
type faultKinds uint8

const (
	// faultLag: usage shows a lag after it arrived (a scope may have its
	// own), a revision at once.
	faultLag faultKinds = 1 << iota
	// faultGaps: buckets go missing, at a time or a seeded share of them.
	faultGaps
	// faultShortPages: pages end early, with more to come.
	faultShortPages
	// faultNoise: values render as float sums in arrival order.
	faultNoise
	// faultCalls: programmed 429s and 5xx, and a rate per second.
	faultCalls
	// faultScopedLag: a scope (Stripe's meter) may have a lag of its own.
	faultScopedLag
)

// Gap leaves buckets out of a usage face's answers, as an aggregate that
// has not caught up does. Each face narrows it by its own names, an empty
// one matching any, and refuses the other face's: Stripe's by Meter and
// Customer ([MeterGap]), OpenAI's by Endpoint and Project ([OpenAIGap]).
type Gap struct {
	Meter    string `json:"meter,omitempty"`
	Customer string `json:"customer,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	Project  string `json:"project,omitempty"`
	// At leaves out every bucket that holds it, whatever the grouping.
	At time.Time `json:"at,omitzero"`
	// Share, when At is zero, leaves out that share of buckets in [0, 1]:
	// a bucket is left out when a hash of the seed, what it belongs to,
	// its start and end falls below Share, so the same buckets go missing
	// in every answer and every run.
	Share float64 `json:"share,omitempty"`
	// Until ends the gap when the clock reaches it; zero keeps it until
	// the face's gaps are cleared.
	Until time.Time `json:"until,omitzero"`
}

// gap is g in a face's terms: ok says it names nothing of another face,
// series is what a bucket of the face belongs to.
func (g Gap) gap(ok bool, series ...string) gap {
	return gap{series: [2]string(series), at: g.At, share: g.Share, until: g.Until, foreign: !ok}
}

// gap is a [Gap] as a face applies it: series narrows it to what a bucket
// belongs to (a meter and a customer; an endpoint and a project).
type gap struct {
	series    [2]string
	at, until time.Time
	share     float64
	foreign   bool // names what another face's buckets belong to
}

// endpointFaults is the call faults of one endpoint.
type endpointFaults struct {
	fault     CallFault // Next counts down
	perSecond int       // 0: no rate limit
	second    int64     // the clock's second the window counts
	n         int       // calls admitted in it
	throttled int       // 429s answered
	failed    int       // 5xx answered
}

// usageFaults is the fault vocabulary every usage face applies: lag,
// revisions shown at once, gaps, short pages, float noise, 429 with
// Retry-After and 5xx. A face holds one, made by newUsageFaults with the
// kinds it serves, asks it what to do, and writes the outcome in its own
// wire format. Every random choice is a hash of the seed, so a seed
// decides the same faults in every run. It is safe for concurrent use;
// a face may call it while holding its own lock, never the reverse.
type usageFaults struct {
	kinds      faultKinds
	seed       uint64
	retryAfter time.Duration // a 429's Retry-After when none is asked for; negative: none
	// millis: the face names its waits in milliseconds (OpenAI's
	// retry-after-ms), else in whole seconds, rounded up.
	millis bool

	mu         sync.Mutex
	lag        time.Duration
	lags       map[string]time.Duration // a scope's own lag
	gaps       []gap
	pageSize   int
	noise      bool
	shortPages int
	endpoints  map[string]*endpointFaults
	order      []string // the endpoints, in the face's order
	waits      waitLog
}

// newUsageFaults serves kinds over endpoints (none: one for the whole
// face), each limited to perSecond calls (0: no limit), with retryAfter
// the Retry-After of a 429 that asks for none.
func newUsageFaults(kinds faultKinds, seed uint64, retryAfter time.Duration, perSecond int, endpoints ...string) *usageFaults {
	if len(endpoints) == 0 {
		endpoints = []string{""}
	}
	f := &usageFaults{kinds: kinds, seed: seed, retryAfter: retryAfter, lags: map[string]time.Duration{},
		endpoints: map[string]*endpointFaults{}, order: endpoints}
	for _, ep := range endpoints {
		f.endpoints[ep] = &endpointFaults{perSecond: perSecond}
	}
	return f
}

// draw is a number in [0, 1) that depends only on the seed and parts.
func (f *usageFaults) draw(parts ...string) float64 {
	h := fnv.New64a()
	_ = binary.Write(h, binary.LittleEndian, f.seed)
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return float64(h.Sum64()>>11) / (1 << 53)
}

// setLag sets the lag of scope; the empty scope sets the lag of every
// scope without one of its own, and a negative lag removes a scope's own.
func (f *usageFaults) setLag(scope string, lag time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case scope == "":
		f.lag = max(lag, 0)
	case lag < 0:
		delete(f.lags, scope)
	default:
		f.lags[scope] = lag
	}
}

// lagOf is how long after its arrival usage of scope shows.
func (f *usageFaults) lagOf(scope string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d, ok := f.lags[scope]; ok {
		return d
	}
	return f.lag
}

// shown reports whether what arrived at received shows at now, lag
// later; a revision shows at once.
func shown(received time.Time, revision bool, now time.Time, lag time.Duration) bool {
	return revision || !now.Before(received.Add(lag))
}

// addGap opens g.
func (f *usageFaults) addGap(g gap) error {
	if g.foreign {
		return errors.New("a gap names what another face's buckets belong to")
	}
	if g.share < 0 || g.share > 1 || (g.at.IsZero() && g.share == 0) {
		return errors.New("a gap needs a time or a share in (0, 1]")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gaps = append(f.gaps, g)
	return nil
}

// clearGaps closes every gap.
func (f *usageFaults) clearGaps() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gaps = nil
}

// hidden reports whether an open gap leaves out the bucket [start, end)
// of series at now.
func (f *usageFaults) hidden(series [2]string, start, end, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, g := range f.gaps {
		switch {
		case !g.until.IsZero() && !now.Before(g.until),
			g.series[0] != "" && g.series[0] != series[0],
			g.series[1] != "" && g.series[1] != series[1]:
			continue
		case !g.at.IsZero():
			if !g.at.Before(start) && g.at.Before(end) {
				return true
			}
		case f.draw("gap", series[0], series[1], start.String(), end.String()) < g.share:
			return true
		}
	}
	return false
}

// setPageSize makes pages hold at most n items whatever their limit; 0
// lifts it.
func (f *usageFaults) setPageSize(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pageSize = max(n, 0)
}

// pageLimit is the size of a page whose limit is limit, and whether a
// short page made it smaller.
func (f *usageFaults) pageLimit(limit int) (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pageSize > 0 && f.pageSize < limit {
		return f.pageSize, true
	}
	return limit, false
}

// endedEarly counts a page that a short page size ended with more to
// come.
func (f *usageFaults) endedEarly() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shortPages++
}

// setNoise turns float noise on or off.
func (f *usageFaults) setNoise(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noise = on
}

// render is a bucket's value: the exact decimal, or with float noise the
// float64 sum in arrival order, nudged one unit in the last place (the
// way a seeded draw of parts picks) when that sum came out exact.
func (f *usageFaults) render(exact *big.Rat, naive float64, parts ...string) json.Number {
	f.mu.Lock()
	noise := f.noise
	f.mu.Unlock()
	if !noise {
		return json.Number(decimalText(exact))
	}
	v := naive
	if x, _ := exact.Float64(); v == x && v != 0 {
		toward := math.Inf(1)
		if f.draw(append([]string{"noise"}, parts...)...) < 0.5 {
			toward = math.Inf(-1)
		}
		v = math.Nextafter(v, toward)
	}
	data, _ := json.Marshal(v) // finite: a sum of finite values
	return json.Number(data)
}

// endpointsOf lists the endpoints ep names: all when empty, none when
// unknown.
func (f *usageFaults) endpointsOf(ep string) []*endpointFaults {
	if ep == "" {
		out := make([]*endpointFaults, 0, len(f.order))
		for _, e := range f.order {
			out = append(out, f.endpoints[e])
		}
		return out
	}
	if e, ok := f.endpoints[ep]; ok {
		return []*endpointFaults{e}
	}
	return nil
}

// validEndpoint checks that ep names an endpoint, or all of them.
func (f *usageFaults) validEndpoint(ep string) error {
	if ep == "" || f.endpoints[ep] != nil {
		return nil
	}
	var names []string
	for _, e := range f.order {
		if e != "" {
			names = append(names, e)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("%w: the face has no endpoint %q: leave it empty", ErrInvalidFault, ep)
	}
	return fmt.Errorf("%w: endpoint must be %s or empty", ErrInvalidFault, strings.Join(names, ", "))
}

// program makes the next c.Next calls of c.Endpoint fail (replacing what
// was programmed there); an unknown endpoint is ignored.
func (f *usageFaults) program(c CallFault) error {
	if c.Status == 0 {
		c.Status = http.StatusTooManyRequests
	}
	if c.Status != http.StatusTooManyRequests && (c.Status < 500 || c.Status > 599) {
		return fmt.Errorf("%w: status %d is neither 429 nor a 5xx", ErrInvalidFault, c.Status)
	}
	switch {
	case c.RetryAfter != 0:
	case c.Status == http.StatusTooManyRequests:
		c.RetryAfter = f.retryAfter
	default:
		c.RetryAfter = -1 // a 5xx names a wait only when asked to
	}
	c.Next = max(c.Next, 0)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.endpointsOf(c.Endpoint) {
		e.fault = c
	}
	return nil
}

// setRate makes ep (every endpoint when empty; an unknown one is
// ignored) answer 429 to the calls beyond perSecond in one second of the
// clock; 0 lifts the limit.
func (f *usageFaults) setRate(ep string, perSecond int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.endpointsOf(ep) {
		e.perSecond = max(perSecond, 0)
	}
}

// verdict is what a call gets: status 0 goes on; otherwise the face
// answers status, a 429 with retryAfter when it is not negative.
type verdict struct {
	status     int
	retryAfter time.Duration
}

// admit decides the fate of one call of ep at now, counting it: a
// programmed fault first, then the rate limit. It records the call as
// the one after each wait ep named before, and the wait this answer
// names ([RetryAfterServed]).
func (f *usageFaults) admit(ep string, now time.Time) verdict {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.endpoints[ep]
	if e == nil {
		return verdict{}
	}
	arrived := time.Now() // wall time: a client waits a Retry-After by its own timer, not the run's clock
	f.waits.called(ep, arrived)
	v := f.decide(e, now)
	if v.status != 0 && v.retryAfter >= 0 {
		f.waits.answered(ep, v.status, f.named(v.retryAfter), arrived)
	}
	return v
}

// decide is the fate of one call of e at now, counted.
func (f *usageFaults) decide(e *endpointFaults, now time.Time) verdict {
	v := verdict{}
	switch {
	case e.fault.Next > 0:
		e.fault.Next--
		v = verdict{status: e.fault.Status, retryAfter: e.fault.RetryAfter}
	case e.perSecond > 0:
		if sec := now.Unix(); sec != e.second {
			e.second, e.n = sec, 0
		}
		if e.n >= e.perSecond {
			v = verdict{status: http.StatusTooManyRequests, retryAfter: f.retryAfter}
		} else {
			e.n++
		}
	}
	switch {
	case v.status == http.StatusTooManyRequests:
		e.throttled++
	case v.status != 0:
		e.failed++
	}
	return v
}

// named is the wait d as the face's header names it: whole
// milliseconds, or seconds rounded up.
func (f *usageFaults) named(d time.Duration) time.Duration {
	if f.millis {
		return d.Truncate(time.Millisecond)
	}
	return time.Duration(math.Ceil(d.Seconds())) * time.Second
}

// setRetryAfter writes the answer's Retry-After, if it names one, in
// seconds rounded up, as Stripe and OpenMeter read it.
func (v verdict) setRetryAfter(w http.ResponseWriter) {
	if v.status != 0 && v.retryAfter >= 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(v.retryAfter.Seconds())), 10))
	}
}

// faultCounts are the faults a face answered.
type faultCounts struct {
	throttled, failed map[string]int // by endpoint
	shortPages        int
}

// counts returns the faults answered so far.
func (f *usageFaults) counts() faultCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := faultCounts{throttled: map[string]int{}, failed: map[string]int{}, shortPages: f.shortPages}
	for ep, e := range f.endpoints {
		c.throttled[ep], c.failed[ep] = e.throttled, e.failed
	}
	return c
}

// sum adds the counts of every endpoint.
func sum(byEndpoint map[string]int) int {
	n := 0
	for _, v := range byEndpoint {
		n += v
	}
	return n
}

// Bodies of the fault vocabulary's administration.
type (
	// lagBody sets a lag: Meter names a meter of its own on Stripe's
	// face, empty sets every other one.
	lagBody struct {
		Meter string `json:"meter,omitempty"`
		Lag   string `json:"lag"`
	}
	// callFaultBody is a CallFault over HTTP, RetryAfter a Go duration.
	callFaultBody struct {
		Endpoint   string `json:"endpoint,omitempty"`
		Next       int    `json:"next"`
		Status     int    `json:"status,omitempty"`
		RetryAfter string `json:"retry_after,omitempty"`
	}
	// rateBody sets an endpoint's rate limit.
	rateBody struct {
		Endpoint  string `json:"endpoint"`
		PerSecond int    `json:"per_second"`
	}
	// pageSizeBody sets the short page size.
	pageSizeBody struct {
		Buckets int `json:"buckets"`
	}
	// switchBody turns a setting on or off.
	switchBody struct {
		On bool `json:"on"`
	}
)

// routes serves the administration of f's kinds under p, a face's sim
// path, as the package doc lists it.
func (f *usageFaults) routes(mux *http.ServeMux, p string) {
	if f.kinds&faultLag != 0 {
		mux.HandleFunc("POST "+p+"/lag", adminJSON(func(b lagBody) (any, error) {
			d, err := time.ParseDuration(b.Lag)
			if err != nil {
				return nil, err
			}
			if b.Meter != "" && f.kinds&faultScopedLag == 0 {
				return nil, fmt.Errorf("%w: the face has no lag per meter", ErrInvalidFault)
			}
			f.setLag(b.Meter, d)
			return nil, nil
		}))
	}
	if f.kinds&faultGaps != 0 {
		mux.HandleFunc("DELETE "+p+"/gaps", func(w http.ResponseWriter, _ *http.Request) {
			f.clearGaps()
			w.WriteHeader(http.StatusNoContent)
		})
	}
	if f.kinds&faultShortPages != 0 {
		mux.HandleFunc("POST "+p+"/pagesize", adminJSON(func(b pageSizeBody) (any, error) { f.setPageSize(b.Buckets); return nil, nil }))
	}
	if f.kinds&faultNoise != 0 {
		mux.HandleFunc("POST "+p+"/noise", adminJSON(func(b switchBody) (any, error) { f.setNoise(b.On); return nil, nil }))
	}
	if f.kinds&faultCalls == 0 {
		return
	}
	f.waitRoute(mux, p)
	mux.HandleFunc("POST "+p+"/fail", adminJSON(func(b callFaultBody) (any, error) {
		c := CallFault{Endpoint: b.Endpoint, Next: b.Next, Status: b.Status}
		if b.RetryAfter != "" {
			d, err := time.ParseDuration(b.RetryAfter)
			if err != nil {
				return nil, err
			}
			c.RetryAfter = d
		}
		if err := f.validEndpoint(c.Endpoint); err != nil {
			return nil, err
		}
		return nil, f.program(c)
	}))
	mux.HandleFunc("POST "+p+"/ratelimit", adminJSON(func(b rateBody) (any, error) {
		if err := f.validEndpoint(b.Endpoint); err != nil {
			return nil, err
		}
		f.setRate(b.Endpoint, b.PerSecond)
		return nil, nil
	}))
}
