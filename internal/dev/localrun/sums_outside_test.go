package localrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/testkit"
)

// The three providers' sums against the running system, driven from
// outside: a seeded usage history reaches the door as CloudEvents and the
// simulator's Stripe, OpenAI and OpenMeter faces as each provider's API
// serves it, under the faces' one fault vocabulary.

// outSeedVar replays a run of TestSumsOfThreeProvidersFromOutside.
const outSeedVar = "HOOKLINE_SUMS_OUTSIDE_SEED"

// The door's sources: Stripe's CloudEvents (scale 1), and the two the
// producer tees to OpenMeter, tokens at scale 1000 and GPU hours at scale
// 3600 (seconds), which the OpenMeter export reads each with its own
// mapping (USAGE_EXPORT_SOURCE=tokens,gpu).
const (
	outDoorSources = `[{"name":"payments","scheme":"standard-webhooks","secret_env":"HOOKLINE_PAYMENTS_SECRETS","queue":"payments"},` +
		`{"name":"usage","scheme":"standard-webhooks","secret_env":"HOOKLINE_USAGE_SECRETS","queue":"usage"},` +
		`{"name":"meters","scheme":"standard-webhooks","secret_env":"HOOKLINE_METERS_SECRETS","queue":"usage"},` +
		`{"name":"tokens","scheme":"standard-webhooks","secret_env":"HOOKLINE_TOKENS_SECRETS","queue":"usage"},` +
		`{"name":"gpu","scheme":"standard-webhooks","secret_env":"HOOKLINE_GPU_SECRETS","queue":"usage"}]`
	outMappings = `{"meters": {"format": "cloudevents", "usage_types": ["com.example.api"], "meter_name": "api", "unit": "units", "max_age": "840h"},
	  "tokens": {"format": "cloudevents", "usage_types": ["com.example.tokens"], "scale": 1000, "unit": "units", "max_age": "840h"},
	  "gpu": {"format": "cloudevents", "usage_types": ["com.example.gpu_hours"], "scale": 3600, "unit": "units", "max_age": "840h"}}`
	outCESource = "//outside/app"
)

// outSumSources reads each face hourly from start, settling a bucket two
// hours after it ends.
func outSumSources(start time.Time) string {
	common := fmt.Sprintf(`"start": %q, "settle": "2h", "lag": "1s", "interval": "1s"`, start.Format(time.RFC3339))
	return fmt.Sprintf(`{"st": {"provider": "stripe", "usage_source": "meters", "account": "acct_out", %[1]s,
	    "meters": {"api": {"provider_meter": "mtr_out", "aggregation": "sum"}}},
	  "oa": {"provider": "openai", "usage_source": "llm", "account": "org_out", "livemode": true, %[1]s,
	    "meters": {"tokens": {"endpoint": "completions", "fields": {"input_tokens": 1, "output_tokens": 4}}}},
	  "om-tok": {"provider": "openmeter", "usage_source": "tokens", "account": "ns_out", %[1]s,
	    "meters": {"com.example.tokens": {"provider_meter": "tokens_total", "aggregation": "sum", "scale": 1000}}},
	  "om-gpu": {"provider": "openmeter", "usage_source": "gpu", "account": "ns_out", %[1]s,
	    "meters": {"com.example.gpu_hours": {"provider_meter": "gpu_hours", "aggregation": "sum", "scale": 3600}}}}`, common)
}

// outRecord is one unit of the seeded history: a Stripe meter event, an
// OpenAI call or an OpenMeter event, and what the door gets of it.
type outRecord struct {
	id, source, meter, workload string // source and meter: the ledger's
	at                          time.Time
	units                       int64  // what it counts, scaled
	value                       string // data.value, and the provider's value
	in, out, up                 int64  // an OpenAI call's tokens, and an upward revision of its input
	door, prov                  bool   // the door gets it; the provider has it
	late                        bool   // the door gets it only after its bucket settled
	cancel                      bool   // the provider revises it down once the poll saw its bucket
	cancelUnits                 int64  // by how much: all of a Stripe event, an OpenAI call's input tokens
	batch                       bool   // the door gets it in a batch with the next one
	copies                      int    // deliveries of its webhook: 1; 2 retried; 3 concurrent copies
	svix                        bool   // under Svix's header names
}

// outBucket is what one bucket must end at.
type outBucket struct {
	workload, source, meter string
	start                   time.Time
	wSettle, wFinal         int64 // the door's sum before and after the late webhooks
	pStar, pLatest          int64 // the provider's highest and last sums
	union                   int64 // OpenMeter: the records either path holds, each once
	cancelled               bool
}

func (b *outBucket) key() string {
	return b.workload + "/" + b.source + "/" + b.meter + "@" + b.start.UTC().Format(time.RFC3339)
}

// openMeter: its buckets count records, not the larger of two sums.
func (b *outBucket) openMeter() bool { return strings.HasPrefix(b.source, "om-") }

// counted is the rule: max(W, P*) per bucket, the records' sum for
// OpenMeter.
func (b *outBucket) counted() int64 {
	if b.openMeter() {
		return b.union
	}
	return max(b.wFinal, b.pStar)
}

// gapAtSettle: the bucket's paths are apart when it settles, so it is
// paged once. OpenAI's source has no webhooks to disagree with.
func (b *outBucket) gapAtSettle() bool {
	switch {
	case b.source == "oa":
		return false
	case b.openMeter():
		return b.union != b.pLatest
	}
	return b.wSettle != b.pLatest
}

// outPlan is the seeded history and what it must end at.
type outPlan struct {
	hour      time.Time // the clock's hour; records lie in the two before it and its first minutes
	records   []*outRecord
	buckets   map[string]*outBucket
	caps      map[string]int64
	totals    map[string]int64
	workloads map[string][]string // by provider: its workloads
}

// outRefs are a workload's references: Stripe customer, OpenAI project,
// OpenMeter subject.
func outRef(source, workload string) string {
	switch {
	case source == "st":
		return "cus_" + workload
	case source == "oa":
		return "proj_" + workload
	}
	return "subj_" + workload
}

// planOutside draws the history from seed.
func planOutside(seed uint64, hour time.Time) *outPlan {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	p := &outPlan{hour: hour, buckets: map[string]*outBucket{}, caps: map[string]int64{}, totals: map[string]int64{},
		workloads: map[string][]string{"st": {"wl-st-0", "wl-st-1", "wl-st-2"}, "oa": {"wl-oa-0", "wl-oa-1"}, "om": {"wl-om-0", "wl-om-1"}}}
	at := func() time.Time {
		h := hour.Add(time.Duration(r.IntN(3)-2) * time.Hour)
		span := time.Hour
		if h.Equal(hour) {
			span = 8 * time.Minute // the open hour, before the clock's minute 10
		}
		return h.Add(time.Duration(r.Int64N(int64(span/time.Second))) * time.Second)
	}
	door := func(rec *outRecord) {
		rec.copies, rec.svix, rec.batch = 1+r.IntN(3), r.IntN(2) == 0, r.IntN(4) == 0
		rec.late = rec.prov && rec.door && r.IntN(6) == 0
	}
	for i := range 24 { // Stripe meter events
		rec := &outRecord{id: fmt.Sprintf("st-%02d", i), source: "st", meter: "api", workload: p.workloads["st"][r.IntN(3)], at: at(),
			units: 1 + r.Int64N(20)}
		rec.value = strconv.FormatInt(rec.units, 10)
		rec.door, rec.prov = r.IntN(5) > 0, r.IntN(7) > 0
		rec.door = rec.door || !rec.prov
		rec.cancel, rec.cancelUnits = rec.prov && r.IntN(6) == 0, rec.units
		door(rec)
		p.records = append(p.records, rec)
	}
	for i := range 12 { // OpenAI calls: polled only
		rec := &outRecord{id: fmt.Sprintf("oa-%02d", i), source: "oa", meter: "tokens", workload: p.workloads["oa"][r.IntN(2)], at: at(),
			in: 1 + r.Int64N(500), out: r.Int64N(200), prov: true}
		if r.IntN(8) == 0 {
			rec.up = 1 + r.Int64N(100)
		}
		rec.units = rec.in + 4*rec.out + rec.up
		rec.cancel, rec.cancelUnits = r.IntN(6) == 0, rec.in+rec.up
		p.records = append(p.records, rec)
	}
	for i := range 20 { // OpenMeter events: tokens and GPU hours
		rec := &outRecord{id: fmt.Sprintf("om-%02d", i), workload: p.workloads["om"][r.IntN(2)], at: at()}
		if r.IntN(3) == 0 {
			quarters := 1 + r.Int64N(8)
			rec.source, rec.meter, rec.units = "om-gpu", "com.example.gpu_hours", quarters*900
			rec.value = strconv.FormatFloat(float64(quarters)/4, 'f', -1, 64)
		} else {
			rec.source, rec.meter, rec.units = "om-tok", "com.example.tokens", 1+r.Int64N(50_000)
			rec.value = fmt.Sprintf("%d.%03d", rec.units/1000, rec.units%1000)
		}
		switch n := r.IntN(20); {
		case n < 3:
			rec.prov = true // the door lost it: the export finds it
		case n < 4:
			rec.door = true // OpenMeter lost it
		default:
			rec.door, rec.prov = true, true
		}
		door(rec)
		p.records = append(p.records, rec)
	}
	for _, rec := range p.records {
		p.add(rec)
	}
	for _, b := range p.buckets {
		p.totals[b.workload] += b.counted()
	}
	for _, ids := range p.workloads {
		for i, id := range ids {
			p.caps[id] = 10*p.totals[id] + 1000
			if i == 0 && p.totals[id] > 1 { // the first of each provider crosses its cap
				p.caps[id] = p.totals[id] * 8 / 10
			}
		}
	}
	return p
}

// add counts rec in its bucket; a bucket takes at most one cancellation,
// so that each downward revision is one page whenever the poll runs.
func (p *outPlan) add(rec *outRecord) {
	b := &outBucket{workload: rec.workload, source: rec.source, meter: rec.meter, start: rec.at.Truncate(time.Hour)}
	if got, ok := p.buckets[b.key()]; ok {
		b = got
	}
	p.buckets[b.key()] = b
	if rec.cancel && b.cancelled {
		rec.cancel = false
	}
	if rec.door {
		b.wFinal += rec.units
		if !rec.late {
			b.wSettle += rec.units
		}
	}
	if rec.prov {
		b.pStar += rec.units
		b.pLatest += rec.units
		if rec.cancel {
			b.pLatest -= rec.cancelUnits
		}
	}
	if rec.door || rec.prov {
		b.union += rec.units
	}
	b.cancelled = b.cancelled || rec.cancel
}

// outDrill is the running system under the plan.
type outDrill struct {
	t     *testing.T
	sys   *localrun.System
	clock *localrun.Clock
	plan  *outPlan
	mu    sync.Mutex
	snd   map[string]*providersim.Sender // by door source and header names
}

// admin calls a face's administration at base+path, failing on any
// answer but 2xx.
func (d *outDrill) admin(base, path string, body any) {
	d.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		d.t.Fatal(err)
	}
	resp, err := http.Post(base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		d.t.Fatalf("POST %s %s: %d %s", path, b, resp.StatusCode, got)
	}
}

func (d *outDrill) stripe(path string, body any) {
	d.admin(d.sys.Sim.URL(), providersim.MeterSimPath+path, body)
}
func (d *outDrill) openai(path string, body any) {
	d.admin(d.sys.Sim.URL(), providersim.OpenAISimPath+path, body)
}
func (d *outDrill) openMeter(path string, body any) {
	d.admin(d.sys.OpenMeter.URL(), providersim.OpenMeterSimPath+path, body)
}

// faults programs each face's 429s and 5xx with Retry-After, short
// pages, lag and gaps that close a few seconds on.
func (d *outDrill) faults() {
	until := d.clock.Now().Add(5 * time.Second)
	d.stripe("/fail", map[string]any{"endpoint": "event_summaries", "next": 2, "retry_after": "1s"})
	d.stripe("/pagesize", map[string]int{"buckets": 1})
	d.stripe("/lag", map[string]string{"lag": "500ms"})
	d.stripe("/noise", map[string]bool{"on": true})
	d.stripe("/gaps", providersim.MeterGap{Share: 0.3, Until: until})
	d.openai("/fail", map[string]any{"next": 2, "retry_after": "700ms"})
	d.openai("/pagesize", map[string]int{"buckets": 1})
	d.openai("/lag", map[string]string{"lag": "500ms"})
	d.openai("/gaps", providersim.OpenAIGap{Share: 0.3, Until: until})
	d.openMeter("/fail", map[string]any{"endpoint": "meter_query", "next": 2, "retry_after": "1s"})
	d.openMeter("/fail", map[string]any{"endpoint": "events", "next": 1, "status": 503, "retry_after": "1s"})
}

// moreFaults programs a 5xx with Retry-After on each face, for the
// passes after the cancellations.
func (d *outDrill) moreFaults() {
	d.stripe("/fail", map[string]any{"endpoint": "event_summaries", "next": 1, "status": 503, "retry_after": "1s"})
	d.openai("/fail", map[string]any{"next": 1, "status": 502, "retry_after": "800ms"})
	d.openMeter("/fail", map[string]any{"endpoint": "meter_query", "next": 1, "status": 503, "retry_after": "1s"})
}

// publish gives each provider what it has of the history.
func (d *outDrill) publish() {
	for _, rec := range d.plan.records {
		if !rec.prov {
			continue
		}
		ref := outRef(rec.source, rec.workload)
		switch rec.source {
		case "st":
			d.stripe("/events", providersim.MeterEvent{EventName: "api_call", Customer: ref, Value: rec.value, Identifier: rec.id, Timestamp: rec.at})
		case "oa":
			d.openai("/usage", providersim.OpenAIUsage{Endpoint: "completions", Project: ref, At: rec.at,
				Fields: map[string]int64{"input_tokens": rec.in, "output_tokens": rec.out}})
			if rec.up > 0 {
				d.openai("/revise", map[string]any{"endpoint": "completions", "project": ref, "at": rec.at, "field": "input_tokens", "by": rec.up})
			}
		default:
			d.openMeter("/events", map[string]any{"event": d.cloudEvent(rec), "lag": "1s"})
		}
	}
}

// cloudEvent is rec as its producer sends it, to the door and to
// OpenMeter.
func (d *outDrill) cloudEvent(rec *outRecord) providersim.UsageCloudEvent {
	typ := map[string]string{"st": "com.example.api", "om-tok": "com.example.tokens", "om-gpu": "com.example.gpu_hours"}[rec.source]
	return providersim.UsageCloudEvent{Source: outCESource, ID: rec.id, Type: typ, Subject: outRef(rec.source, rec.workload),
		Time: rec.at, Value: rec.value}
}

// doorSource is the door's source of rec.
func doorSource(rec *outRecord) string {
	return map[string]string{"st": "meters", "om-tok": "tokens", "om-gpu": "gpu"}[rec.source]
}

// sender posts to source as a producer's Standard Webhooks library does
// (or under Svix's names), retrying until a 2xx.
func (d *outDrill) sender(source string, contentType string, svix bool) *providersim.Sender {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := fmt.Sprint(source, contentType, svix)
	if s, ok := d.snd[k]; ok {
		return s
	}
	s, err := providersim.NewSender(providersim.SenderConfig{URL: d.sys.URL + "/webhooks/" + source, MaxAttempts: 10,
		BaseBackoff: 50 * time.Millisecond, MaxBackoff: time.Second, Now: d.clock.Now,
		Sign: providersim.StandardSigner(metersSecret, contentType, svix)})
	if err != nil {
		d.t.Fatal(err)
	}
	d.snd[k] = s
	return s
}

// sendDoor delivers the door's records (late ones or the others): one
// alone or two in a batch, each delivery once, retried, or as concurrent
// copies.
func (d *outDrill) sendDoor(late bool) {
	var recs []*outRecord
	for _, rec := range d.plan.records {
		if rec.door && rec.late == late {
			recs = append(recs, rec)
		}
	}
	var groups [][]*outRecord
	for i := 0; i < len(recs); i++ {
		group := []*outRecord{recs[i]}
		if recs[i].batch && i+1 < len(recs) && doorSource(recs[i+1]) == doorSource(recs[i]) {
			group = append(group, recs[i+1])
			i++
		}
		groups = append(groups, group)
	}
	// Producers send at once: a concurrent copy waits out the first
	// delivery's lease, and the others need not wait behind it.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, group := range groups {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			d.deliver(group)
		})
	}
	wg.Wait()
}

// deliver sends one door delivery of group's records: once, twice, or as
// concurrent copies.
func (d *outDrill) deliver(group []*outRecord) {
	evs := make([]providersim.UsageCloudEvent, len(group))
	for j, rec := range group {
		evs[j] = d.cloudEvent(rec)
	}
	body, contentType, err := providersim.CloudEventsBody(evs, len(group) > 1)
	if err != nil {
		d.t.Error(err)
		return
	}
	first := group[0]
	snd := d.sender(doorSource(first), contentType, first.svix)
	msg := "msg_" + first.id
	deliver := func() {
		if got := snd.Send(context.Background(), msg, body); !got.Delivered {
			d.t.Errorf("door %s: %v", msg, got.Err)
		}
	}
	switch first.copies {
	case 3: // concurrent copies, as a sender that timed out sends again
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(deliver)
		}
		wg.Wait()
	default: // once, or again after a lost answer
		for range first.copies {
			deliver()
		}
	}
}

// heads are every planned workload's bucket heads, by outBucket key.
func (d *outDrill) heads() map[string]spend.Bucket {
	d.t.Helper()
	ledger, err := d.sys.Ledger()
	if err != nil {
		d.t.Fatal(err)
	}
	out := map[string]spend.Bucket{}
	for _, ids := range d.plan.workloads {
		for _, id := range ids {
			bs, err := ledger.Spend.Explainer.Buckets(context.Background(), id, 0)
			if err != nil {
				d.t.Fatal(err)
			}
			for _, b := range bs {
				k := (&outBucket{workload: b.WorkloadID, source: b.Source, meter: b.Meter, start: b.Start}).key()
				out[k] = b
			}
		}
	}
	return out
}

// waitBuckets waits until every planned bucket's head satisfies ok, and
// reports those that do not when the bound runs out.
func (d *outDrill) waitBuckets(what string, ok func(spend.Bucket, *outBucket) bool) {
	d.t.Helper()
	var bad []string
	deadline := time.Now().Add(settleBound)
	for {
		heads := d.heads()
		bad = bad[:0]
		for _, k := range slices.Sorted(maps.Keys(d.plan.buckets)) {
			want := d.plan.buckets[k]
			if h, found := heads[k]; !found || !ok(h, want) {
				bad = append(bad, fmt.Sprintf("%s: head %+v, want %+v", k, h, *want))
			}
		}
		if len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for k, h := range heads {
				if d.plan.buckets[k] == nil {
					bad = append(bad, fmt.Sprintf("%s: unplanned head %+v", k, h))
				}
			}
			d.t.Fatalf("%s: not within %s:\n%s", what, settleBound, strings.Join(bad, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// cancel revises away at the provider each record marked so.
func (d *outDrill) cancel() {
	for _, rec := range d.plan.records {
		if !rec.cancel {
			continue
		}
		if rec.source == "st" {
			d.stripe("/cancel", map[string]string{"event_name": "api_call", "identifier": rec.id})
			continue
		}
		d.openai("/revise", map[string]any{"endpoint": "completions", "project": outRef(rec.source, rec.workload), "at": rec.at,
			"field": "input_tokens", "by": -rec.cancelUnits})
	}
}

// TestSumsOfThreeProvidersFromOutside drives `hookline run` from outside
// with a seeded usage history: CloudEvents through the door (structured
// and batch, Svix names, retries, concurrent copies, late webhooks), and
// Stripe's meters, OpenAI's usage and OpenMeter (tokens beside GPU hours,
// two scales) as their APIs serve them, lagging, with gaps, short pages,
// revisions and 429s and 5xx with Retry-After. Every total is max(W, P*)
// per bucket (the records' sum for OpenMeter); every settle, downward and
// cap page comes once, and none for a bucket that agrees; and no face
// saw a call before the wait it named ran out.
func TestSumsOfThreeProvidersFromOutside(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()%1_000_000 + 1
	if v := os.Getenv(outSeedVar); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", outSeedVar, v, err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay with %s=%d", outSeedVar, seed)
		}
	})
	// The run's clock stands ten minutes into an hour, so that no bucket
	// settles before the drill moves it.
	clock := &localrun.Clock{}
	wall := time.Now().UTC()
	hour := wall.Truncate(time.Hour).Add(time.Hour)
	clock.Advance(hour.Add(10 * time.Minute).Sub(wall))
	plan := planOutside(seed, hour)
	var opts []drillOption
	for prov, ids := range plan.workloads {
		for _, id := range ids {
			opts = append(opts, workload(spend.NewWorkload{ID: id, Cap: plan.caps[id]}, outRef(prov, id)))
		}
	}
	sys, ledger := startDrill(t, append(opts, everySecond(), onClock(clock), env(map[string]string{
		"HOOKLINE_SOURCES": outDoorSources, "USAGE_MAPPINGS": outMappings, "SUM_SOURCES": outSumSources(hour.Add(-3 * time.Hour)),
		"USAGE_EXPORT": "openmeter", "USAGE_EXPORT_SOURCE": "tokens,gpu",
		"HOOKLINE_METERS_SECRETS": metersSecret, "HOOKLINE_TOKENS_SECRETS": metersSecret, "HOOKLINE_GPU_SECRETS": metersSecret}))...)
	d := &outDrill{t: t, sys: sys, clock: clock, plan: plan, snd: map[string]*providersim.Sender{}}
	t.Logf("seed %d: %d records, %d buckets", seed, len(plan.records), len(plan.buckets))

	// Given the providers' meters and faults,
	d.stripe("", providersim.BillingMeter{ID: "mtr_out", EventName: "api_call", Aggregation: "sum"})
	d.openMeter("/meters", providersim.OpenMeterMeter{Slug: "tokens_total", EventType: "com.example.tokens", Aggregation: "SUM"})
	d.openMeter("/meters", providersim.OpenMeterMeter{Slug: "gpu_hours", EventType: "com.example.gpu_hours", Aggregation: "SUM"})
	d.faults()
	// when the history reaches the providers and the door,
	d.publish()
	d.sendDoor(false)
	// then the poll sees every bucket's sum, and the door every webhook.
	d.waitBuckets("every sum seen", func(h spend.Bucket, b *outBucket) bool {
		if b.openMeter() {
			return h.W == b.union && h.PStar == b.pStar
		}
		return h.W == b.wSettle && h.PStar == b.pStar
	})

	// When the providers revise some buckets down, and fail again,
	d.moreFaults()
	d.cancel()
	// then each revision is recorded, and changes no count.
	d.waitBuckets("the downward revisions", func(h spend.Bucket, b *outBucket) bool {
		return h.PLatest == b.pLatest && h.Downs == map[bool]int64{true: 1}[b.cancelled] && h.Counted == max(h.W, b.pStar)
	})

	// When the clock passes every settle horizon,
	clock.Advance(3 * time.Hour)
	d.waitBuckets("every bucket settled", func(h spend.Bucket, _ *outBucket) bool { return h.Settled })
	// and the late webhooks come,
	d.sendDoor(true)
	d.waitBuckets("the late webhooks", func(h spend.Bucket, b *outBucket) bool {
		if b.openMeter() {
			return h.Counted == b.union
		}
		return h.W == b.wFinal && h.Counted == b.counted()
	})
	waitRuns(t, sys, 2)

	// Then every total is the rule's,
	for _, ids := range plan.workloads {
		for _, id := range ids {
			w, err := ledger.Spend.Workloads.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if w.Total != plan.totals[id] {
				t.Errorf("%s: total %d, want %d", id, w.Total, plan.totals[id])
			}
		}
	}
	// each page came once, and none for a bucket that agrees,
	d.checkPages()
	// and no provider was called before the wait it named ran out.
	d.checkWaits()
}

// checkPages checks the settle, downward and cap pages against the plan.
func (d *outDrill) checkPages() {
	t := d.t
	wantGaps, wantDowns := map[string]bool{}, map[string]bool{}
	for k, b := range d.plan.buckets {
		if b.gapAtSettle() {
			wantGaps[k] = true
		}
		if b.cancelled {
			wantDowns[k] = true
		}
	}
	var pauses []string
	for _, ids := range d.plan.workloads {
		for _, id := range ids {
			if d.plan.totals[id] > d.plan.caps[id] {
				pauses = append(pauses, id)
			}
		}
	}
	var gaps, downs map[string]int
	var paused map[string]map[string]bool
	var others []string
	count := func() bool {
		gaps, downs, others = map[string]int{}, map[string]int{}, nil
		seen := map[string]bool{}
		for _, p := range d.sys.Sim.Pager.Pages() {
			if p.EventAction != pager.ActionTrigger || p.Payload == nil || seen[p.DedupKey] {
				continue
			}
			seen[p.DedupKey] = true
			switch p.Payload.Class {
			case "usage_bucket_gap":
				for _, line := range pageLines(p) {
					gaps[bucketOfLine(line)]++
				}
			case "usage_bucket_down":
				downs[bucketOfLine(p.Payload.Summary)]++
			case "spend_cap":
			default:
				others = append(others, p.DedupKey+": "+p.Payload.Summary)
			}
		}
		paused = pauseKeys(d.sys.Sim.Pager.Pages())
		for _, id := range pauses {
			if len(paused[id]) == 0 {
				return false
			}
		}
		return len(gaps) >= len(wantGaps) && len(downs) >= len(wantDowns)
	}
	testkit.Eventually(t, settleBound, "the pages", count)
	waitRuns(t, d.sys, 1) // a page sent twice would have come by now
	count()
	for k := range wantGaps {
		if gaps[k] != 1 {
			t.Errorf("settle pages of %s: %d, want 1 (%+v)", k, gaps[k], *d.plan.buckets[k])
		}
	}
	for k, n := range gaps {
		if !wantGaps[k] {
			t.Errorf("settle page of %s, whose paths agree, %d times (%+v)", k, n, d.plan.buckets[k])
		}
	}
	for k := range wantDowns {
		if downs[k] != 1 {
			t.Errorf("downward pages of %s: %d, want 1", k, downs[k])
		}
	}
	for k, n := range downs {
		if !wantDowns[k] {
			t.Errorf("downward page of %s, never revised down, %d times", k, n)
		}
	}
	for _, ids := range d.plan.workloads {
		for _, id := range ids {
			if want := map[bool]int{true: 1}[slices.Contains(pauses, id)]; len(paused[id]) != want {
				t.Errorf("pause pages of %s: %v, want %d", id, paused[id], want)
			}
		}
	}
	if len(others) > 0 {
		t.Errorf("other pages:\n%s", strings.Join(others, "\n"))
	}
}

// pageLines are the bucket lines of a settle page.
func pageLines(p pager.Event) []string {
	var out []string
	switch lines := p.Payload.CustomDetails["buckets"].(type) {
	case []string:
		return lines
	case []any:
		for _, l := range lines {
			out = append(out, fmt.Sprint(l))
		}
	}
	return out
}

// bucketOfLine is the outBucket key of the bucket a page line names:
// "meter=M workload=W bucket=[S,E)". The source is not in the line: a
// meter belongs to one source here.
func bucketOfLine(line string) string {
	field := func(name string) string {
		_, v, _ := strings.Cut(line, " "+name+"=")
		if strings.HasPrefix(line, name+"=") {
			v = strings.TrimPrefix(line, name+"=")
		}
		v, _, _ = strings.Cut(v, " ")
		return v
	}
	meter := field("meter")
	start, _, _ := strings.Cut(strings.TrimPrefix(field("bucket"), "["), ",")
	source := map[string]string{"api": "st", "tokens": "oa", "com.example.tokens": "om-tok", "com.example.gpu_hours": "om-gpu"}[meter]
	return field("workload") + "/" + source + "/" + meter + "@" + start
}

// checkWaits checks that each face recorded the waits it named, and that
// no call came before one ran out.
func (d *outDrill) checkWaits() {
	for _, face := range []struct {
		name  string
		waits []providersim.RetryAfterServed
	}{
		{"stripe", d.sys.Sim.MeterRetryAfters()},
		{"openai", d.sys.Sim.OpenAIRetryAfters()},
		{"openmeter", d.sys.OpenMeter.RetryAfters()},
	} {
		followed := 0
		for _, w := range face.waits {
			if w.Early() {
				d.t.Errorf("%s: a call of %q came %s after a %d that named %s", face.name, w.Endpoint,
					time.Duration(w.Waited), w.Status, time.Duration(w.Wait))
			}
			if !w.Next.IsZero() {
				followed++
			}
		}
		if followed == 0 {
			d.t.Errorf("%s: no wait named and followed by a call (%d named): the check saw nothing", face.name, len(face.waits))
		}
	}
}
