package providersim

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Meter aggregations the face supports.
const (
	MeterAggregationSum   = "sum"
	MeterAggregationCount = "count"
)

// Stripe's rules and defaults for meters.
const (
	// MeterEventMaxAge and MeterEventMaxAhead bound a meter event's
	// timestamp around the clock: within the past 35 days or up to 5
	// minutes in the future.
	MeterEventMaxAge   = 35 * 24 * time.Hour
	MeterEventMaxAhead = 5 * time.Minute
	// MeterIdentifierWindow is how long an identifier stays taken.
	MeterIdentifierWindow = 24 * time.Hour
	// DefaultMeterRateLimit is the calls per second of the clock that each
	// meter endpoint takes before it answers 429: Stripe's limit in test
	// mode.
	DefaultMeterRateLimit = 25
	// DefaultSummaryPageSize and MaxSummaryPageSize are the summaries'
	// limit when absent and its largest value.
	DefaultSummaryPageSize = 10
	MaxSummaryPageSize     = 100
	// maxMeterField is Stripe's length limit of event names, identifiers
	// and payload values.
	maxMeterField = 100
)

// Errors of the meter API.
var (
	// ErrInvalidMeter reports a meter, gap or alert that cannot be added.
	ErrInvalidMeter = errors.New("providersim: invalid meter")
	// ErrInvalidMeterEvent reports a meter event that Stripe would refuse.
	ErrInvalidMeterEvent = errors.New("providersim: invalid meter event")
	// ErrNoMeter reports a meter event, cancellation or revision that no
	// meter or event of the face matches.
	ErrNoMeter = errors.New("providersim: no such meter or meter event")
)

// MeterEndpoint names one endpoint of the meter API, for its rate limit,
// its 429 fault and its counts. The empty endpoint means all of them in
// the setters.
type MeterEndpoint string

// The meter API's endpoints.
const (
	MeterEventsEndpoint      MeterEndpoint = "meter_events"
	MeterAdjustmentsEndpoint MeterEndpoint = "meter_event_adjustments"
	MeterSummariesEndpoint   MeterEndpoint = "event_summaries"
)

// BillingMeter is a meter of Stripe Billing on Stripe's face: events
// named EventName count towards it, summed or counted.
//
// POST /v1/billing/meter_events records a meter event, POST
// /v1/billing/meter_event_adjustments cancels one, and GET
// /v1/billing/meters/{id}/event_summaries answers the sums per customer
// and UTC hour or day that Stripe's meter event summaries show, statefully:
// late events raise old buckets, cancellations lower them, and faults
// make the answers as unreliable as an eventually consistent aggregate
// can be: a lag before an event shows ([Sim.SetMeterLag]), administrative
// revisions down ([Sim.ReviseMeterDown]), missing buckets
// ([Sim.AddMeterGap]), float noise ([Sim.SetMeterFloatNoise]) and 429s
// ([Sim.SetMeterRateLimit], [Sim.RateLimitMeterCalls]). Meters are
// configured with [Sim.AddMeter]; [Sim.MeterSum] is the exact truth a
// test asserts against; [Sim.AddAlert] makes billing.alert.triggered
// events. [MeterSimPath] serves all of it to a driver over HTTP. Every
// time is the simulator's clock ([Config.Now]), so a test with a
// [ManualClock] never sleeps, and every random choice is seeded
// ([Config.Seed]).
//
// The face follows Stripe's documented rules and, where Stripe documents
// nothing, makes a choice and says so:
//
//   - a timestamp must lie within the past 35 days ([MeterEventMaxAge]) or
//     up to 5 minutes ahead ([MeterEventMaxAhead]) of the clock; an absent
//     one is the clock's second;
//   - an identifier (one is generated when absent) is unique per event
//     name for 24 hours from the event that took it
//     ([MeterIdentifierWindow]): a repeat within them is refused with 400,
//     as Stripe refuses it. After 24 hours the same identifier is a new
//     event and counts again, as at Stripe, so a ledger that re-sends an
//     old identifier must expect the provider to count it twice;
//   - a value is a non-negative decimal, kept exactly; a count meter
//     counts events and ignores it;
//   - an event whose event name no meter has is accepted and counted
//     nowhere (Stripe reports it later as no_meter_found): see
//     [MeterCallCounts.NoMeterFound];
//   - a cancellation of an identifier the face does not hold is accepted
//     too, as Stripe processes adjustments asynchronously: see
//     [MeterCallCounts.UnmatchedCancels];
//   - summaries come in ascending start_time; a bucket without events is
//     left out, a bucket whose events were all cancelled shows 0;
//   - a summary's ID (mtrusg_...) changes with every answer, since Stripe
//     does not say it is stable; it still works as a starting_after or
//     ending_before cursor, because it carries its bucket's start.
//
// The face takes Stripe's keys as the charge APIs do ([Config.APIKey]).
// Its livemode, rendered in every object, is false unless Config.APIKey
// starts with sk_live_ or [Sim.SetMeterLivemode] says otherwise. A
// request whose key is of the other mode (sk_live_ against a test-mode
// face, sk_test_ against a live one) finds that mode's world empty: no
// meter answers it.
type BillingMeter struct {
	// ID is the meter's mtr_ ID; [Sim.AddMeter] makes one when empty.
	ID        string `json:"id"`
	EventName string `json:"event_name"`
	// Aggregation is [MeterAggregationSum] (the default) or
	// [MeterAggregationCount].
	Aggregation string `json:"aggregation"`
}

// MeterEvent is one meter event, as a caller sends it and as the face
// recorded it.
type MeterEvent struct {
	EventName string `json:"event_name"`
	// Customer is payload[stripe_customer_id].
	Customer string `json:"customer"`
	// Value is payload[value], a non-negative decimal such as "0.1";
	// required by sum meters.
	Value string `json:"value,omitempty"`
	// Identifier is generated when empty.
	Identifier string `json:"identifier,omitempty"`
	// Timestamp is the clock's time when zero; it is kept to the second.
	Timestamp time.Time `json:"timestamp,omitzero"`
}

// MeterGap is a [Gap] of Stripe's face, narrowed by Meter and Customer.
type MeterGap = Gap

// MeterCallCounts counts the calls of the meter API.
type MeterCallCounts struct {
	// Events, Adjustments and Summaries count the requests that reached
	// each endpoint, refused ones included.
	Events      int `json:"events"`
	Adjustments int `json:"adjustments"`
	Summaries   int `json:"summaries"`
	// RateLimited counts the 429s answered, by endpoint.
	RateLimited map[MeterEndpoint]int `json:"rate_limited"`
	// ServerErrors counts the 5xx answered by [Sim.FailMeterCalls].
	ServerErrors int `json:"server_errors"`
	// ShortPages counts summary pages that ended early
	// ([Sim.SetMeterPageSize]): has_more with fewer than the limit.
	ShortPages int `json:"short_pages"`
	// NoMeterFound counts events accepted for an event name no meter has.
	NoMeterFound int `json:"no_meter_found"`
	// UnmatchedCancels counts cancellations accepted for an identifier the
	// face does not hold.
	UnmatchedCancels int `json:"unmatched_cancels"`
}

// meterEvent is one recorded event, or an administrative revision.
type meterEvent struct {
	id       string // identifier; empty for a revision
	name     string
	at       time.Time // the event's timestamp, whole seconds
	received time.Time
	// canceled is when a cancellation arrived; zero if none did.
	canceled time.Time
	// value is what the event adds to its meter: its value on a sum
	// meter, 1 on a count meter, minus the amount for a revision.
	value *big.Rat
	// float is value as a float64, for float noise.
	float float64
	// revision marks an administrative revision: shown at once.
	revision bool
	// seq numbers the events in arrival order.
	seq int64
}

// seriesKey names one customer's events of one meter.
type seriesKey struct{ meter, customer string }

// meterBook is the state of the meter API.
type meterBook struct {
	mu       sync.Mutex
	faults   *usageFaults
	rng      *rand.Rand
	livemode bool
	meters   map[string]BillingMeter
	byName   map[string]string // event name → meter ID
	series   map[seriesKey][]*meterEvent
	// claims holds when each event name + identifier was last taken;
	// latest holds the event that took it, when a meter had the name.
	claims  map[string]time.Time
	latest  map[string]*meterEvent
	calls   MeterCallCounts
	seq     int64 // the last event's seq
	alerts  []*meterAlert
	fired   []StripeEvent // every alert event, in order
	pending int           // fired[pending:] are not taken yet
	alertTo atomic.Pointer[Sender]
}

func (b *meterBook) init(seed uint64, apiKey string) {
	b.faults = newUsageFaults(faultLag|faultScopedLag|faultGaps|faultShortPages|faultNoise|faultCalls, seed, -1,
		DefaultMeterRateLimit, string(MeterEventsEndpoint), string(MeterAdjustmentsEndpoint), string(MeterSummariesEndpoint))
	b.rng = rand.New(rand.NewPCG(seed^0x6d657465, seed+0x7273696d))
	b.livemode = strings.HasPrefix(apiKey, "sk_live_")
	b.meters = map[string]BillingMeter{}
	b.byName = map[string]string{}
	b.series = map[seriesKey][]*meterEvent{}
	b.claims = map[string]time.Time{}
	b.latest = map[string]*meterEvent{}
}

const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomLocked returns n characters drawn from the seeded source.
func (b *meterBook) randomLocked(n int) string {
	var sb strings.Builder
	for range n {
		sb.WriteByte(idAlphabet[b.rng.IntN(len(idAlphabet))])
	}
	return sb.String()
}

func identKey(name, identifier string) string { return name + "\x00" + identifier }

// shown reports whether e is in the summaries at now: lag after it
// arrived.
func (e *meterEvent) shown(now time.Time, lag time.Duration) bool {
	return shown(e.received, e.revision, now, lag)
}

// counts reports whether e adds to the summaries at now: shown, and not
// cancelled lag ago.
func (e *meterEvent) counts(now time.Time, lag time.Duration) bool {
	return e.shown(now, lag) && (e.canceled.IsZero() || now.Before(e.canceled.Add(lag)))
}

// decimalPattern is the form of a meter event's value.
var decimalPattern = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// parseDecimal reads a non-negative decimal exactly.
func parseDecimal(s string) (*big.Rat, bool) {
	if len(s) > maxMeterField || !decimalPattern.MatchString(s) {
		return nil, false
	}
	return new(big.Rat).SetString(s)
}

// decimalText writes r as a decimal, exactly when it has a finite
// expansion, which every sum of decimals has.
func decimalText(r *big.Rat) string {
	if n, exact := r.FloatPrec(); exact {
		return r.FloatString(n)
	}
	return r.FloatString(20)
}

// AddMeter adds a meter and returns it with its ID. Its event name must
// be new, as Stripe allows one active meter per event name.
func (v *Sim) AddMeter(m BillingMeter) (BillingMeter, error) {
	if m.Aggregation == "" {
		m.Aggregation = MeterAggregationSum
	}
	var errs []error
	if m.EventName == "" || len(m.EventName) > maxMeterField {
		errs = append(errs, fmt.Errorf("event name %q must have 1 to %d characters", m.EventName, maxMeterField))
	}
	if m.Aggregation != MeterAggregationSum && m.Aggregation != MeterAggregationCount {
		errs = append(errs, fmt.Errorf("aggregation %q is neither sum nor count", m.Aggregation))
	}
	if m.ID != "" && !strings.HasPrefix(m.ID, "mtr_") {
		errs = append(errs, fmt.Errorf("ID %q does not start with mtr_", m.ID))
	}
	b := &v.core.meters
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.byName[m.EventName]; ok {
		errs = append(errs, fmt.Errorf("a meter has event name %q", m.EventName))
	}
	if _, ok := b.meters[m.ID]; ok {
		errs = append(errs, fmt.Errorf("meter %s exists", m.ID))
	}
	if len(errs) > 0 {
		return BillingMeter{}, fmt.Errorf("%w: %w", ErrInvalidMeter, errors.Join(errs...))
	}
	if m.ID == "" {
		m.ID = "mtr_" + b.randomLocked(24)
	}
	b.meters[m.ID] = m
	b.byName[m.EventName] = m.ID
	return m, nil
}

// Meters returns the face's meters, by ID.
func (v *Sim) Meters() []BillingMeter {
	b := &v.core.meters
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]BillingMeter, 0, len(b.meters))
	for _, m := range b.meters {
		out = append(out, m)
	}
	slices.SortFunc(out, func(x, y BillingMeter) int { return strings.Compare(x.ID, y.ID) })
	return out
}

// meterRefusal is a meter event Stripe would refuse: a 400 with code and
// param.
type meterRefusal struct {
	code, param, msg string
	noRetry          bool
}

func (e *meterRefusal) Error() string { return e.msg }
func (e *meterRefusal) Unwrap() error { return ErrInvalidMeterEvent }

// RecordMeterEvent records ev as POST /v1/billing/meter_events does, under
// the same rules, and returns it as recorded. It bypasses the key check,
// the rate limit and the 429 fault. An event name no meter has is
// [ErrNoMeter]; a refused event wraps [ErrInvalidMeterEvent].
func (v *Sim) RecordMeterEvent(ev MeterEvent) (MeterEvent, error) {
	return v.core.meters.record(ev, v.core.now(), true)
}

// record checks and records ev at now. An event sent with a key of the
// other mode (here false) finds no meter, as that mode's world has none.
func (b *meterBook) record(ev MeterEvent, now time.Time, here bool) (MeterEvent, error) {
	now = now.UTC()
	switch {
	case ev.EventName == "":
		return ev, &meterRefusal{code: "parameter_missing", param: "event_name", msg: "Missing required param: event_name."}
	case ev.Customer == "":
		return ev, &meterRefusal{code: "parameter_missing", param: "payload[stripe_customer_id]",
			msg: "Missing required param: payload[stripe_customer_id]."}
	}
	for _, f := range []struct{ param, v string }{
		{"event_name", ev.EventName}, {"identifier", ev.Identifier}, {"payload[stripe_customer_id]", ev.Customer},
	} {
		if len(f.v) > maxMeterField {
			return ev, &meterRefusal{code: "parameter_invalid", param: f.param,
				msg: fmt.Sprintf("%s may have %d characters.", f.param, maxMeterField)}
		}
	}
	if ev.Timestamp.IsZero() {
		ev.Timestamp = now
	}
	ev.Timestamp = ev.Timestamp.UTC().Truncate(time.Second)
	if ev.Timestamp.Before(now.Add(-MeterEventMaxAge)) || ev.Timestamp.After(now.Add(MeterEventMaxAhead)) {
		return ev, &meterRefusal{code: "parameter_invalid", param: "timestamp",
			msg: "Timestamp must be within the past 35 calendar days or up to 5 minutes in the future."}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	meterID, hasMeter := b.byName[ev.EventName]
	hasMeter = hasMeter && here
	agg := ""
	if hasMeter {
		agg = b.meters[meterID].Aggregation
	}
	value, ok := big.NewRat(1, 1), true
	if ev.Value != "" || agg == MeterAggregationSum {
		value, ok = parseDecimal(ev.Value)
	}
	if !ok {
		return ev, &meterRefusal{code: "parameter_invalid", param: "payload[value]",
			msg: "payload[value] must be a non-negative decimal number."}
	}
	if agg == MeterAggregationCount {
		value = big.NewRat(1, 1)
	}
	if ev.Identifier == "" {
		ev.Identifier = "mev_" + b.randomLocked(24)
	}
	key := identKey(ev.EventName, ev.Identifier)
	if !here {
		b.calls.NoMeterFound++
		return ev, fmt.Errorf("%w: no meter in this mode", ErrNoMeter)
	}
	if at, taken := b.claims[key]; taken && now.Before(at.Add(MeterIdentifierWindow)) {
		return ev, &meterRefusal{param: "identifier", noRetry: true,
			msg: fmt.Sprintf("An event already exists with identifier %s.", ev.Identifier)}
	}
	b.claims[key] = now
	if !hasMeter {
		b.calls.NoMeterFound++
		delete(b.latest, key)
		return ev, fmt.Errorf("%w: no meter has event name %q", ErrNoMeter, ev.EventName)
	}
	f, _ := value.Float64()
	b.seq++
	e := &meterEvent{id: ev.Identifier, name: ev.EventName, at: ev.Timestamp, received: now, value: value, float: f, seq: b.seq}
	sk := seriesKey{meterID, ev.Customer}
	b.series[sk] = append(b.series[sk], e)
	b.latest[key] = e
	return ev, nil
}

// CancelMeterEvent cancels the event that last took identifier under
// eventName, as a meter event adjustment of type cancel does: its bucket
// goes down once the meter's lag has passed. Cancelling it again changes
// nothing. [ErrNoMeter] when the face holds no such event.
func (v *Sim) CancelMeterEvent(eventName, identifier string) error {
	if !v.core.meters.cancel(eventName, identifier, v.core.now()) {
		return fmt.Errorf("%w: no event %q of %q", ErrNoMeter, identifier, eventName)
	}
	return nil
}

// cancel marks the event as cancelled at now and reports whether it
// exists.
func (b *meterBook) cancel(name, identifier string, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.latest[identKey(name, identifier)]
	if !ok {
		b.calls.UnmatchedCancels++
		return false
	}
	if e.canceled.IsZero() {
		e.canceled = now
	}
	return true
}

// ReviseMeterDown lowers, at once, the value of meter for customer by by
// (a positive decimal; a whole number on a count meter) in every bucket
// that holds at: a revision down that no cancellation explains, as an
// aggregate may make. It can take a bucket below zero.
func (v *Sim) ReviseMeterDown(meter, customer string, at time.Time, by string) error {
	amount, ok := parseDecimal(by)
	if !ok || amount.Sign() == 0 {
		return fmt.Errorf("%w: revision %q is not a positive decimal", ErrInvalidMeterEvent, by)
	}
	b := &v.core.meters
	b.mu.Lock()
	defer b.mu.Unlock()
	m, ok := b.meters[meter]
	switch {
	case !ok:
		return fmt.Errorf("%w: meter %s", ErrNoMeter, meter)
	case customer == "":
		return fmt.Errorf("%w: revision without a customer", ErrInvalidMeterEvent)
	case m.Aggregation == MeterAggregationCount && !amount.IsInt():
		return fmt.Errorf("%w: a count goes down by whole events, not %s", ErrInvalidMeterEvent, by)
	}
	f, _ := amount.Float64()
	e := &meterEvent{at: at.UTC().Truncate(time.Second), received: v.core.now(), value: amount.Neg(amount), float: -f, revision: true}
	sk := seriesKey{meter, customer}
	b.series[sk] = append(b.series[sk], e)
	return nil
}

// MeterSum is the truth for meter and customer over [start, end): the
// value Stripe settles on, every event not cancelled and every revision
// counted, whatever the lag, gaps and noise show. Nil when the meter does
// not exist.
func (v *Sim) MeterSum(meter, customer string, start, end time.Time) *big.Rat {
	b := &v.core.meters
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.meters[meter]; !ok {
		return nil
	}
	sum := new(big.Rat)
	for _, e := range b.series[seriesKey{meter, customer}] {
		if e.canceled.IsZero() && !e.at.Before(start) && e.at.Before(end) {
			sum.Add(sum, e.value)
		}
	}
	return sum
}

// SetMeterLag makes an event show in the summaries of meter only lag
// after it arrived, and a cancellation take effect lag after it arrived.
// The empty meter sets the lag of every meter without one of its own; a
// negative lag removes a meter's own.
func (v *Sim) SetMeterLag(meter string, lag time.Duration) { v.core.meters.faults.setLag(meter, lag) }

// AddMeterGap leaves buckets out of the summaries until g.Until or until
// [Sim.ClearMeterGaps]. Endpoint and Project, OpenAI's, must be empty.
func (v *Sim) AddMeterGap(g MeterGap) error {
	if err := v.core.meters.faults.addGap(g.gap(g.Endpoint+g.Project == "", g.Meter, g.Customer)); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMeter, err)
	}
	return nil
}

// ClearMeterGaps closes every gap.
func (v *Sim) ClearMeterGaps() { v.core.meters.faults.clearGaps() }

// SetMeterFloatNoise makes the summaries render aggregated_value as a
// float64 sum of the events in arrival order, as 0.1 + 0.2 gives
// 0.30000000000000004, and one unit in the last place off the exact value
// when that sum happens to be exact. Off, they render the exact decimal.
func (v *Sim) SetMeterFloatNoise(on bool) { v.core.meters.faults.setNoise(on) }

// SetMeterPageSize makes every page of summaries hold at most n of them,
// whatever its limit, with has_more true while more remain: pages that
// end early. 0 lifts it.
func (v *Sim) SetMeterPageSize(n int) { v.core.meters.faults.setPageSize(n) }

// SetMeterRateLimit makes ep (every endpoint when empty; an unknown one
// is ignored) answer 429 to the calls beyond perSecond in one second of
// the clock; 0 lifts the limit. The default is [DefaultMeterRateLimit].
func (v *Sim) SetMeterRateLimit(ep MeterEndpoint, perSecond int) {
	v.core.meters.faults.setRate(string(ep), perSecond)
}

// RateLimitMeterCalls makes the next n calls of ep (of every endpoint
// when empty) answer 429, whatever the rate.
func (v *Sim) RateLimitMeterCalls(ep MeterEndpoint, n int) {
	_ = v.FailMeterCalls(CallFault{Endpoint: string(ep), Next: n})
}

// FailMeterCalls makes the next c.Next calls of c.Endpoint (of every
// endpoint when empty) answer c.Status, 429 with Stripe's rate_limit
// error (with Retry-After only when c.RetryAfter is positive) or a 5xx
// with an api_error, whatever the rate.
func (v *Sim) FailMeterCalls(c CallFault) error {
	if c.RetryAfter == 0 {
		c.RetryAfter = -1
	}
	if err := v.core.meters.faults.program(c); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMeter, err)
	}
	return nil
}

// SetMeterLivemode sets the livemode of the face's objects.
func (v *Sim) SetMeterLivemode(on bool) {
	b := &v.core.meters
	b.mu.Lock()
	defer b.mu.Unlock()
	b.livemode = on
}

// MeterLivemode returns the livemode of the face's objects.
func (v *Sim) MeterLivemode() bool {
	b := &v.core.meters
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.livemode
}

// MeterCalls returns the counts of the meter API's calls.
func (v *Sim) MeterCalls() MeterCallCounts {
	b := &v.core.meters
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.calls
	c := b.faults.counts()
	out.RateLimited = make(map[MeterEndpoint]int, len(c.throttled))
	for k, n := range c.throttled {
		if n > 0 {
			out.RateLimited[MeterEndpoint(k)] = n
		}
	}
	out.ServerErrors, out.ShortPages = sum(c.failed), c.shortPages
	return out
}
