package localrun_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/usagein"
)

// The Stripe part of the end-to-end model: workloads metered with Stripe,
// whose usage reaches the door as CloudEvents on source "meters" and
// Stripe as meter events, while Stripe's face lags, drops buckets for a
// while, adds float noise and answers 429; some webhooks are lost (Stripe
// alone has the usage), some arrive late (after the poll topped it up),
// some usage Stripe never gets, and some Stripe events are cancelled.
const (
	e2eSumsSource  = "stripe-model"
	e2eSumsAccount = "acct_model"
	e2eSumsMeter   = "api"
	e2eSumsEvent   = "api_call"
	e2eSumsScale   = 10 // a value of 1.5 counts 15 units, both ways
	e2eCESource    = "//model/api"
)

// e2eSumsOverrides are the variables the Stripe part adds: the door's
// CloudEvents source and its mapping, and the sums source that reads
// Stripe's face from the closed bucket before the run's, and OpenAI's
// sources.
func e2eSumsOverrides(start time.Time) map[string]string {
	return map[string]string{
		"HOOKLINE_SOURCES": sumsDoorSources,
		"USAGE_MAPPINGS": fmt.Sprintf(`{"meters": {"format": "cloudevents", "usage_types": ["com.example.api"], "meter_name": %q,
		  "unit": "units", "scale": %d, "max_age": "840h"}, "stripe-alerts": {"format": "stripe-alerts"}}`, e2eSumsMeter, e2eSumsScale),
		"SUM_SOURCES": fmt.Sprintf(`{%q: {"provider": "stripe", "usage_source": "meters", "account": %q, "start": %q,
		  "settle": "2h", "lag": "1s", "interval": "1s", "meters": {%q: {"provider_meter": "mtr_model", "aggregation": "sum", "scale": %d}}},
		  %s}`,
			e2eSumsSource, e2eSumsAccount, start.Format(time.RFC3339), e2eSumsMeter, e2eSumsScale, e2eLLMSums(start)),
		"HOOKLINE_METERS_SECRETS":        metersSecret,
		"HOOKLINE_STRIPE_ALERTS_SECRETS": stripeAlertsSecret,
	}
}

// e2eSums are the facts of one record of a Stripe-metered workload.
type e2eSums struct {
	at time.Time
	// door: its webhook is sent with the others; late: only after Stripe
	// showed it; stripe: Stripe gets it; cancel: Stripe cancels it once
	// the poll has seen it.
	door, late, stripe, cancel bool
}

// e2eBucket is what one bucket of a Stripe-metered workload must end at.
type e2eBucket struct {
	key          spend.BucketKey
	w, p         int64 // the door's sum and Stripe's highest sum
	firstW       int64 // the door's sum before the late webhooks
	cancelled    bool
	cancelledSum int64
}

func (b e2eBucket) counted() int64 { return max(b.w, b.p) }

// sumsWorkloads are the Stripe-metered workloads and their caps by total.
var sumsWorkloads = []struct {
	id  string
	cap func(int64) int64
}{
	{"wl-sum-0", func(n int64) int64 { return n - 1 }},      // crosses with its last units
	{"wl-sum-1", func(n int64) int64 { return n }},          // ends exactly at its cap
	{"wl-sum-2", func(n int64) int64 { return n * 8 / 10 }}, // crosses early
	{"wl-sum-3", func(n int64) int64 { return 3 * n }},
}

// planSums draws n records for the Stripe-metered workloads, in the
// closed hour before now and the open one, and their buckets' ends.
func (r *e2eRun) planSums(n int) {
	now := time.Now().UTC()
	r.sumsHour = now.Truncate(time.Hour)
	r.sumsBuckets = map[string]*e2eBucket{}
	for i := range n {
		id := fmt.Sprintf("ur_sums_%05d", i)
		w := sumsWorkloads[r.d.Hash("sums-ref", id)%uint64(len(sumsWorkloads))].id
		s := &e2eSums{door: true, stripe: true}
		switch roll := r.d.Roll("sums-path", id); {
		case roll < 0.08: // the webhook is lost; half of them arrive late
			s.door, s.late = false, r.d.Roll("sums-late", id) < 0.5
		case roll < 0.13: // Stripe never gets it
			s.stripe = false
		}
		s.cancel = s.stripe && r.d.Roll("sums-cancel", id) < 0.04
		s.at = r.sumsHour.Add(-time.Hour).Add(time.Duration(r.d.Hash("sums-at", id)%3600) * time.Second)
		if r.d.Roll("sums-open", id) < 0.5 {
			s.at = r.sumsHour.Add(time.Duration(float64(now.Sub(r.sumsHour)) * r.d.Roll("sums-at-open", id)))
		}
		rec := &e2eRecord{id: id, ref: w, units: 1 + int64(r.d.Hash("units", id)%20), source: "meters", sums: s}
		r.records = append(r.records, rec)
		r.bucketOf(rec).add(rec)
	}
	totals := map[string]int64{}
	for _, b := range r.sumsBuckets {
		totals[b.key.WorkloadID] += b.counted()
	}
	for _, w := range sumsWorkloads {
		r.workloads = append(r.workloads, e2eWorkload{id: w.id, cap: max(w.cap(totals[w.id]), 1), total: totals[w.id]})
	}
}

// bucketOf is the bucket rec falls in, as Stripe buckets it: its second,
// in UTC, truncated to the hour.
func (r *e2eRun) bucketOf(rec *e2eRecord) *e2eBucket {
	k := spend.BucketKey{WorkloadID: rec.ref, Source: e2eSumsSource, Account: e2eSumsAccount, Mode: "test", Meter: e2eSumsMeter,
		Start: rec.sums.at.UTC().Truncate(time.Second).Truncate(time.Hour)}
	b, ok := r.sumsBuckets[k.String()]
	if !ok {
		b = &e2eBucket{key: k}
		r.sumsBuckets[k.String()] = b
	}
	return b
}

func (b *e2eBucket) add(rec *e2eRecord) {
	s := rec.sums
	if s.door || s.late {
		b.w += rec.units
	}
	if s.door {
		b.firstW += rec.units
	}
	if s.stripe {
		b.p += rec.units
	}
	if s.cancel {
		b.cancelled = true
		b.cancelledSum += rec.units
	}
}

// startSums creates Stripe's meter with its faults and the workloads'
// customers.
func (r *e2eRun) startSums() {
	sim := r.sys.Sim
	if _, err := sim.AddMeter(providersim.BillingMeter{ID: "mtr_model", EventName: e2eSumsEvent, Aggregation: "sum"}); err != nil {
		r.t.Fatal(err)
	}
	sim.SetMeterLag("mtr_model", 500*time.Millisecond)
	sim.SetMeterFloatNoise(true)
	sim.SetMeterRateLimit(providersim.MeterSummariesEndpoint, 20)
	sim.RateLimitMeterCalls(providersim.MeterSummariesEndpoint, 5)
	if err := sim.AddMeterGap(providersim.MeterGap{Share: 0.3, Until: time.Now().Add(5 * time.Second)}); err != nil {
		r.t.Fatal(err)
	}
	for _, w := range sumsWorkloads {
		r.alias(w.id, customerOf(w.id))
	}
	r.senders["meters"] = r.ceSender()
}

// alias gives workload id the provider reference ref, as an operator
// does, through the faulty local AWS.
func (r *e2eRun) alias(id, ref string) {
	r.withRetries("alias "+id, func(ctx context.Context) error {
		err := r.spend.Workloads.AddAlias(ctx, ref, id)
		if err != nil {
			if got, rerr := r.spend.Workloads.Resolve(ctx, ref); rerr == nil && got.ID == id {
				return nil // the answer was lost after the write
			}
		}
		return err
	})
}

// customerOf is a Stripe-metered workload's customer at Stripe.
func customerOf(workload string) string { return "cus_" + strings.TrimPrefix(workload, "wl-") }

// withRetries runs an operator's call through the faulty local AWS.
func (r *e2eRun) withRetries(what string, call func(context.Context) error) {
	var err error
	for range 5 {
		if err = call(context.Background()); err == nil {
			return
		}
	}
	r.t.Fatalf("%s: %v", what, err)
}

// ceSender posts CloudEvents as a producer's Standard Webhooks library
// does, retried with backoff until a 2xx.
func (r *e2eRun) ceSender() *providersim.Sender {
	snd, err := providersim.NewSender(providersim.SenderConfig{
		URL: r.sys.URL + "/webhooks/meters", MaxAttempts: 8, BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
		Sign: providersim.StandardSigner(metersSecret, "application/cloudevents+json", false), Now: r.sys.Clock().Now,
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return snd
}

// ceBody is rec's CloudEvent.
func (r *e2eRun) ceBody(rec *e2eRecord) []byte {
	ev := providersim.UsageCloudEvent{Source: e2eCESource, ID: rec.id, Type: "com.example.api", Subject: rec.ref,
		Time: rec.sums.at, Value: fmt.Sprintf("%d.%d", rec.units/e2eSumsScale, rec.units%e2eSumsScale)}
	body, _, err := providersim.CloudEventsBody([]providersim.UsageCloudEvent{ev}, false)
	if err != nil {
		r.t.Error(err)
	}
	return body
}

// intakeID is the intake identity of webhook id of rec: a CloudEvent's
// is its ledger key, whichever delivery carried it.
func (r *e2eRun) intakeID(rec *e2eRecord, id string) string {
	if rec.sums == nil {
		return id
	}
	return usagein.CloudEventKey("meters", e2eCESource, rec.id)
}

// meterEvent records rec at Stripe, once.
func (r *e2eRun) meterEvent(rec *e2eRecord) {
	rec.once.Do(func() {
		if !rec.sums.stripe {
			return
		}
		_, err := r.sys.Sim.RecordMeterEvent(providersim.MeterEvent{EventName: e2eSumsEvent, Customer: customerOf(rec.ref),
			Value: fmt.Sprintf("%d.%d", rec.units/e2eSumsScale, rec.units%e2eSumsScale), Identifier: rec.id, Timestamp: rec.sums.at})
		if err != nil {
			r.t.Errorf("meter event %s: %v", rec.id, err)
		}
	})
}

// sumsLate waits until the poll has seen Stripe's sum of every bucket and
// the door every webhook sent, then cancels the events to cancel and
// sends the late webhooks: each lands after its usage was topped up.
func (r *e2eRun) sumsLate(limit time.Duration) {
	if len(r.sumsBuckets) == 0 {
		return
	}
	if !r.waitFor(limit, func(b spend.Bucket, want *e2eBucket) bool { return b.PStar == want.p && b.W == want.firstW }) {
		r.t.Errorf("the poll did not show every bucket's sum within %s", limit)
		return
	}
	r.reviseLLMDown()
	var late []e2eDelivery
	for _, rec := range r.records {
		if rec.sums == nil {
			continue
		}
		if rec.sums.cancel {
			if err := r.sys.Sim.CancelMeterEvent(e2eSumsEvent, rec.id); err != nil {
				r.t.Errorf("cancel %s: %v", rec.id, err)
			}
		}
		if rec.sums.late {
			id := "late_" + rec.id
			rec.webhooks = append(rec.webhooks, id)
			late = append(late, e2eDelivery{source: "meters", id: id, rec: rec})
		}
	}
	r.send(late)
}

// waitFor waits until every planned bucket's head satisfies ok.
func (r *e2eRun) waitFor(limit time.Duration, ok func(spend.Bucket, *e2eBucket) bool) bool {
	deadline := time.Now().Add(limit)
	for ; time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if r.bucketsMatch(ok) {
			return true
		}
	}
	return false
}

func (r *e2eRun) bucketsMatch(ok func(spend.Bucket, *e2eBucket) bool) bool {
	workloads := map[string]bool{}
	for _, b := range r.sumsBuckets {
		workloads[b.key.WorkloadID] = true
	}
	for _, id := range slices.Sorted(maps.Keys(workloads)) {
		heads, err := r.spend.Explainer.Buckets(context.Background(), id, 0)
		if err != nil {
			return false
		}
		byKey := map[string]spend.Bucket{}
		for _, h := range heads {
			byKey[h.BucketKey.String()] = h
		}
		for k, want := range r.sumsBuckets {
			if want.key.WorkloadID != id {
				continue
			}
			if h, found := byKey[k]; !found || !ok(h, want) {
				return false
			}
		}
	}
	return true
}

// sumsReached: every bucket with a cancellation has recorded a downward
// revision, and its page has reached the pager. The page is committed
// with the revision but sent when the reconciler's run flushes its
// outbox, after it has read every source: with OpenAI's pages of one
// bucket at 5 calls a second, that can be many seconds after the head
// shows the revision.
func (r *e2eRun) sumsReached() bool {
	downs := r.downPages()
	return r.bucketsMatch(func(b spend.Bucket, want *e2eBucket) bool {
		return !want.cancelled || (b.Downs > 0 && downs[want.key.String()] > 0)
	})
}

// downPages counts the downward revision pages the pager got, by bucket.
func (r *e2eRun) downPages() map[string]int {
	downs := map[string]int{}
	for _, p := range r.sys.Sim.Pager.Pages() {
		if key, ok := strings.CutPrefix(p.DedupKey, "bucket-down#"); ok {
			downs[key[:strings.LastIndex(key, "#")]]++
		}
	}
	return downs
}

// checkSums checks every bucket's head against the rule and the downward
// revision pages: each names a bucket with a cancellation, and each such
// bucket has one at least.
func (r *e2eRun) checkSums(rep *e2eReport) {
	if len(r.sumsBuckets) == 0 {
		return
	}
	rep.sums.buckets = len(r.sumsBuckets)
	r.bucketsMatch(func(b spend.Bucket, want *e2eBucket) bool {
		if b.W != want.w || b.PStar != want.p || b.Counted != want.counted() {
			rep.problems = append(rep.problems, fmt.Sprintf("bucket %s: W=%d P*=%d counted=%d, want W=%d P*=%d counted=%d",
				want.key, b.W, b.PStar, b.Counted, want.w, want.p, want.counted()))
		}
		if want.p > want.firstW {
			rep.sums.toppedUp++
		}
		return true
	})
	downs := r.downPages()
	for _, k := range slices.Sorted(maps.Keys(downs)) {
		if b, found := r.sumsBuckets[k]; !found || !b.cancelled {
			rep.problems = append(rep.problems, fmt.Sprintf("a downward revision page for %s, where nothing was cancelled", k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(r.sumsBuckets)) {
		if b := r.sumsBuckets[k]; b.cancelled {
			rep.sums.cancelled++
			if downs[k] == 0 {
				rep.problems = append(rep.problems, fmt.Sprintf("bucket %s: %d units cancelled at Stripe and no page", k, b.cancelledSum))
			}
		}
	}
	rep.sums.downPages = len(downs)
	rep.sums.llmCalls = len(r.llm)
	rep.sums.rateLimited = r.sys.Sim.MeterCalls().RateLimited[providersim.MeterSummariesEndpoint] + r.sys.Sim.OpenAICalls().RateLimited
	for _, rec := range r.records {
		if rec.sums != nil && rec.sums.late {
			rep.sums.late++
		}
	}
}

// sumsOutcome is what the Stripe part measured.
type sumsOutcome struct{ records, llmCalls, buckets, toppedUp, cancelled, downPages, late, rateLimited int }
