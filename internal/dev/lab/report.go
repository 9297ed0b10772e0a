package lab

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// Report is what one experiment measured.
type Report struct {
	Name string  `json:"name"`
	Rate float64 `json:"rate"`
	// PeakRate is the offered rate at its highest: Rate, or the spike's.
	PeakRate float64 `json:"peak_rate"`
	Duration string  `json:"duration"`
	// Warmup is the load offered before the run and not counted.
	Warmup      string  `json:"warmup"`
	LostAcks    float64 `json:"lost_acks"`
	Idempotency bool    `json:"idempotency"`
	Spike       string  `json:"spike"`
	Profile     string  `json:"profile"`
	FaultRate   float64 `json:"fault_rate"`
	AWSLatency  string  `json:"aws_latency"`
	// GCPercent is the collector's GOGC during the run (-1: off).
	GCPercent int    `json:"gogc"`
	Seed      uint64 `json:"seed"`

	Offered  int `json:"offered"`
	Accepted int `json:"accepted"`
	// NotAccepted says why the offered webhooks that were not accepted
	// were not: never sent because the sender was saturated, an answer
	// other than 200 ("status 503"), or no answer.
	NotAccepted  map[string]int `json:"not_accepted,omitempty"`
	Charged      int            `json:"charged"`
	Declined     int            `json:"declined"`
	DeadLettered int            `json:"dead_lettered"`
	Lost         int            `json:"lost"`
	// Duplicates are customers charged more than once, from the provider's
	// own books; DuplicatesPerDay extrapolates them to a day at the rate
	// measured.
	Duplicates       int     `json:"duplicate_charges"`
	DuplicatesPerDay float64 `json:"duplicate_charges_per_day"`
	Redeliveries     int     `json:"redeliveries"`
	Success          float64 `json:"success"`
	P50              float64 `json:"p50_ms"`
	P99              float64 `json:"p99_ms"`
	// DrainedIn is how long the backlog took to settle after the load.
	DrainedIn string `json:"drained_in"`
	// SpikeDrainedIn is how long after the spike's end the oldest
	// unsettled event was again younger than a second ("" without a spike).
	SpikeDrainedIn string  `json:"spike_drained_in,omitempty"`
	MaxOldestAge   float64 `json:"max_oldest_age_s"`
	MaxQueueDepth  int     `json:"max_queue_depth"`
	// Stages split webhook → charge into its legs: where the time went.
	Stages []Stage `json:"stages"`
	// Runtime is what the Go runtime did during the paced run.
	Runtime Runtime `json:"runtime"`

	// Payload names the webhooks' body and PayloadBytes is its size.
	Payload      string `json:"payload"`
	PayloadBytes int    `json:"payload_bytes"`
	// CallsPerEvent are the AWS calls per event by operation, and
	// AWSCalls their sum.
	CallsPerEvent map[string]float64 `json:"aws_calls_per_event"`
	AWSCalls      float64            `json:"aws_calls_per_event_total"`
	// Units are the DynamoDB capacity units per event, by table and
	// index; CostPerMillion prices them with the calls.
	Units          Units `json:"dynamodb_units_per_event"`
	CostPerMillion Cost  `json:"cost_per_million_events"`
	// UnitsByCall are the units each DynamoDB call of one probe event
	// consumed, in order ([Script]).
	UnitsByCall []CallUnits `json:"units_by_call,omitempty"`

	// FullCeiling and BareCeiling are events/s, saturated, measured in
	// this run on the same emulators; Ratio is full ÷ bare.
	FullCeiling float64 `json:"full_ceiling"`
	BareCeiling float64 `json:"bare_ceiling"`
	Ratio       float64 `json:"full_over_bare"`
	// FullCeilings and BareCeilings are the bursts the means are of.
	FullCeilings []float64 `json:"full_ceilings"`
	BareCeilings []float64 `json:"bare_ceilings"`
	// BareReplays names the calls the bare pipeline replays per event.
	BareReplays string `json:"bare_replays"`
	// FullCPU and BareCPU are how the machine's CPU went in each path's
	// bursts (nil when it was not measured: under hookline lab --cpuprofile, or
	// off Linux). FullWithoutHarness is the full path's ceiling with the
	// harness's share of that CPU (the sender's and the provider
	// simulator's) given back, and RatioWithoutHarness that over the bare
	// pipeline's: the bare pipeline has neither.
	FullCPU             *CPUShare `json:"full_path_cpu,omitempty"`
	BareCPU             *CPUShare `json:"bare_pipeline_cpu,omitempty"`
	FullWithoutHarness  float64   `json:"full_ceiling_without_harness,omitempty"`
	RatioWithoutHarness float64   `json:"full_without_harness_over_bare,omitempty"`

	Seconds  []Second  `json:"seconds"`
	Findings []Finding `json:"findings"`

	// Plan is what a higher rate would need of AWS, worked from this
	// run's figures ([PlanFor]; nil unless asked for).
	Plan *Plan `json:"capacity_plan,omitempty"`
}

// currentGCPercent reads the collector's GOGC.
func currentGCPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// report assembles the totals of the paced run.
func (e *experiment) report(ids []string, drained time.Duration, before, after snapshot) *Report {
	c := e.cfg
	r := &Report{Name: c.Name, Rate: c.Rate, PeakRate: c.Rate * max(c.Spike.Factor, 1), Duration: c.Duration.String(), Warmup: c.Warmup.String(), LostAcks: c.LostAcks, Idempotency: c.Idempotency,
		Spike: c.Spike.String(), Profile: c.Profile.String(), FaultRate: c.FaultRate, AWSLatency: c.AWSLatency.String(), Seed: c.Seed, GCPercent: currentGCPercent(),
		Offered: len(ids), Duplicates: e.sys.Sim.Charges.DuplicateCharges(), DrainedIn: drained.Round(100 * time.Millisecond).String()}
	o := e.obs
	o.mu.Lock()
	r.Accepted = len(o.accepted)
	r.NotAccepted = maps.Clone(o.refused)
	for id := range o.accepted {
		_, charged := o.charged[id]
		switch {
		case charged:
			r.Charged++
		case o.declined[id]:
			r.Declined++
		case o.dead[id] != "":
			r.DeadLettered++
		default:
			r.Lost++
		}
	}
	o.mu.Unlock()
	r.Seconds = o.series()
	p50, p99 := percentiles(o.latencies())
	r.P50, r.P99 = ms(p50), ms(p99)
	r.Stages = o.stages()
	for _, s := range r.Seconds {
		r.Redeliveries += s.Redeliveries
		r.MaxOldestAge = max(r.MaxOldestAge, s.OldestAge)
		r.MaxQueueDepth = max(r.MaxQueueDepth, s.QueueDepth)
	}
	if r.Offered > 0 {
		r.Success = float64(r.Charged) / float64(r.Offered)
		r.DuplicatesPerDay = float64(r.Duplicates) / c.Duration.Seconds() * 86400
	}
	r.SpikeDrainedIn = spikeDrain(c.Spike, r.Seconds)
	r.Payload, r.PayloadBytes = c.Payload.Name, c.Payload.Size
	e.costs(r, before, after, float64(max(r.Offered, 1)))
	return r
}

// spikeDrain is how long after the spike the oldest unsettled event was
// younger than a second again.
func spikeDrain(sp Spike, secs []Second) string {
	if sp.Factor == 0 {
		return ""
	}
	end := int((sp.At + sp.For) / time.Second)
	for _, s := range secs {
		if s.T >= end && s.OldestAge < 1 {
			return (time.Duration(s.T-end) * time.Second).String()
		}
	}
	return "not within the run"
}

// snapshot is what local AWS had counted at one moment: calls by
// operation and capacity consumed.
type snapshot struct {
	calls    map[string]int64
	capacity localaws.Capacity
}

func (e *experiment) snapshot() snapshot {
	return snapshot{calls: e.sys.AWS.Calls.Snapshot(), capacity: e.sys.AWS.Capacity()}
}

// costs sets the AWS calls and DynamoDB units per event between two
// snapshots, and what a million events cost. Receives are priced as one
// per batch invoked: Lambda's pollers long-poll an SQS queue, while the
// local event source short-polls (see lambdalocal.SQSMapping.Run), so its
// empty receives are not what AWS would bill.
func (e *experiment) costs(r *Report, before, after snapshot, events float64) {
	calls := map[string]int64{}
	r.CallsPerEvent = map[string]float64{}
	batches := float64(e.mapping.Stats().Invocations.Load()-e.batchesBefore) / events
	sqsCalls := batches
	for k, v := range after.calls {
		if d := v - before.calls[k]; d > 0 {
			calls[k] = d
			r.CallsPerEvent[k] = float64(d) / events
			r.AWSCalls += float64(d) / events
			if strings.HasPrefix(k, "SQS.") && k != "SQS.ReceiveMessage" && k != "SQS.GetQueueAttributes" {
				sqsCalls += float64(d) / events
			}
		}
	}
	r.Units = unitsBetween(before.capacity, after.capacity, calls, events)
	u := usage{
		requests:      1,
		invocations:   1 + batches,
		lambdaSeconds: time.Duration(e.busy.Load()).Seconds() / events,
		sqsCalls:      sqsCalls, dynamoReads: r.Units.Read, dynamoWrites: r.Units.Write,
	}
	r.CostPerMillion = e.cfg.Prices.costOf(u)
}

// fullCeiling is the full path's saturated rate: a burst from 32
// connections, timed from the first send to the last charge. Each burst
// sends events of its own.
func (e *experiment) fullCeiling(ctx context.Context) (float64, error) {
	n := e.cfg.Burst
	round := e.bursts.Add(1)
	// The webhooks are made and signed before the clock starts, as the
	// bare pipeline makes its inputs: signing is the provider's work.
	burst := make([]string, n)
	hooks := make([]signed, n)
	for i := range burst {
		burst[i] = fmt.Sprintf("evt_burst%d_%07d", round, i)
		w, ok := e.sign(burst[i], i)
		if !ok {
			return 0, errors.New("lab: could not sign the burst's webhooks")
		}
		hooks[i] = w
	}
	e.cpuFull.begin()
	defer e.cpuFull.end(n)
	start := time.Now()
	ids := make(chan int)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for i := range ids {
					e.obs.offer(burst[i], time.Now())
					e.obs.accept(burst[i], e.deliver(ctx, hooks[i]))
				}
			})
		}
		wg.Wait()
	}()
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		ids <- i
	}
	close(ids)
	<-done
	// Only this burst's events count: stragglers of the paced run may
	// still be settling.
	for e.obs.openOf(burst) > 0 && time.Since(start) < 5*time.Minute && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("lab: stopped: %w", err)
	}
	if e.obs.openOf(burst) > 0 {
		return 0, fmt.Errorf("lab: the full-path burst did not settle within 5 minutes")
	}
	elapsed := time.Since(start)
	// A refused webhook is done at once: counted, it would make the
	// ceiling a rate of answers, not of charges. Without injected AWS
	// faults a refusal is a capacity failure the ceiling must not hide;
	// with them it is the receiver's right answer to an ambiguous write,
	// and the ceiling is the rate of the webhooks it accepted.
	accepted := e.obs.acceptedOf(burst)
	if refused := n - accepted; refused > 0 && !e.sys.AWS.FaultsOn() {
		return 0, fmt.Errorf("lab: %d of the full-path burst's %d webhooks were refused", refused, n)
	}
	return float64(accepted) / elapsed.Seconds(), nil
}
