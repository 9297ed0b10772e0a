package lab

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/pkg/idempotency"
)

// LiveConfig starts a [Live] lab. Its knobs are where the lab starts and
// where "reset" returns; the command line starts at the design's rates.
type LiveConfig struct {
	// Rate is the offered load in webhooks/s, open loop (0: 500).
	Rate float64
	// LostAcks is the share of SQS acknowledgements lost (0: none).
	LostAcks float64
	// Idempotency turns the worker's registry on from the start.
	Idempotency bool
	// Profile is the provider's idempotency profile.
	Profile providersim.Profile
	// Seed fixes which acknowledgements are lost.
	Seed uint64
	// IntakeRetention and IdempotencyRetention are how long the live lab
	// keeps intake records and idempotency keys (0: LiveIntakeRetention
	// and LiveIdempotencyRetention); the local DynamoDB deletes each
	// item once its TTL passes, so that the lab's memory stays flat
	// however long it runs. Intake must not outlive idempotency, as the
	// template check requires.
	IntakeRetention, IdempotencyRetention time.Duration
	Logger                                *slog.Logger
}

// The live lab's retentions: minutes, where the template keeps days. A
// lost acknowledgement here comes back within the 5 s visibility timeout
// and the lab's sender retries for seconds, so minutes outlast every way
// an event comes back in the lab; on AWS providers retry for days.
const (
	LiveIntakeRetention      = 2 * time.Minute
	LiveIdempotencyRetention = 5 * time.Minute
)

// Knobs are what the live lab can change without a restart.
type Knobs struct {
	Rate        float64 `json:"rate"`
	LostAcks    float64 `json:"lost_acks"`
	Idempotency bool    `json:"idempotency"`
	Profile     string  `json:"profile"`
	// SpikeFactor multiplies Rate for SpikeLeft more seconds (0: none).
	SpikeFactor float64 `json:"spike_factor,omitempty"`
	SpikeLeft   float64 `json:"spike_left_s,omitempty"`
}

// Limits of the live knobs.
const (
	MaxLiveRate    = 2000.0
	MaxSpikeFactor = 10.0
	MaxSpikeFor    = 2 * time.Minute
)

// ErrOutOfRange reports a live change the lab refuses.
var ErrOutOfRange = errors.New("lab: out of range")

// liveHistory is how many seconds a live lab keeps.
const liveHistory = 3600

// LiveChanges is how many changes a live lab keeps, the last ones: the
// state goes to every page once a second, so it must not grow with every
// command a lab takes. A change's text is kept as the copilot reads it
// (runs of whitespace as one space), and at most maxChangeText bytes.
const LiveChanges = 100

const maxChangeText = 120

// forgetAfter is how long a live lab remembers each event: longer than any
// redelivery it may still see (the visibility timeout is 5 s).
const forgetAfter = 2 * time.Minute

// The provider simulator forgets, every forgetChargesEvery, the charges
// made more than forgetChargesAfter ago: longer than a claim's in-progress
// timeout (60 s) plus the settle horizon (30 s), after which a worker that
// takes a claim over looks its charge up.
const (
	forgetChargesAfter = 3 * time.Minute
	forgetChargesEvery = 10
)

// Live runs the payment pipeline under load until Close, with knobs that
// change while it runs.
type Live struct {
	e      *experiment
	start  Knobs
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu         sync.Mutex
	rate       float64
	spike      float64
	spikeUntil time.Time
	secs       []Second   // complete seconds, from the start
	acks       [][2]int64 // deletes asked for and lost, by second
	changes    []Change   // the last LiveChanges
	nChanges   int        // changes since the start
	findings   []Finding  // the last answer to "what broke?"
	subs       map[chan []byte]struct{}
}

// Change is one live change: what was asked and the second it applied in.
type Change struct {
	T    int    `json:"t"`
	Text string `json:"text"`
}

// StartLive starts a fresh local system and offers load until Close.
func StartLive(ctx context.Context, cfg LiveConfig) (*Live, error) {
	if cfg.Rate == 0 {
		cfg.Rate = 500
	}
	if cfg.Rate < 0 || cfg.Rate > MaxLiveRate || cfg.LostAcks < 0 || cfg.LostAcks > 1 {
		return nil, fmt.Errorf("%w: rate must lie in (0, %g] and lost acks in [0, 1]", ErrInvalidConfig, MaxLiveRate)
	}
	r := retentions{cmp.Or(cfg.IntakeRetention, LiveIntakeRetention), cmp.Or(cfg.IdempotencyRetention, LiveIdempotencyRetention)}
	if r.intake < 0 || r.intake > r.idempotency || r.idempotency <= idempotency.DefaultInProgressTimeout {
		return nil, fmt.Errorf("%w: intake retention %s must be positive and at most idempotency retention %s, which must exceed %s",
			ErrInvalidConfig, r.intake, r.idempotency, idempotency.DefaultInProgressTimeout)
	}
	bc := Config{Name: "live", Rate: cfg.Rate, LostAcks: cfg.LostAcks, Idempotency: cfg.Idempotency, Profile: cfg.Profile,
		Seed: cfg.Seed, Logger: cfg.Logger, Duration: time.Second, retain: r}.withDefaults()
	e, err := newExperiment(ctx, bc)
	if err != nil {
		return nil, err
	}
	run, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &Live{e: e, cancel: cancel, rate: cfg.Rate, subs: map[chan []byte]struct{}{},
		start: Knobs{Rate: cfg.Rate, LostAcks: cfg.LostAcks, Idempotency: cfg.Idempotency, Profile: cfg.Profile.String()}}
	l.wg.Go(func() { e.mapping.Run(run) })
	e.obs.reset(time.Now())
	l.wg.Go(func() { l.offer(run) })
	l.wg.Go(func() { l.eachSecond(run) })
	return l, nil
}

// Close stops the load and the local system.
func (l *Live) Close() error {
	l.cancel()
	l.wg.Wait()
	return l.e.sys.Close()
}

// System is the local system the lab runs on.
func (l *Live) System() *localrun.System { return l.e.sys }

// rateNow is the offered rate now: the rate, or the spike's.
func (l *Live) rateNow(now time.Time) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.spikeUntil) {
		return l.rate * l.spike
	}
	return l.rate
}

// offer sends webhooks open loop at rateNow until ctx ends.
func (l *Live) offer(ctx context.Context) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, maxInFlight)
	due, n, last := 0.0, 0, time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			due += l.rateNow(now) * now.Sub(last).Seconds()
			last = now
			for ; float64(n) < due; n++ {
				l.e.offerOne(ctx, "evt_live_"+strconv.Itoa(n), n, now, slots, &wg)
			}
		}
	}
}

// eachSecond samples the queue once a second, keeps the second that just
// ended, forgets old events (and the provider its old charges) and sends
// the state to every subscriber.
func (l *Live) eachSecond(ctx context.Context) {
	n := 0
	everySecond(ctx, func() {
		l.e.obs.sample(l.e.queueDepth(ctx))
		l.keepSeconds()
		l.e.obs.forget(time.Now().Add(-forgetAfter))
		if n++; n%int(forgetAfter/time.Second) == 0 {
			l.e.acks.forgetOld()
		}
		if n%forgetChargesEvery == 0 {
			l.e.sys.Sim.Charges.Forget(time.Now().Add(-forgetChargesAfter))
		}
		l.publish()
	})
}

// keepSeconds copies the seconds the observer finished since the last
// call, with the acknowledgements asked for and lost by then.
func (l *Live) keepSeconds() {
	asked, lost := l.e.acksAsked.Load(), l.e.acksLost.Load()
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		next := l.nowTLocked()
		if _, ok := l.e.obs.second(next + 1); !ok { // a second is over once the next began
			break
		}
		s, _ := l.e.obs.second(next)
		l.secs = append(l.secs, s)
		l.acks = append(l.acks, [2]int64{asked, lost})
	}
	if n := len(l.secs) - liveHistory; n > 0 {
		// Keep an hour: the T of each second says where it was.
		l.secs, l.acks = l.secs[n:], l.acks[n:]
	}
}

// knobsLocked are the knobs now.
func (l *Live) knobsLocked(now time.Time) Knobs {
	k := Knobs{Rate: l.rate, LostAcks: l.e.lostAckShare(), Idempotency: l.e.idempotent.Load(), Profile: l.e.sys.Sim.Profile().String()}
	if left := l.spikeUntil.Sub(now); left > 0 {
		k.SpikeFactor, k.SpikeLeft = l.spike, left.Round(100*time.Millisecond).Seconds()
	}
	return k
}

// nowT is the second now, on the seconds' clock.
func (l *Live) nowTLocked() int {
	if len(l.secs) == 0 {
		return 0
	}
	return l.secs[len(l.secs)-1].T + 1
}

// changed records a change asked for by text, keeping the last
// LiveChanges.
func (l *Live) changedLocked(text string) {
	text = strings.Join(strings.Fields(text), " ")
	if len(text) > maxChangeText {
		text = strings.ToValidUTF8(text[:maxChangeText], "") + "…"
	}
	if len(l.changes) == LiveChanges {
		l.changes = append(l.changes[:0], l.changes[1:]...)
	}
	l.changes = append(l.changes, Change{T: l.nowTLocked(), Text: text})
	l.nChanges++
}

// SetIdempotency turns the worker's registry on or off from the next
// batch.
func (l *Live) SetIdempotency(on bool, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.e.idempotent.Store(on)
	l.changedLocked(text)
}

// SetRate changes the offered rate.
func (l *Live) SetRate(rate float64, text string) error {
	if rate <= 0 || rate > MaxLiveRate {
		return fmt.Errorf("%w: the rate must lie in (0, %g] webhooks/s", ErrOutOfRange, MaxLiveRate)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rate = rate
	l.changedLocked(text)
	return nil
}

// Spike multiplies the rate by factor for d from now.
func (l *Live) Spike(factor float64, d time.Duration, text string) error {
	if factor <= 1 || factor > MaxSpikeFactor || d <= 0 || d > MaxSpikeFor {
		return fmt.Errorf("%w: a spike is more than 1x and at most %gx, for at most %s", ErrOutOfRange, MaxSpikeFactor, MaxSpikeFor)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spike, l.spikeUntil = factor, time.Now().Add(d)
	l.changedLocked(text)
	return nil
}

// SetLostAcks changes the share of acknowledgements lost.
func (l *Live) SetLostAcks(share float64, text string) error {
	if share < 0 || share > 1 {
		return fmt.Errorf("%w: the share of lost acknowledgements lies from 0%% to 100%%", ErrOutOfRange)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.e.setLostAcks(share)
	l.changedLocked(text)
	return nil
}

// SetProfile changes how the provider treats idempotency keys.
func (l *Live) SetProfile(p providersim.Profile, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.e.sys.Sim.SetProfile(p)
	l.changedLocked(text)
}

// Reset returns every knob to where the lab started and ends a spike.
func (l *Live) Reset(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rate, l.spike, l.spikeUntil = l.start.Rate, 0, time.Time{}
	l.e.setLostAcks(l.start.LostAcks)
	l.e.idempotent.Store(l.start.Idempotency)
	if p, err := providersim.ParseProfile(l.start.Profile); err == nil {
		l.e.sys.Sim.SetProfile(p)
	}
	l.changedLocked(text)
}

// Subscribe returns a channel that gets the state as JSON once a second,
// the current state first, until cancel.
func (l *Live) Subscribe() (states <-chan []byte, cancel func()) {
	ch := make(chan []byte, 4)
	if b, err := l.StateJSON(); err == nil {
		ch <- b
	}
	l.mu.Lock()
	l.subs[ch] = struct{}{}
	l.mu.Unlock()
	return ch, func() {
		l.mu.Lock()
		delete(l.subs, ch)
		l.mu.Unlock()
	}
}

// publish sends the state to every subscriber; a subscriber that is
// behind misses it.
func (l *Live) publish() {
	b, err := l.StateJSON()
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.subs {
		select {
		case ch <- b:
		default:
		}
	}
}
