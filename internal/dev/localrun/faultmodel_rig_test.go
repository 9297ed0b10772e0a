package localrun_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/testkit"
	"github.com/hookline/hookline/internal/testkit/hostile"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/webhook"
)

// Timings of the model, scaled down from production as in the payment
// fault model: the provider's slowest commit and its lookup lag make the
// settle horizon, and the in-progress window outlasts horizon, skew and
// one provider call.
const (
	e2eMaxCommit  = 600 * time.Millisecond
	e2eLookupLag  = 200 * time.Millisecond
	e2eVisibility = "5" // seconds: a failed or unacknowledged message returns this soon
	e2eSenders    = 16  // concurrent webhook connections
	e2eSchedule   = 2 * time.Second
	// e2eConcurrency is the usage event source's MaximumConcurrency in
	// the template: as many batches at once as AWS would run for the hot
	// workload.
	e2eConcurrency = 10
)

// e2eOverrides are the variables the model sets over the template's.
var e2eOverrides = map[string]string{
	"PROVIDER_TIMEOUT":        "300ms",
	"PROVIDER_SETTLE_HORIZON": (e2eMaxCommit + e2eLookupLag).String(),
	"CLOCK_SKEW":              "100ms",
	"IN_PROGRESS_TIMEOUT":     "3s",
}

// e2eWorkload is one workload of the model, with the total its distinct
// records add up to.
type e2eWorkload struct {
	id         string
	cap, total int64 // total: of all its records, whatever their period
	// periods is its billing period (faultmodel_periods_test.go); nil
	// for a lifetime total.
	periods *spend.Periods
}

func (w e2eWorkload) crosses() bool { return w.total > w.cap }

// e2eRecord is one usage record of the model.
type e2eRecord struct {
	id, ref    string
	units      int64
	ghost      bool     // its reference names no workload: it is deferred
	exportOnly bool     // no webhook: only the reconciler finds it
	source     string   // the door's source: "usage" when empty
	sums       *e2eSums // a record of a Stripe-metered workload
	webhooks   []string
	once       sync.Once
	// at is when it occurred, set as it is published; late: sent after
	// the boundary with a time in the period before it; afterClose: sent
	// after that period's close.
	at               time.Time
	late, afterClose bool
}

// e2eDelivery is one webhook the model sends (or, for an export-only
// record, one record it publishes in the export).
type e2eDelivery struct {
	source, id string
	rec        *e2eRecord
	order      uint64
}

// e2eRun is one run of the end-to-end model.
type e2eRun struct {
	t         *testing.T
	seed      uint64
	d         *testkit.Dice
	mix       e2eMix
	sys       *localrun.System
	spend     *spend.Spend
	reg       *idempotency.Registry
	senders   map[string]*providersim.Sender
	payments  []string
	bodies    map[string][]byte // payment webhook bodies
	records   []*e2eRecord
	byHook    map[string]*e2eRecord
	workloads []e2eWorkload
	// sumsHour is the open bucket's start when the run was planned;
	// sumsBuckets the Stripe-metered buckets by key.
	sumsHour    time.Time
	sumsBuckets map[string]*e2eBucket
	// llm are the OpenAI calls of the model.
	llm []*e2eLLMCall
	// periods is the period part's plan (faultmodel_periods_test.go).
	periods *e2ePeriods

	mu       sync.Mutex
	accepted map[string]bool // webhook ID -> answered 2xx at least once
	refused  map[string]providersim.Delivery
}

func runE2E(t *testing.T, seed uint64, mix e2eMix) e2eReport {
	t.Helper()
	start := time.Now()
	// A liveness bound: the run settles in about a minute alone, and
	// make test runs it beside other packages' and this package's
	// parallel tests on two cores.
	limit := max(4*time.Minute, time.Duration(mix.events)*40*time.Millisecond)
	r := &e2eRun{t: t, seed: seed, d: testkit.NewDice(seed), mix: mix, bodies: map[string][]byte{},
		byHook: map[string]*e2eRecord{}, accepted: map[string]bool{}, refused: map[string]providersim.Delivery{}}
	r.plan()
	ds := r.deliveries()
	r.planPeriods(ds)
	r.start()
	r.publishLLM()
	r.send(ds)
	r.sumsLate(limit)
	settled := r.settle(limit)
	r.sys.Sim.Charges.WaitCommits()
	time.Sleep(e2eLookupLag)
	rep := r.report()
	if !settled {
		rep.problems = append(rep.problems, fmt.Sprintf("the system did not settle within %s", limit))
	}
	rep.elapsed = time.Since(start)
	return rep
}

// profile is the provider's idempotency profile, drawn from the seed.
func (r *e2eRun) profile() providersim.Profile {
	return providersim.Profiles[r.d.Hash("profile")%uint64(len(providersim.Profiles))]
}

// plan draws the events: payments, and usage records of which most go to
// the hot workload; it then sets the caps so that some workloads cross
// theirs and others end at or just below it.
func (r *e2eRun) plan() {
	nPay := int(float64(r.mix.events) * r.mix.payments)
	for i := range nPay {
		id := fmt.Sprintf("evt_pay_%05d", i)
		r.payments = append(r.payments, id)
		r.bodies[id] = r.paymentBody(id, i)
	}
	nUse := r.mix.events - nPay
	nSums := int(float64(nUse) * r.mix.sums)
	nLLM := int(float64(nUse) * r.mix.llm)
	nUse -= nSums
	ghosts := nUse / 2000 // deferred: under 0.05% of the webhooks, within the success bar
	refs := []string{"wl-near-0", "wl-near-1", "wl-near-2", "wl-near-3", "wl-cold-0", "wl-cold-1", "wl-cold-2", "wl-cold-3"}
	totals := map[string]int64{}
	for i := range nUse {
		id := fmt.Sprintf("ur_model_%05d", i)
		rec := &e2eRecord{id: id, units: 1 + int64(r.d.Hash("units", id)%20)}
		switch {
		case i < ghosts:
			rec.ref, rec.ghost = fmt.Sprintf("wl-ghost-%d", i), true
		case r.d.Roll("hot", id) < r.mix.hot:
			rec.ref = "wl-hot"
		default:
			rec.ref = refs[r.d.Hash("ref", id)%uint64(len(refs))]
		}
		rec.exportOnly = !rec.ghost && r.d.Roll("export-only", id) < r.mix.exportOnly
		if !rec.ghost {
			totals[rec.ref] += rec.units
		}
		r.records = append(r.records, rec)
	}
	caps := map[string]func(int64) int64{
		"wl-hot":    func(n int64) int64 { return n * 7 / 10 },
		"wl-near-0": func(n int64) int64 { return n - 1 }, // crosses with its last units
		"wl-near-1": func(n int64) int64 { return n },     // ends exactly at its cap: no page
		"wl-near-2": func(n int64) int64 { return n + 3 }, // ends just below
		"wl-near-3": func(n int64) int64 { return n * 9 / 10 },
	}
	for _, id := range append([]string{"wl-hot"}, refs...) {
		capOf, ok := caps[id]
		if !ok {
			capOf = func(n int64) int64 { return 3 * n }
		}
		r.workloads = append(r.workloads, e2eWorkload{id: id, cap: max(capOf(totals[id]), 1), total: totals[id]})
	}
	r.planSums(nSums)
	r.planLLM(nLLM)
}

// paymentBody is the webhook of payment i: some in upper-case currency,
// some declined by the provider (amounts ending in 02).
func (r *e2eRun) paymentBody(id string, i int) []byte {
	amount := int64(1000 + (i%50)*10)
	if r.d.Roll("decline", id) < r.mix.declines {
		amount = 1002
	}
	currency := "usd"
	if i%2 == 1 {
		currency = "USD"
	}
	return fmt.Appendf(nil, `{"id":%q,"type":"payment.requested","data":{"customer":"cus_%s","amount":%d,"currency":%q}}`, id, id, amount, currency)
}

// start brings up the local system with the model's faults, shortens the
// queues' visibility timeouts, makes the provider hostile and creates the
// workloads.
func (r *e2eRun) start() {
	t := r.t
	overrides := maps.Clone(e2eOverrides)
	if len(r.sumsBuckets) > 0 {
		maps.Copy(overrides, e2eSumsOverrides(r.sumsHour.Add(-6*time.Hour)))
	}
	sys, err := localrun.Start(context.Background(), localrun.Config{
		Addr: "127.0.0.1:0", AWSFaults: r.mix.aws, ScheduleEvery: e2eSchedule, MaxConcurrency: e2eConcurrency,
		Lookup: func(name string) (string, bool) { v, ok := overrides[name]; return v, ok },
		Sim: providersim.Config{Profile: r.profile(), LookupLag: e2eLookupLag, NormaliseCurrency: true,
			DeclineErrorBody: r.profile() == providersim.ProfileHonoursKeys, Seed: r.seed},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Close() })
	r.sys = sys
	for _, q := range []string{"payments", "usage"} {
		_, err := sys.AWS.SQS.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{
			QueueUrl: aws.String(sys.AWS.QueueURL(q)), Attributes: map[string]string{"VisibilityTimeout": e2eVisibility}})
		if err != nil {
			t.Fatal(err)
		}
	}
	sys.Sim.Faults.SetFaultFunc(hostile.FaultFunc(r.d, r.mix.providerFaults, hostile.Faults, e2eMaxCommit))
	ledger, err := sys.Ledger()
	if err != nil {
		t.Fatal(err)
	}
	r.spend = ledger.Spend
	store, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: sys.AWS.DynamoDB, Table: sys.AWS.TableName("IdempotencyTable")})
	if err != nil {
		t.Fatal(err)
	}
	if r.reg, err = idempotency.New(idempotency.Config{Store: store, Namespace: "payments"}); err != nil {
		t.Fatal(err)
	}
	for _, w := range r.workloads {
		r.createWorkload(w)
	}
	r.senders = map[string]*providersim.Sender{"payments": r.sender("payments"), "usage": r.sender("usage")}
	if len(r.sumsBuckets) > 0 {
		r.startSums()
		r.startLLM()
	}
}

// createWorkload creates w, as an operator would, through the same faulty
// DynamoDB: an answer lost after the write committed reads back as done.
func (r *e2eRun) createWorkload(w e2eWorkload) {
	ctx := context.Background()
	for attempt := 1; ; attempt++ {
		_, err := r.spend.Workloads.CreateWorkload(ctx, spend.NewWorkload{ID: w.id, Owner: "model", RoutingKey: "rk-model", Cap: w.cap, Periods: periodsOrNone(w.periods)})
		if err == nil {
			return
		}
		if got, gerr := r.spend.Workloads.Get(ctx, w.id); gerr == nil && got.Cap == w.cap {
			return
		}
		if attempt == 5 {
			r.t.Fatalf("create workload %s: %v", w.id, err)
		}
	}
}

// sender posts a source's webhooks as a provider does: signed, and
// retried with backoff until a 2xx.
func (r *e2eRun) sender(source string) *providersim.Sender {
	secret := localrun.DevSecrets[localrun.SecretVar(source)]
	snd, err := providersim.NewSender(providersim.SenderConfig{
		URL: r.sys.URL + "/webhooks/" + source, MaxAttempts: 8, BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
		HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * e2eSenders}}, Now: r.sys.Clock().Now,
		Sign: func(id string, ts time.Time, body []byte) (http.Header, error) {
			return webhook.SignHeaders(webhook.SchemeStandard, []string{secret}, id, ts, body)
		},
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return snd
}

// deliveries lists every webhook the model sends, in a seeded order:
// each event once, a share twice under one ID, a share of usage records
// again under a new ID, and the export-only records' publication.
func (r *e2eRun) deliveries() []e2eDelivery {
	var out []e2eDelivery
	add := func(source, id string, rec *e2eRecord, copy int) {
		out = append(out, e2eDelivery{source: source, id: id, rec: rec, order: r.d.Hash("order", source, id, strconv.Itoa(copy))})
	}
	for _, id := range r.payments {
		add("payments", id, nil, 0)
		if r.d.Roll("twice", id) < r.mix.twice {
			add("payments", id, nil, 1)
		}
	}
	for _, rec := range r.records {
		if rec.exportOnly || (rec.sums != nil && !rec.sums.door) {
			add("", rec.id, rec, 0)
			continue
		}
		rec.webhooks = []string{providersim.UsageEventID(rec.id)}
		if r.d.Roll("resent", rec.id) < r.mix.resent {
			rec.webhooks = append(rec.webhooks, providersim.UsageEventID(rec.id)+"_resent")
		}
		for _, id := range rec.webhooks {
			r.byHook[id] = rec
			add(cmp.Or(rec.source, "usage"), id, rec, 0)
			if r.d.Roll("twice", id) < r.mix.twice {
				add(cmp.Or(rec.source, "usage"), id, rec, 1)
			}
		}
	}
	slices.SortFunc(out, func(a, b e2eDelivery) int { return cmp.Compare(a.order, b.order) })
	return out
}

// send delivers every webhook from e2eSenders connections.
func (r *e2eRun) send(ds []e2eDelivery) {
	work := make(chan e2eDelivery)
	var wg sync.WaitGroup
	for range e2eSenders {
		wg.Go(func() {
			for d := range work {
				r.deliver(d)
			}
		})
	}
	for i, d := range ds {
		r.beforeDelivery(i)
		work <- d
	}
	close(work)
	wg.Wait()
}

// deliver sends one webhook. A usage record reaches the provider's export
// when its first webhook is sent, so that the reconciler races the
// webhook path for it.
func (r *e2eRun) deliver(d e2eDelivery) {
	body := r.bodies[d.id]
	switch {
	case d.rec != nil && d.rec.sums != nil:
		r.meterEvent(d.rec)
		if d.source == "" {
			return
		}
		body = r.ceBody(d.rec)
	case d.rec != nil:
		r.publish(d.rec)
		if d.source == "" {
			return
		}
		body = r.usageBody(d.rec, d.id)
	}
	got := r.senders[d.source].Send(context.Background(), d.id, body)
	r.mu.Lock()
	r.accepted[d.id] = r.accepted[d.id] || got.Delivered
	if !got.Delivered {
		r.refused[d.id] = got
	}
	r.mu.Unlock()
}

// publish adds rec to the provider's export, once.
func (r *e2eRun) publish(rec *e2eRecord) {
	rec.once.Do(func() {
		now := r.sys.Clock().Now()
		rec.at = r.occurred(rec)
		rec.afterClose = r.periods != nil && !now.Before(r.periods.boundary.Add(e2ePeriodGrace))
		// A late record is late to the export too; the model sends the
		// webhooks itself.
		err := r.sys.Sim.Usage.AddUsage(provider.UsageRecord{RecordID: rec.id, WorkloadRef: rec.ref, Units: rec.units, OccurredAt: rec.at},
			providersim.UsageOptions{Webhook: providersim.WebhookDrop, PublishDelay: max(now.Sub(rec.at), 0)})
		if err != nil {
			r.t.Errorf("publish %s: %v", rec.id, err)
		}
	})
}

// usageBody is rec's webhook as the provider sends it, under webhook ID id.
func (r *e2eRun) usageBody(rec *e2eRecord, id string) []byte {
	ev, ok := r.sys.Sim.Usage.UsageEvent(rec.id)
	if !ok {
		r.t.Errorf("no usage event for %s", rec.id)
	}
	ev.ID = id
	b, _ := json.Marshal(ev)
	return b
}

// settle waits until both queues have stayed empty for three checks in a
// row, every workload holds its total and every crossing has paged.
func (r *e2eRun) settle(limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for quiet := 0; time.Now().Before(deadline); time.Sleep(time.Second) {
		if r.depth("payments")+r.depth("usage") > 0 || r.sys.Sim.Charges.InFlight() > 0 {
			quiet = 0
			continue
		}
		if quiet++; quiet >= 3 && r.totalsReached() && r.pagesReached() && r.sumsReached() && r.periodsReached() {
			return true
		}
	}
	return false
}

// depth counts a queue's messages: visible, in flight and delayed.
func (r *e2eRun) depth(queue string) int {
	out, err := r.sys.AWS.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(r.sys.AWS.QueueURL(queue)),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed},
	})
	if err != nil {
		return 1 // unknown: not settled
	}
	n := 0
	for _, v := range out.Attributes {
		k, _ := strconv.Atoi(v)
		n += k
	}
	return n
}

func (r *e2eRun) totalsReached() bool {
	for _, w := range r.workloads {
		if w.periods != nil {
			continue // periodsReached
		}
		got, err := r.spend.Workloads.Get(context.Background(), w.id)
		if err != nil || got.Total != w.total {
			return false
		}
	}
	return true
}

func (r *e2eRun) pagesReached() bool {
	paged := pauseKeys(r.sys.Sim.Pager.Pages())
	for _, w := range r.workloads {
		if w.crosses() && len(paged[w.id]) == 0 {
			return false
		}
	}
	return true
}

// pausePrefix starts the summary of a pause page.
const pausePrefix = "spend cap action=pause workload="

// pauseKeys maps each workload to the dedup keys of its pause pages.
func pauseKeys(pages []pager.Event) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, p := range pages {
		if p.Payload == nil || !strings.HasPrefix(p.Payload.Summary, pausePrefix) {
			continue
		}
		id, _, _ := strings.Cut(strings.TrimPrefix(p.Payload.Summary, pausePrefix), " ")
		if out[id] == nil {
			out[id] = map[string]bool{}
		}
		out[id][p.DedupKey] = true
	}
	return out
}

// periodsOrNone is *p, or the lifetime total for nil.
func periodsOrNone(p *spend.Periods) spend.Periods {
	if p == nil {
		return spend.Periods{}
	}
	return *p
}
