package lab

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/dev/lambdalocal"
	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/queue"
	"github.com/hookline/hookline/pkg/webhook"
)

// experiment is one run on one local system.
type experiment struct {
	cfg     Config
	sys     *localrun.System
	obs     *observer
	mapping *lambdalocal.SQSMapping
	http    *http.Client
	secret  string
	busy    atomic.Int64 // summed worker run time, ns
	bursts  atomic.Int64 // full-path bursts sent
	// invoking counts the worker's invocations running now.
	invoking atomic.Int64
	warming  atomic.Bool // the warm-up is running: no faults, no lost acknowledgements
	// batchesBefore is how many batches the worker was invoked with
	// before the run (in the warm-up).
	batchesBefore int64
	acks          ackCounts // deletes asked for, by message ID
	// acksAsked and acksLost count the deletes asked for and those lost.
	acksAsked, acksLost atomic.Int64
	// workers are the payment worker without and with idempotency;
	// idempotent picks the one each batch goes to, and lostAcks (float64
	// bits) is the share of acknowledgements lost. Both start from cfg;
	// only the live lab changes them.
	workers    [2]*paymentworker.Worker
	idempotent atomic.Bool
	lostAcks   atomic.Uint64
	// cpuFull and cpuBare measure where the CPU went in each path's
	// bursts.
	cpuFull, cpuBare cpuMeter
}

// maxInFlight bounds the webhooks in flight at once, as a provider's
// delivery pool does; an arrival beyond it is offered but not sent, and
// counts as not accepted. Each delivery times out after 10 s, as
// providers' do.
const maxInFlight = 2048

// Run runs one experiment on a fresh local system and reports it.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	return onExperiment(ctx, cfg, (*experiment).run)
}

// newExperiment starts a fresh local system for cfg (already defaulted)
// and sets it up; the caller closes e.sys.
func newExperiment(ctx context.Context, cfg Config) (*experiment, error) {
	lc := localrun.Config{
		Addr: "127.0.0.1:0", NoWorkers: true, Logger: cfg.Logger, AWSLatency: cfg.AWSLatency, AWSFaultsFromEnv: true,
		Sim: providersim.Config{Profile: cfg.Profile, Seed: cfg.Seed},
	}
	if cfg.retain.set() {
		lc.Lookup, lc.AWSExpireItems = cfg.retain.lookup(), true
	}
	sys, err := localrun.Start(ctx, lc)
	if err != nil {
		return nil, err
	}
	e := &experiment{cfg: cfg, sys: sys, secret: localrun.DevSecrets[localrun.SecretVar("payments")],
		http: &http.Client{Transport: &http.Transport{MaxIdleConns: maxInFlight, MaxIdleConnsPerHost: maxInFlight}, Timeout: 10 * time.Second}}
	e.idempotent.Store(cfg.Idempotency)
	e.setLostAcks(cfg.LostAcks)
	if err := e.setUp(ctx); err != nil {
		sys.Close()
		return nil, err
	}
	return e, nil
}

// setUp shortens the queue's visibility (lost acknowledgements come back
// in 5 s, not the template's 180 s), injects provider faults and builds
// the worker behind its event source.
func (e *experiment) setUp(ctx context.Context) error {
	url := e.sys.AWS.QueueURL("payments")
	_, err := e.sys.AWS.SQS.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url),
		Attributes: map[string]string{"VisibilityTimeout": "5"}})
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	if e.cfg.FaultRate > 0 {
		e.sys.Sim.Faults.SetFaultFunc(e.providerFault)
	}
	e.obs = newObserver(time.Now())
	for i, on := range []bool{false, true} {
		w, err := e.worker(url, on)
		if err != nil {
			return err
		}
		e.workers[i] = w
	}
	e.mapping, err = lambdalocal.NewSQSMapping(lambdalocal.SQSMappingConfig{
		SQS: e.sys.AWS.SQS, QueueURL: url, Function: "PaymentWorkerFunction", ReportBatchItemFailures: true,
		Concurrency: e.cfg.Concurrency, Timeout: 30 * time.Second, DropAck: e.dropAck, Logger: e.cfg.Logger,
		Handler: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			e.invoking.Add(1)
			defer e.invoking.Add(-1)
			e.obs.picked(eventIDs(ev), time.Now())
			redelivered := 0
			for _, r := range ev.Records {
				if n, _ := strconv.Atoi(r.Attributes["ApproximateReceiveCount"]); n > 1 {
					redelivered++
				}
			}
			e.obs.redelivered(redelivered)
			w := e.workers[0]
			if e.idempotent.Load() {
				w = e.workers[1]
			}
			start := time.Now()
			defer func() { e.busy.Add(int64(time.Since(start))) }()
			return w.Handle(ctx, ev)
		},
	})
	return err
}

// worker builds the payment worker with idempotency on or off.
func (e *experiment) worker(url string, idempotent bool) (*paymentworker.Worker, error) {
	client, err := provider.New(provider.Config{BaseURL: e.sys.Sim.URL(), Timeout: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	q, err := queue.New(queue.Config{SQS: e.sys.AWS.SQS, URL: url, DeadLetterURL: e.sys.AWS.QueueURL("payments-dlq")})
	if err != nil {
		return nil, err
	}
	var reg paymentworker.Registry = unguarded{}
	var charger paymentworker.Charger = blindCharger{client}
	if idempotent {
		store, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: e.sys.AWS.DynamoDB, Table: e.sys.AWS.TableName("IdempotencyTable")})
		if err != nil {
			return nil, err
		}
		if reg, err = idempotency.New(idempotency.Config{Store: store, Namespace: "payments", CacheSize: 10000,
			Retention: e.cfg.retain.idempotency}); err != nil {
			return nil, err
		}
		charger = client
	}
	mappings, err := e.cfg.Payload.mappings()
	if err != nil {
		return nil, err
	}
	return paymentworker.New(paymentworker.Config{
		Registry: reg, Mappings: mappings, Provider: watchedCharger{Charger: charger, o: e.obs}, Queue: watchedQueue{Queue: q, o: e.obs},
		Concurrency: 10, Logger: e.cfg.Logger, EffectRetention: e.cfg.retain.idempotency, // 0: the default
	})
}

// roll is a seeded number in [0, 1) for the parts.
func (e *experiment) roll(parts ...string) float64 {
	h := fnv.New64a()
	fmt.Fprint(h, e.cfg.Seed)
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	z := h.Sum64() * 0x9e3779b97f4a7c15
	return float64(z>>11) / (1 << 53)
}

// dropAck loses an acknowledgement. SQS keeps a message's ID across
// redeliveries, so each delete of one message is a draw of its own: a lost
// acknowledgement is not lost again on every redelivery.
func (e *experiment) dropAck(messageID string) bool {
	if e.warming.Load() {
		return false
	}
	k := e.acks.next(messageID)
	e.acksAsked.Add(1)
	lost := e.roll("ack", messageID, strconv.FormatInt(k, 10)) < e.lostAckShare()
	if lost {
		e.acksLost.Add(1)
	}
	return lost
}

// ackCounts counts the deletes asked for each message. A live lab calls
// forgetOld now and then: a message not deleted since the call before
// last is forgotten, so memory stays bounded.
type ackCounts struct {
	mu        sync.Mutex
	cur, prev map[string]int64
}

// next counts one more delete of id and returns how many were asked for.
func (a *ackCounts) next(id string) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cur == nil {
		a.cur = map[string]int64{}
	}
	n, ok := a.cur[id]
	if !ok {
		n = a.prev[id]
	}
	n++
	a.cur[id] = n
	return n
}

// forgetOld drops the counts not touched since the last call.
func (a *ackCounts) forgetOld() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.prev, a.cur = a.cur, map[string]int64{}
}

// lostAckShare is the share of acknowledgements lost now.
func (e *experiment) lostAckShare() float64 { return math.Float64frombits(e.lostAcks.Load()) }

func (e *experiment) setLostAcks(share float64) { e.lostAcks.Store(math.Float64bits(share)) }

// providerFault draws the hostile faults of the provider contract.
func (e *experiment) providerFault(key string, n int) providersim.Fault {
	if e.warming.Load() || e.roll("fault", key, strconv.Itoa(n)) >= e.cfg.FaultRate {
		return providersim.Fault{}
	}
	kinds := []providersim.Fault{
		{Kind: providersim.FaultCommitThenError, Status: 502}, {Kind: providersim.FaultDropAfterCharge},
		{Kind: providersim.FaultServerError}, {Kind: providersim.FaultRateLimit, RetryAfter: "0"},
	}
	return kinds[int(e.roll("kind", key, strconv.Itoa(n))*float64(len(kinds)))]
}

// run offers the load, drains, measures the ceilings and reports.
func (e *experiment) run(ctx context.Context) (*Report, error) {
	e.warmUp(ctx)
	runtime.GC() // start the runtime's figures from now, not the last collection
	before, rtBefore := e.snapshot(), readRuntime()
	sampling, stopSampling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { e.sampleEachSecond(sampling) })
	offered := e.offer(ctx)
	drained := e.drain(ctx)
	stopSampling()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lab: stopped: %w", err)
	}
	after := e.snapshot()
	rep := e.report(offered, drained, before, after)
	rep.Runtime = readRuntime().since(rtBefore)
	if err := e.ceilings(ctx, rep); err != nil {
		return nil, err
	}
	rep.Findings = Findings(rep)
	return rep, nil
}

// ceilingRounds is how many times the ceilings are measured in the order
// full, bare, bare, full. One burst's rate moves by a tenth or more from
// the next's on these machines; the means of four halve that noise.
const ceilingRounds = 2

// ceilings measures the full path and the bare pipeline ceilingRounds
// times each way, in the order full, bare, bare, full, and reports the
// means and every burst. Each burst leaves its items in the tables, and
// the process gets slower as they grow; the mirrored order gives both the
// same share of that drift.
func (e *experiment) ceilings(ctx context.Context, rep *Report) error {
	// The ceilings are throughput of the path as written: the bare
	// pipeline has no provider to fail, so neither has the full path here.
	e.sys.Sim.Faults.SetFaultFunc(nil)
	sc, err := e.recordScript(ctx)
	if err != nil {
		return err
	}
	if rep.UnitsByCall, err = unitsByCall(ctx, e.sys.AWS, sc); err != nil {
		return err
	}
	full := func() (float64, error) { return e.fullCeiling(ctx) }
	bare := func() (float64, error) {
		return bareCeiling(ctx, e.sys.AWS, sc, e.cfg.Burst, e.cfg.Concurrency, &e.cpuBare)
	}
	for range ceilingRounds {
		for _, step := range []struct {
			into *[]float64
			run  func() (float64, error)
		}{{&rep.FullCeilings, full}, {&rep.BareCeilings, bare}, {&rep.BareCeilings, bare}, {&rep.FullCeilings, full}} {
			rate, err := step.run()
			if err != nil {
				return err
			}
			*step.into = append(*step.into, rate)
		}
	}
	rep.FullCeiling, rep.BareCeiling = mean(rep.FullCeilings), mean(rep.BareCeilings)
	rep.BareReplays = sc.String()
	rep.Ratio = rep.FullCeiling / rep.BareCeiling
	if c, ok := e.cpuFull.share(); ok && c.Harness() < 1 {
		rep.FullCPU = &c
		rep.FullWithoutHarness = rep.FullCeiling / (1 - c.Harness())
		rep.RatioWithoutHarness = rep.FullWithoutHarness / rep.BareCeiling
	}
	if c, ok := e.cpuBare.share(); ok {
		rep.BareCPU = &c
	}
	return nil
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// offer sends the run's webhooks open loop: each is due at its own time,
// whatever happened to the ones before. It returns the IDs offered.
func (e *experiment) offer(ctx context.Context) []string {
	return e.offerFor(ctx, e.cfg.Duration, e.cfg.rateAt, "evt_lab_", true)
}

// offerFor offers webhooks at rate(t) for d, with IDs that start with
// prefix, and prints a line a second when progress is set.
func (e *experiment) offerFor(ctx context.Context, d time.Duration, rate func(time.Duration) float64, prefix string, progress bool) []string {
	var ids []string
	start := time.Now()
	e.obs.mu.Lock()
	e.obs.start = start
	e.obs.mu.Unlock()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxInFlight)
	due, last, printed := 0.0, start, 0
	for now := range tick.C {
		t := now.Sub(start)
		if t >= d || ctx.Err() != nil {
			break
		}
		due += rate(t) * now.Sub(last).Seconds()
		last = now
		for float64(len(ids)) < due {
			id := fmt.Sprintf("%s%07d", prefix, len(ids))
			ids = append(ids, id)
			e.offerOne(ctx, id, len(ids), now, slots, &wg)
		}
		if sec := int(t / time.Second); progress && sec > printed {
			printed = sec
			e.progress(sec - 1)
		}
	}
	wg.Wait()
	return ids
}

// offerOne offers webhook id, the i-th of its run, due now: it is sent
// in a goroutine of wg when a slot is free, and refused unsent when not.
func (e *experiment) offerOne(ctx context.Context, id string, i int, now time.Time, slots chan struct{}, wg *sync.WaitGroup) {
	e.obs.offer(id, now)
	select {
	case slots <- struct{}{}:
		wg.Go(func() {
			defer func() { <-slots }()
			e.obs.accept(id, e.post(ctx, id, i))
		})
	default: // the sender is saturated: offered, never sent
		e.obs.accept(id, RefusedUnsent)
	}
}

// warmUp offers load at the run's base rate for cfg.Warmup, with no
// acknowledgement lost and no provider fault, waits until it settled and
// forgets it: the run then measures a system already under load, whose
// SQS emulator has compiled its hot code, whose sender holds open
// connections and whose Lambda environments are running, as at any
// moment of a production day but its first.
func (e *experiment) warmUp(ctx context.Context) {
	if e.cfg.Warmup <= 0 {
		return
	}
	e.warming.Store(true)
	defer e.warming.Store(false)
	ids := e.offerFor(ctx, e.cfg.Warmup, func(time.Duration) float64 { return e.cfg.Rate }, "evt_warm_", false)
	deadline := time.Now().Add(30 * time.Second)
	for e.obs.openOf(ids) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	for e.invoking.Load() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	e.obs.reset(time.Now())
	e.busy.Store(0)
	e.batchesBefore = e.mapping.Stats().Invocations.Load()
}

// Why a webhook was not accepted, besides "status N" for an answer other
// than 200.
const (
	// RefusedUnsent: the sender already had maxInFlight webhooks in flight,
	// so this one was offered but never sent.
	RefusedUnsent = "not sent (sender saturated)"
	// RefusedError: no answer (a timeout or a connection error).
	RefusedError = "no answer"
)

// signed is one signed webhook, ready to send.
type signed struct {
	id     string
	body   []byte
	header http.Header
}

// sign makes the webhook of event id, the i-th of its run, as the
// provider would sign it; ok is false when it could not be signed.
func (e *experiment) sign(id string, i int) (signed, bool) {
	body := e.cfg.Payload.body(id, i)
	h, err := webhook.SignHeaders(webhook.SchemeStandard, []string{e.secret}, id, time.Now(), body)
	if err != nil {
		return signed{}, false
	}
	h.Set("Content-Type", "application/json")
	return signed{id: id, body: body, header: h}, true
}

// post signs and sends one webhook and returns why it was not accepted,
// "" when it was.
func (e *experiment) post(ctx context.Context, id string, i int) string {
	w, ok := e.sign(id, i)
	if !ok {
		return "not signed"
	}
	return e.deliver(ctx, w)
}

// deliver sends a signed webhook and returns why it was not accepted, ""
// when it was.
func (e *experiment) deliver(ctx context.Context, w signed) (why string) {
	asSender(ctx, func(ctx context.Context) { why = e.roundTrip(ctx, w) })
	return why
}

// roundTrip is deliver's request and answer.
func (e *experiment) roundTrip(ctx context.Context, w signed) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.sys.URL+"/webhooks/"+labSource, bytes.NewReader(w.body))
	if err != nil {
		return RefusedError
	}
	req.Header = w.header
	e.obs.sent(w.id, time.Now())
	resp, err := e.http.Do(req)
	if err != nil {
		return RefusedError
	}
	// Read the answer to its end, or the connection is not reused: a new
	// connection per webhook piles up sockets in TIME_WAIT and slows every
	// later connect.
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "status " + strconv.Itoa(resp.StatusCode)
	}
	return ""
}

// progress prints the line of second n.
func (e *experiment) progress(n int) {
	if e.cfg.Progress == nil {
		return
	}
	if p, ok := e.obs.second(n); ok {
		fmt.Fprintf(e.cfg.Progress, "t=%3ds offered %4d accepted %4d charged %4d dup %3d redelivered %3d depth %5d oldest %5.1fs p50 %4.0fms p99 %5.0fms\n",
			p.T, p.Offered, p.Accepted, p.Charged, p.Duplicates, p.Redeliveries, p.QueueDepth, p.OldestAge, p.P50, p.P99)
	}
}

// sampleEachSecond records the queue's depth once a second.
func (e *experiment) sampleEachSecond(ctx context.Context) {
	everySecond(ctx, func() { e.obs.sample(e.queueDepth(ctx)) })
}

// everySecond calls f once a second until ctx ends.
func everySecond(ctx context.Context, f func()) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// queueDepth is the payments queue's approximate depth, -1 when it could
// not be read.
func (e *experiment) queueDepth(ctx context.Context) int {
	out, err := e.sys.AWS.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(e.sys.AWS.QueueURL("payments")),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		return -1
	}
	depth, err := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	if err != nil {
		return -1
	}
	return depth
}

// drain waits until every accepted event settled, then one visibility
// timeout more so that lost acknowledgements come back and are counted.
// It returns how long the backlog took to settle after the load.
func (e *experiment) drain(ctx context.Context) time.Duration {
	start := time.Now()
	deadline := start.Add(e.cfg.Drain)
	for e.obs.open() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	settled := time.Since(start)
	if e.cfg.LostAcks > 0 {
		time.Sleep(min(6*time.Second, time.Until(deadline)))
	}
	return settled
}

// eventIDs are the event IDs the receiver put on a batch's messages.
func eventIDs(ev events.SQSEvent) []string {
	ids := make([]string, 0, len(ev.Records))
	for _, r := range ev.Records {
		if a, ok := r.MessageAttributes["event_id"]; ok && a.StringValue != nil {
			ids = append(ids, *a.StringValue)
		}
	}
	return ids
}

// unguarded is the worker without idempotency: every delivery claims.
type unguarded struct{}

func (unguarded) Claim(context.Context, string, string) (idempotency.Claim, error) {
	return idempotency.Claim{Status: idempotency.StatusClaimed, Token: "none", Attempt: 1, HeldUntil: time.Now().Add(time.Hour)}, nil
}
func (unguarded) Complete(context.Context, string, string, []byte) error { return nil }
func (unguarded) CompleteFor(context.Context, string, string, []byte, time.Duration) error {
	return nil
}
func (unguarded) Status(context.Context, string) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, nil
}
func (unguarded) Release(context.Context, string, string, time.Time) error {
	return nil
}

// blindCharger never finds an earlier charge: with unguarded, the worker
// has no idempotency at all.
type blindCharger struct{ *provider.Client }

func (blindCharger) LookupCharge(context.Context, string) (*provider.Charge, bool, error) {
	return nil, false, nil
}
