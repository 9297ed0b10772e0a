package paymentworker_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/dev/lambdalocal"
	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/stripecharge"
	"github.com/hookline/hookline/internal/testkit"
	"github.com/hookline/hookline/internal/testkit/hostile"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/queue"
)

var (
	modelSeed   = flag.Uint64("seed", 0, "fault model: the seed to run (0 draws one, and prints it)")
	modelEvents = flag.Int("model-events", 2000, "fault model: events per profile (make test runs 2,000; make soak 20,000)")
	modelMatrix = flag.Bool("model-matrix", false, "fault model: run each provider fault alone against each profile and print the table")
	matrixCell  = flag.Int("matrix-events", 1000, "fault model: events per fault and profile of the matrix")
)

// Timings of the fault model, scaled down from production as in the
// contract drills.
const (
	modelClientTimeout = 300 * time.Millisecond
	modelMaxCommit     = 600 * time.Millisecond // the slowest late commit
	modelLookupLag     = 200 * time.Millisecond
	modelHorizon       = modelMaxCommit + modelLookupLag
	modelSkew          = 100 * time.Millisecond
	modelFunction      = 2 * time.Second // the function timeout
	modelRedrives      = 2               // redrives an operator makes of one event
)

// modelRates are what one run mixes in.
type modelRates struct {
	events         int
	lostAcks       float64 // of acknowledgements
	providerFaults float64 // of charge calls, spread over faults
	faults         []providersim.Fault
	duplicates     float64 // of events, sent twice by the intake
	replays        float64 // of events, replayed later by an operator
	redriven       float64 // of events, a copy dead-lettered, then redriven
	crashes        float64 // per worker step
	stalls         float64 // per worker step, past the function timeout
	dynamoErrors   float64 // per DynamoDB call
	declines       float64 // of events, declined by the provider
}

// mixedRates is the model make test runs.
func mixedRates(events int) modelRates {
	return modelRates{
		events: events, lostAcks: 0.002, providerFaults: 0.02, faults: hostile.Faults,
		duplicates: 0.05, replays: 0.02, redriven: 0.02, crashes: 0.003, stalls: 0.001, dynamoErrors: 0.003, declines: 0.01,
	}
}

// modelReport is what a run measured.
type modelReport struct {
	profile                                 modelProvider
	events, charged, declined, parked, lost int
	duplicateCharges                        int
	faults                                  map[providersim.FaultKind]int
	lostAcks, crashes, stalls, dynamoErrors int64
	redriven, replayed, duplicated          int
	elapsed                                 time.Duration
	parkedReasons                           map[string]int
	problems                                []string
}

func (r modelReport) success() float64 {
	return float64(r.charged+r.declined) / float64(r.events)
}

func (r modelReport) String() string {
	var f []string
	for k, v := range r.faults {
		f = append(f, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(f)
	return fmt.Sprintf("%s: %d events in %s: %d charged, %d declined, %d in the DLQ %v, %d lost, %d duplicate charges, success %.2f%%; "+
		"injected: %d lost acks, %d crashes, %d stalls, %d DynamoDB errors, %d intake duplicates, %d replays, %d redrives, provider faults [%s]",
		r.profile, r.events, r.elapsed.Round(100*time.Millisecond), r.charged, r.declined, r.parked, r.parkedReasons, r.lost, r.duplicateCharges,
		100*r.success(), r.lostAcks, r.crashes, r.stalls, r.dynamoErrors, r.duplicated, r.replayed, r.redriven, strings.Join(f, " "))
}

func seedOrNew(t *testing.T) uint64 {
	if *modelSeed != 0 {
		return *modelSeed
	}
	seed := rand.Uint64()%1_000_000 + 1
	t.Logf("fault model seed %d", seed)
	return seed
}

// modelProvider is what the fault model charges through: the simulator in
// one idempotency profile, on hookline's provider API or, with stripe, on
// Stripe's PaymentIntents API through the Stripe adapter.
type modelProvider struct {
	profile providersim.Profile
	stripe  bool
}

func (p modelProvider) String() string {
	if p.stripe {
		return "stripe"
	}
	return p.profile.String()
}

// salt makes each provider's dice differ under one seed.
func (p modelProvider) salt() uint64 {
	if p.stripe {
		return uint64(len(providersim.Profiles)) << 32
	}
	return uint64(p.profile) << 32
}

// modelProviders are the three profiles on hookline's API, then Stripe's
// profile (keys honoured, saved 5xx replayed, search lagging) through the
// Stripe adapter.
var modelProviders = []modelProvider{
	{profile: providersim.ProfileHonoursKeys}, {profile: providersim.ProfileReplaysSuccesses},
	{profile: providersim.ProfileIgnoresKeys}, {profile: providersim.ProfileHonoursKeys, stripe: true},
}

// TestFaultModel runs the randomized, seeded fault model against each
// provider profile, and against Stripe's through the Stripe adapter: lost acknowledgements, intake duplicates, replays and
// redrives, hostile provider faults, worker crashes at every step,
// invocations that time out, DynamoDB errors before and after a write.
// Invariants: no event is charged twice; every event ends charged,
// declined, or in the DLQ with its reason; success is at least 99%.
//
// make test runs 2,000 events per profile, make soak 20,000
// (-model-events). A failure prints its seed and count; replay it with
//
//	go test ./internal/paymentworker -run 'TestFaultModel$' -args -seed N -model-events M
func TestFaultModel(t *testing.T) {
	t.Parallel()
	seed := seedOrNew(t)
	events := *modelEvents
	if testing.Short() {
		events = 1000
	}
	for _, p := range modelProviders {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel() // most of a run is waiting out horizons
			n := events
			if p.stripe {
				n = max(events/2, 1) // the same paths as honours_keys, behind another API
			}
			rep := runModel(t, seed, p, mixedRates(n))
			fmt.Printf("fault model seed %d: %s\n", seed, rep)
			checkModel(t, seed, rep, 0.99, fmt.Sprintf("replay: go test ./internal/paymentworker -run 'TestFaultModel$' -args -seed %d -model-events %d", seed, events))
		})
	}
}

// TestFaultMatrix runs each provider fault alone against each profile and
// prints the docs/provider-contract.md table (make soak).
func TestFaultMatrix(t *testing.T) {
	if !*modelMatrix {
		t.Skip("run with -model-matrix (make soak)")
	}
	faultMatrix(t, seedOrNew(t))
}

// checkModel fails the test for every broken invariant, naming the
// command that replays the run.
func checkModel(t *testing.T, seed uint64, rep modelReport, minSuccess float64, replay string) {
	t.Helper()
	if len(rep.problems) > 0 {
		t.Errorf("seed %d: %d events broke an invariant (%s), e.g.:\n%s", seed, len(rep.problems), replay, strings.Join(rep.problems[:min(len(rep.problems), 10)], "\n"))
	}
	if rep.duplicateCharges != 0 || rep.lost != 0 {
		t.Errorf("seed %d: %d duplicate charges, %d events lost; want 0 and 0 (%s)", seed, rep.duplicateCharges, rep.lost, replay)
	}
	if rep.success() < minSuccess {
		t.Errorf("seed %d: success %.2f%%, want at least %.0f%% (%s)", seed, 100*rep.success(), 100*minSuccess, replay)
	}
}

// faultMatrix runs each provider fault alone, at 5% of charge calls with
// 0.2% of acknowledgements lost, against each profile, and prints the
// docs/provider-contract.md table.
func faultMatrix(t *testing.T, seed uint64) {
	fmt.Println("| fault (5% of charge calls) | profile | events | faults fired | acks lost | duplicate charges | lost | success |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, f := range hostile.Faults {
		for _, p := range modelProviders {
			rates := modelRates{events: *matrixCell, lostAcks: 0.002, providerFaults: 0.05, faults: []providersim.Fault{f}}
			rep := runModel(t, seed, p, rates)
			name := f.Kind.String()
			if f.Status != 0 {
				name += " " + strconv.Itoa(f.Status)
			}
			fmt.Printf("| %s | %s | %d | %d | %d | %d | %d | %.2f%% |\n", name, p, rep.events, rep.faults[f.Kind], rep.lostAcks, rep.duplicateCharges, rep.lost, 100*rep.success())
			checkModel(t, seed, rep, 0.99, fmt.Sprintf("replay: go test ./internal/paymentworker -run 'TestFaultMatrix$' -args -model-matrix -seed %d -matrix-events %d", seed, *matrixCell))
		}
	}
}

// model is one run of the fault model.
type model struct {
	t        *testing.T
	d        *testkit.Dice
	provider modelProvider
	rates    modelRates
	env      *localaws.Env
	sim      *providersim.Sim
	reg      *idempotency.Registry
	url      string
	dlq      string
	counts   *chaosCounts
	settled  sync.Map // claim key -> true
	ids      []string
	bodies   map[string]string

	mu       sync.Mutex
	redrives map[string]int
	parked   map[string]string // event -> failure reason
	sent     map[string]string // message ID -> event, for the lost-ack dice
	lostAcks atomic.Int64
}

func runModel(t *testing.T, seed uint64, p modelProvider, rates modelRates) modelReport {
	t.Helper()
	m := newModel(t, seed, p, rates)
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	mapping := m.startWorker(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { m.redrive(ctx) })
	replayed := m.intake(ctx)
	// 90 s, or 20 ms an event for longer runs (make soak).
	limit := max(90*time.Second, time.Duration(rates.events)*20*time.Millisecond)
	ok := m.waitSettled(limit)
	cancel()
	wg.Wait()
	<-mapping
	m.sim.Charges.WaitCommits()
	time.Sleep(modelLookupLag)
	rep := m.report(p, replayed)
	rep.elapsed = time.Since(start)
	if !ok {
		rep.problems = append(rep.problems, fmt.Sprintf("the model did not settle within %s", limit))
	}
	return rep
}

func newModel(t *testing.T, seed uint64, p modelProvider, rates modelRates) *model {
	t.Helper()
	m := &model{t: t, d: testkit.NewDice(seed ^ p.salt()), provider: p, rates: rates, env: localaws.StartForTest(t), counts: &chaosCounts{},
		redrives: map[string]int{}, parked: map[string]string{}, sent: map[string]string{}, bodies: map[string]string{}}
	m.url, m.dlq = m.env.QueueURL("payments"), m.env.QueueURL("payments-dlq")
	_, err := m.env.SQS.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(m.url), Attributes: map[string]string{
		"VisibilityTimeout": "3",
		// The template's maxReceiveCount. local-aws-sqs counts every
		// ChangeMessageVisibility as a receive, so records the worker
		// bounces reach the DLQ after fewer real deliveries than on AWS:
		// the model's redrives see more traffic than they would.
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":5}`, m.env.QueueARN("payments-dlq")),
	}})
	must(t, err)
	m.sim, err = providersim.New(providersim.Config{Profile: p.profile, LookupLag: modelLookupLag, NormaliseCurrency: true,
		DeclineErrorBody: p.profile == providersim.ProfileHonoursKeys, Seed: seed})
	must(t, err)
	must(t, m.sim.Start())
	t.Cleanup(func() { m.sim.Close() })
	m.sim.Faults.SetFaultFunc(hostile.FaultFunc(m.d, m.rates.providerFaults, m.rates.faults, modelMaxCommit))
	for i := range rates.events {
		id := fmt.Sprintf("evt_%s_%05d", p, i)
		m.ids = append(m.ids, id)
		m.bodies[id] = m.body(id, i)
	}
	return m
}

// body is the webhook of event i: some in upper-case currency, some
// declined by the provider (amounts ending in 02).
func (m *model) body(id string, i int) string {
	amount := int64(1000 + (i%50)*10)
	if m.d.Roll("decline", id) < m.rates.declines {
		amount = 1002
	}
	currency := "usd"
	if i%2 == 1 {
		currency = "USD"
	}
	return fmt.Sprintf(`{"id":%q,"type":"payment.requested","data":{"customer":"cus_%s","amount":%d,"currency":%q}}`, id, id, amount, currency)
}

// startWorker runs the payment worker behind the SQS event source, with
// worker faults and DynamoDB faults; the returned channel closes when it
// has stopped.
func (m *model) startWorker(ctx context.Context) <-chan struct{} {
	t := m.t
	c := &chaos{d: m.d, crashes: m.rates.crashes, stall: m.rates.stalls, counts: m.counts}
	ddb := flakyDynamo{DynamoDBAPI: m.env.DynamoDB, d: m.d, rate: m.rates.dynamoErrors, counts: m.counts}
	store, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: ddb, Table: m.env.TableName("IdempotencyTable")})
	must(t, err)
	m.reg, err = idempotency.New(idempotency.Config{Store: store, Namespace: "payments", InProgressTimeout: 3 * time.Second, DeadlineMargin: modelHorizon + modelSkew})
	must(t, err)
	client := m.charger()
	q, err := queue.New(queue.Config{SQS: m.env.SQS, URL: m.url, DeadLetterURL: m.dlq})
	must(t, err)
	w, err := paymentworker.New(paymentworker.Config{
		Registry: chaosRegistry{Registry: m.reg, c: c, settled: &m.settled}, Provider: chaosCharger{Charger: client, c: c},
		Queue: q, RetryBase: 100 * time.Millisecond, Horizon: modelHorizon, ClockSkew: modelSkew,
	})
	must(t, err)
	handler := crashingHandler(w)
	mapping, err := lambdalocal.NewSQSMapping(lambdalocal.SQSMappingConfig{
		SQS: m.env.SQS, QueueURL: m.url, Function: "PaymentWorkerFunction", ReportBatchItemFailures: true,
		Concurrency: 4, Timeout: modelFunction, DropAck: m.dropAck,
		Handler: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			m.note(ev)
			return handler(ctx, ev)
		},
	})
	must(t, err)
	done := make(chan struct{})
	go func() { mapping.Run(ctx); close(done) }()
	return done
}

// charger is the provider client of the model's provider.
func (m *model) charger() paymentworker.Charger {
	if m.provider.stripe {
		c, err := stripecharge.New(stripecharge.Config{APIKey: "sk_test_model", URL: m.sim.URL(), Timeout: modelClientTimeout})
		must(m.t, err)
		return c
	}
	c, err := provider.New(provider.Config{BaseURL: m.sim.URL(), Timeout: modelClientTimeout, MaxAttempts: 3, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	must(m.t, err)
	return c
}

// note remembers which event and receive each message ID carries, for the
// lost-acknowledgement dice.
func (m *model) note(ev events.SQSEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range ev.Records {
		m.sent[r.MessageId] = attrOf(r.MessageAttributes, "event_id") + "/" + r.Attributes["ApproximateReceiveCount"]
	}
}

func attrOf(attrs map[string]events.SQSMessageAttribute, name string) string {
	if a, ok := attrs[name]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

func (m *model) dropAck(messageID string) bool {
	m.mu.Lock()
	what := m.sent[messageID]
	m.mu.Unlock()
	if m.d.Roll("ack", what) < m.rates.lostAcks {
		m.lostAcks.Add(1)
		return true
	}
	return false
}

// intake sends every event, a share of them twice, and replays another
// share later. It returns how many replays it sent.
func (m *model) intake(ctx context.Context) int {
	var copies []string
	for _, id := range m.ids {
		copies = append(copies, id)
		if m.d.Roll("duplicate", id) < m.rates.duplicates {
			copies = append(copies, id)
		}
	}
	m.send(copies)
	var replays, dead []string
	for _, id := range m.ids {
		if m.d.Roll("replay", id) < m.rates.replays {
			replays = append(replays, id)
		}
		if m.d.Roll("dead", id) < m.rates.redriven {
			dead = append(dead, id)
		}
	}
	go m.trickle(ctx, replays, m.url)
	go m.trickle(ctx, dead, m.dlq)
	return len(replays)
}

// trickle sends a copy of each event to queue, ten every 100 ms: replays
// to the queue, or copies dead-lettered with a reason to the DLQ, for the
// operator to redrive.
func (m *model) trickle(ctx context.Context, ids []string, queue string) {
	for i := 0; i < len(ids); i += 10 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		m.sendTo(queue, ids[i:min(i+10, len(ids))])
	}
}

// send enqueues one message per event ID, as the receiver does.
func (m *model) send(ids []string) { m.sendTo(m.url, ids) }

// sendTo sends one message per event ID to queue; the DLQ's copies carry
// the reason the worker gives an unknown outcome it gave up on.
func (m *model) sendTo(queue string, ids []string) {
	for i := 0; i < len(ids); i += 10 {
		var batch []sqstypes.SendMessageBatchRequestEntry
		for j, id := range ids[i:min(i+10, len(ids))] {
			attrs := map[string]sqstypes.MessageAttributeValue{
				"source":   {DataType: aws.String("String"), StringValue: aws.String("payments")},
				"event_id": {DataType: aws.String("String"), StringValue: aws.String(id)},
			}
			if queue == m.dlq {
				attrs["failure_reason"] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("retries_exhausted: provider_outcome_unknown")}
			}
			batch = append(batch, sqstypes.SendMessageBatchRequestEntry{
				Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(m.bodies[id]), MessageAttributes: attrs,
			})
		}
		_, err := m.env.SQS.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(queue), Entries: batch})
		if err != nil {
			m.t.Errorf("send batch: %v", err)
		}
	}
}

// redrive plays the operator: it moves dead-lettered events back to the
// queue, each at most modelRedrives times, and parks the rest with their
// reason.
func (m *model) redrive(ctx context.Context) {
	for ctx.Err() == nil {
		out, err := m.env.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(m.dlq), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			continue
		}
		for _, msg := range out.Messages {
			m.redriveOne(ctx, msg)
		}
	}
}

func (m *model) redriveOne(ctx context.Context, msg sqstypes.Message) {
	id := aws.ToString(msg.MessageAttributes["event_id"].StringValue)
	reason := aws.ToString(msg.MessageAttributes["failure_reason"].StringValue)
	if reason == "" {
		reason = "max_receive_count_exceeded" // moved by SQS itself
	}
	m.mu.Lock()
	again := m.redrives[id] < modelRedrives
	if again {
		m.redrives[id]++
	} else {
		m.parked[id] = reason
	}
	m.mu.Unlock()
	if again {
		m.send([]string{id})
	}
	_, _ = m.env.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(m.dlq), ReceiptHandle: msg.ReceiptHandle})
}

// waitSettled waits until every event is completed or parked.
func (m *model) waitSettled(limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if m.open() == 0 {
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

func (m *model) open() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, id := range m.ids {
		if _, ok := m.settled.Load("payments:" + id); !ok && m.parked[id] == "" {
			n++
		}
	}
	return n
}

// report checks every event's end state.
func (m *model) report(p modelProvider, replayed int) modelReport {
	rep := modelReport{profile: p, events: len(m.ids), faults: m.sim.Faults.FaultsInjected(), parkedReasons: map[string]int{},
		lostAcks: m.lostAcks.Load(), crashes: m.counts.crashes.Load(), stalls: m.counts.stalls.Load(),
		dynamoErrors: m.counts.dynamoErrors.Load(), replayed: replayed, duplicateCharges: m.sim.Charges.DuplicateCharges()}
	for _, n := range m.redrives {
		rep.redriven += n
	}
	for _, id := range m.ids {
		if m.d.Roll("duplicate", id) < m.rates.duplicates {
			rep.duplicated++
		}
		m.classify(&rep, id)
	}
	return rep
}

func (m *model) classify(rep *modelReport, id string) {
	charges := m.sim.Charges.SucceededCount(id)
	rec, _, err := m.reg.Status(context.Background(), "payments:"+id)
	for err != nil { // the registry's store is the flaky one: read again
		rec, _, err = m.reg.Status(context.Background(), "payments:"+id)
	}
	completed := rec.State == idempotency.StateCompleted
	succeeded := completed && strings.Contains(string(rec.Result), `"status":"succeeded"`)
	switch {
	case charges > 1:
		rep.problems = append(rep.problems, fmt.Sprintf("%s charged %d times", id, charges))
	case succeeded && charges == 1:
		rep.charged++
	case completed && !succeeded && charges == 0:
		rep.declined++
	case completed:
		rep.problems = append(rep.problems, fmt.Sprintf("%s stored %s but charged %d times", id, rec.Result, charges))
	case m.parked[id] != "":
		rep.parked++
		reason, _, _ := strings.Cut(m.parked[id], ":")
		rep.parkedReasons[reason]++
	default:
		rep.lost++
		rep.problems = append(rep.problems, fmt.Sprintf("%s lost: key %s, %d charges, not in the DLQ", id, rec.State, charges))
	}
}
