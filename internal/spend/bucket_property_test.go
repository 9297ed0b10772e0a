package spend

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/sums"
)

var (
	bucketSeed  = flag.Uint64("bucket.seed", 0, "replay one seed of TestBucketMaxRuleProperty")
	bucketSeeds = flag.Int("bucket.seeds", 6, "how many seeds TestBucketMaxRuleProperty runs")
)

var sumStart = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// testSources has three sources. "stripe-test", over usage source
// "meters", buckets by the hour: meter "api" keeps the first number on a
// downward revision, meter "calls" follows it. "openai-test", over usage
// source "llm", buckets by the day as OpenAI's costs do: meter "tokens"
// weighs output tokens 4 to an input token, meter "spend" counts
// micro-dollars of costs, which OpenAI shows as floats, and follows
// downward revisions; an application also reports its tokens to the door
// ("webhooks": true). "openai-poll" is OpenAI read by poll alone, as
// OpenAI sends no webhooks.
func testSources(t testing.TB) sums.Sources {
	t.Helper()
	ss, err := sums.ParseSources(`{"stripe-test": {"provider": "stripe", "usage_source": "meters", "account": "acct_1",
		"start": "2026-11-30T00:00:00Z", "settle": "2h", "meters": {
		"api": {"provider_meter": "mtr_api", "aggregation": "sum"},
		"calls": {"provider_meter": "mtr_calls", "aggregation": "count", "follow_down": true}}},
	  "openai-test": {"provider": "openai", "usage_source": "llm", "account": "org_1", "livemode": true, "webhooks": true,
		"start": "2026-11-30T00:00:00Z", "width": "24h", "settle": "2h", "meters": {
		"tokens": {"endpoint": "completions", "fields": {"input_tokens": 1, "output_tokens": 4}},
		"spend": {"endpoint": "costs", "field": "amount.value", "currency": "usd", "scale": 1000000, "follow_down": true}}},
	  "openai-poll": {"provider": "openai", "usage_source": "llm-poll", "account": "org_2", "livemode": true,
		"start": "2026-11-30T00:00:00Z", "width": "24h", "settle": "2h", "meters": {
		"tokens": {"endpoint": "completions", "field": "input_tokens"}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// sumShape is one source of the property: its meters and width, which
// meter follows downward revisions, and how its provider shows a bucket.
type sumShape struct {
	source, usageSource string
	meters              []string
	follows             string
	width               time.Duration
	// minutes is how many minutes of a bucket a record may fall in.
	minutes int
	// fields gives a record its provider fields; value turns a bucket's
	// fields, summed in arrival order, into what the provider shows.
	fields func(rng *rand.Rand, meter string) []int64
	value  func(meter string, sums []float64) float64
}

// stripeShape shows the exact sum of one value per record.
var stripeShape = sumShape{source: "stripe-test", usageSource: "meters", meters: []string{"api", "calls"}, follows: "calls",
	width: time.Hour, minutes: 60,
	fields: func(rng *rand.Rand, _ string) []int64 { return []int64{1 + rng.Int64N(20)} },
	value:  func(_ string, s []float64) float64 { return s[0] }}

// openAIShape gives a tokens record input and output tokens, shown as
// input + 4 × output, and a spend record micro-dollars, shown as a float
// of dollars summed in arrival order, as OpenAI's costs are.
var openAIShape = sumShape{source: "openai-test", usageSource: "llm", meters: []string{"tokens", "spend"}, follows: "spend",
	width: sums.Day, minutes: 24 * 60,
	fields: func(rng *rand.Rand, meter string) []int64 {
		if meter == "spend" {
			return []int64{1 + rng.Int64N(2_000_000)}
		}
		return []int64{1 + rng.Int64N(20), rng.Int64N(5)}
	},
	value: func(meter string, s []float64) float64 {
		if meter == "spend" {
			return s[0]
		}
		return s[0] + 4*s[1]
	}}

// units is what the webhook path counts for a record of meter with
// fields: the same weights as the provider's, in ledger units.
func (sh sumShape) units(meter string, fields []int64) int64 {
	if sh.source == openAIShape.source && meter == "tokens" {
		return fields[0] + 4*fields[1]
	}
	return fields[0]
}

// shown is the provider's value of fields summed, as the reconciler
// reads it: OpenAI's costs become dollars, summed as floats, and every
// value is rounded at the bucket to the meter's scale.
func (sh sumShape) shown(t *testing.T, m sums.Meter, recs []bucketRec) int64 {
	var total []float64
	for _, r := range recs {
		for len(total) < len(r.fields) {
			total = append(total, 0)
		}
		for i, f := range r.fields {
			v := float64(f)
			if m.Currency != "" {
				v /= float64(m.Scale)
			}
			total[i] += v
		}
	}
	if len(total) == 0 {
		return 0
	}
	units, ok := m.Units(sh.value(m.Name, total))
	if !ok {
		t.Fatalf("meter %s: %v is no count of units", m.Name, total)
	}
	return units
}

// ambiguousDB commits a share of transactions and then answers with an
// error, as a timeout after DynamoDB acted would, and fails another share
// before acting; both read as "unknown" to the caller.
type ambiguousDB struct {
	DB
	rng         *rand.Rand
	after, lost float64
	faults      int
}

var errAmbiguous = errors.New("test: connection reset after the request was sent")

func (d *ambiguousDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	switch r := d.rng.Float64(); {
	case r < d.lost:
		d.faults++
		return nil, errAmbiguous
	case r < d.lost+d.after:
		out, err := d.DB.TransactWriteItems(ctx, in, opts...)
		if err == nil {
			d.faults++
			return nil, errAmbiguous
		}
		return out, err
	}
	return d.DB.TransactWriteItems(ctx, in, opts...)
}

func newSumsFixture(t testing.TB, env *localaws.Env, db DB) *fixture {
	t.Helper()
	f := newFixtureWith(t, env, db, nil)
	var err error
	f.s, err = New(Config{DB: db, LedgerTable: env.TableName("LedgerTable"),
		WorkloadsTable: env.TableName("WorkloadsTable"), Pages: f.outbox,
		Webhook:    PathContract{ExpectedArrival: 5 * time.Second, MaxAge: maxAge, Interval: time.Minute},
		Poll:       PathContract{ExpectedArrival: 10 * time.Minute, MaxAge: maxAge, Interval: 15 * time.Minute},
		ReconOwner: "billing-oncall", ReconRoutingKey: "rk-recon", Metrics: f.metrics, Now: f.clock,
		Sums: testSources(t)})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// bucketWorld is the truth of one property run: the records, which the
// webhook path delivered and which the provider holds, and what the
// ledger was shown.
type bucketWorld struct {
	recs      []bucketRec
	delivered map[int]bool
	// shown is every value observed per bucket, in order.
	shown map[string][]int64
}

type bucketRec struct {
	meter  string
	hour   int // the bucket: hours, or days for a day source
	minute int
	units  int64
	// fields are what the provider sums for the record (Stripe: its
	// value; OpenAI: input and output tokens, or micro-dollars).
	fields    []int64
	webhook   bool // the webhook path delivers it
	provider  bool // the provider ingested it
	cancelled bool // the provider cancelled it later
}

func newBucketWorld(rng *rand.Rand, sh sumShape) *bucketWorld {
	w := &bucketWorld{delivered: map[int]bool{}, shown: map[string][]int64{}}
	for range 20 + rng.IntN(20) {
		meter := sh.meters[rng.IntN(2)]
		fields := sh.fields(rng, meter)
		w.recs = append(w.recs, bucketRec{meter: meter, hour: rng.IntN(3), minute: rng.IntN(sh.minutes),
			units: sh.units(meter, fields), fields: fields, webhook: rng.Float64() < 0.8,
			provider: rng.Float64() < 0.85, cancelled: rng.Float64() < 0.1})
	}
	return w
}

func bucketName(meter string, hour int) string { return fmt.Sprintf("%s@%d", meter, hour) }

// providerValue is the provider's value for a bucket after step, as the
// reconciler reads it, or false when it shows nothing: records become
// visible in order as the run goes on (lag), and cancellations land in
// the second half.
func (w *bucketWorld) providerValue(t *testing.T, sh sumShape, m sums.Meter, hour int, visible int, cancelsLanded bool) (int64, bool) {
	var counted []bucketRec
	seen := false
	for i, r := range w.recs {
		if i >= visible || !r.provider || r.meter != m.Name || r.hour != hour {
			continue
		}
		seen = true
		if !(r.cancelled && cancelsLanded) {
			counted = append(counted, r)
		}
	}
	v := sh.shown(t, m, counted)
	var exact int64
	for _, r := range counted {
		exact += r.units
	}
	if v != exact {
		t.Errorf("meter %s, bucket %d: the provider's value reads as %d units, its records hold %d", m.Name, hour, v, exact)
	}
	return v, seen
}

func (w *bucketWorld) usage(i int, sh sumShape) Usage {
	r := w.recs[i]
	at := sumStart.Add(time.Duration(r.hour)*sh.width + time.Duration(r.minute)*time.Minute + 999*time.Millisecond)
	return Usage{RecordID: fmt.Sprintf("rec-%d", i), WorkloadRef: "wl-sum", Units: r.units, OccurredAt: at,
		ObservedAt: at, Path: PathWebhook, EventID: fmt.Sprintf("evt-%d", i), Source: sh.usageSource, Meter: r.meter}
}

// retry runs op until it answers without error, as a queue redelivers a
// message: each attempt may be cut by the ambiguous faults.
func retry(t *testing.T, what string, op func() error) {
	t.Helper()
	var err error
	for range 30 {
		if err = op(); err == nil {
			return
		}
	}
	t.Fatalf("%s: still failing: %v", what, err)
}

func TestBucketMaxRuleProperty(t *testing.T) {
	// given random orders of webhooks, polls, revisions up and down,
	// retries and writes cut after or before they commit; when the
	// buckets settle; then every bucket counts max(W, P*) (max(W, P_latest)
	// for the meter that follows), the deltas sum to the total, one cap
	// trip pages once, and each settled gap is paged once
	env := localaws.StartForTest(t)
	seeds := make([]uint64, 0, *bucketSeeds)
	if *bucketSeed != 0 {
		seeds = append(seeds, *bucketSeed)
	} else {
		for i := range *bucketSeeds {
			seeds = append(seeds, uint64(time.Now().UnixNano())+uint64(i)*7919)
		}
	}
	for n, seed := range seeds {
		for _, sh := range []sumShape{stripeShape, openAIShape} {
			t.Run(fmt.Sprintf("%s/%d", sh.source, seed), func(t *testing.T) {
				defer func() {
					if t.Failed() {
						t.Logf("replay: go test ./internal/spend/ -run 'TestBucketMaxRuleProperty' -bucket.seed=%d", seed)
					}
				}()
				runBucketProperty(t, env, sh, seed, fmt.Sprintf("wl-%s-%d", sh.source, n))
			})
		}
	}
}

func runBucketProperty(t *testing.T, env *localaws.Env, sh sumShape, seed uint64, id string) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	db := &ambiguousDB{DB: env.DynamoDB, rng: rng}
	f := newSumsFixture(t, env, db)
	f.now = sumStart.Add(3*sh.width + 10*time.Minute)
	w := newBucketWorld(rng, sh)
	capUnits := capFor(rng, w)
	f.workload(t, id, capUnits, 1_000_000)
	db.after, db.lost = 0.1, 0.05
	src := testSources(t)[sh.source]
	steps := 3 * len(w.recs)
	for step := range steps {
		visible := len(w.recs) * (step + 1) / steps
		if rng.Float64() < 0.5 {
			i := rng.IntN(len(w.recs))
			if !w.recs[i].webhook {
				continue
			}
			u := w.usage(i, sh)
			u.WorkloadRef, u.RecordID, u.EventID = id, id+"-"+u.RecordID, id+"-"+u.EventID
			retry(t, "apply "+u.RecordID, func() error { _, err := f.s.Ledger.Apply(ctx, u); return err })
			w.delivered[i] = true
			continue
		}
		meter, hour := sh.meters[rng.IntN(2)], rng.IntN(3)
		v, ok := w.providerValue(t, sh, src.Meters[meter], hour, visible, step > steps/2)
		if !ok {
			continue
		}
		k := KeyOf(src, src.Meters[meter], id, sumStart.Add(time.Duration(hour)*sh.width))
		o := Observation{Key: k, Value: v, RunID: fmt.Sprintf("run-%d", step)}
		retry(t, "observe "+k.String(), func() error { _, err := f.s.Buckets.Observe(ctx, o); return err })
		w.shown[bucketName(meter, hour)] = append(w.shown[bucketName(meter, hour)], v)
	}
	wl, err := f.s.Workloads.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	retry(t, "recheck", func() error { _, err := f.s.Caps.Recheck(ctx, wl); return err })
	checkBuckets(t, f, w, sh, id, src)
	checkSettle(t, f, w, sh, id)
}

// capFor is a cap the workload may or may not cross: between a tenth and
// all of what its records add up to.
func capFor(rng *rand.Rand, w *bucketWorld) int64 {
	var all int64
	for _, r := range w.recs {
		all += r.units
	}
	return max(all/10, 1) + rng.Int64N(max(all, 1))
}

// expected is what a bucket must count, and W and the provider's latest.
func (w *bucketWorld) expected(sh sumShape, meter string, hour int) (counted, wsum, latest int64, seen bool) {
	for i, r := range w.recs {
		if w.delivered[i] && r.meter == meter && r.hour == hour {
			wsum += r.units
		}
	}
	shown := w.shown[bucketName(meter, hour)]
	var pStar int64
	for _, v := range shown {
		pStar = max(pStar, v)
	}
	if len(shown) > 0 {
		latest, seen = shown[len(shown)-1], true
	}
	if meter == sh.follows && seen {
		return max(wsum, latest), wsum, latest, seen
	}
	return max(wsum, pStar), wsum, latest, seen
}

func checkBuckets(t *testing.T, f *fixture, w *bucketWorld, sh sumShape, id string, src sums.Source) {
	ctx := context.Background()
	var sum int64
	for _, meter := range sh.meters {
		for hour := range 3 {
			k := KeyOf(src, src.Meters[meter], id, sumStart.Add(time.Duration(hour)*sh.width))
			h, err := f.s.Recon.readHead(ctx, k, sh.width)
			if err != nil {
				t.Fatal(err)
			}
			counted, wsum, latest, _ := w.expected(sh, meter, hour)
			if h.Counted != counted || h.W != wsum || h.PLatest != latest {
				t.Errorf("bucket %s: counted=%d W=%d P_latest=%d, want counted=%d W=%d P_latest=%d (shown %v)",
					k, h.Counted, h.W, h.PLatest, counted, wsum, latest, w.shown[bucketName(meter, hour)])
			}
			if d := deltaSum(t, f, k); d != h.Counted {
				t.Errorf("bucket %s: deltas sum to %d, counted %d", k, d, h.Counted)
			}
			sum += counted
		}
	}
	if got := f.total(t, id); got != sum {
		t.Errorf("total = %d, want the buckets' sum %d", got, sum)
	}
	pauses := f.pages(t, DedupKey(id, ActionPause, 0, 0))
	if want := btoi(sum > 0 && f.total(t, id) > capOf(t, f, id)); len(pauses) != want {
		t.Errorf("pause pages = %d, want %d (total %d)", len(pauses), want, sum)
	}
}

func capOf(t *testing.T, f *fixture, id string) int64 {
	w, err := f.s.Workloads.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return w.Cap
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// deltaSum is the sum of the delta items in k's partition.
func deltaSum(t *testing.T, f *fixture, k BucketKey) int64 {
	t.Helper()
	kc := expression.Key("pk").Equal(expression.Value(bucketPK(k))).And(expression.Key("sk").BeginsWith(prefixDeltaID))
	in, err := ddb.KeyQuery(f.s.Recon.ledger, "", kc, true)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	err = ddb.QueryEach(context.Background(), f.s.Recon.db, in, func(it deltaItem) (bool, error) {
		sum += it.Amount
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func checkSettle(t *testing.T, f *fixture, w *bucketWorld, sh sumShape, id string) {
	ctx := context.Background()
	f.now = sumStart.Add(3*sh.width + 3*time.Hour)
	var gapped []string
	for _, meter := range sh.meters {
		for hour := range 3 {
			if _, wsum, latest, _ := w.expected(sh, meter, hour); latest != wsum {
				gapped = append(gapped, fmt.Sprintf("%s/%s@%s", sh.source, meter, id))
			}
		}
	}
	for run := range 2 {
		var bs []Bucket
		retry(t, "list", func() (err error) { bs, err = f.s.Buckets.UnsettledBuckets(ctx, id, f.now); return err })
		retry(t, "settle", func() error { _, err := f.s.Buckets.Settle(ctx, id, bs, fmt.Sprintf("settle-%d", run)); return err })
	}
	pages := f.pages(t, "bucket-gap#"+id+"#")
	lines := 0
	for _, p := range pages {
		lines += len(p.Event.Payload.CustomDetails["buckets"].([]any))
	}
	if len(gapped) == 0 && len(pages) != 0 || len(gapped) > 0 && lines != len(gapped) {
		t.Errorf("gap pages = %d naming %d buckets, want the %d gapped buckets named once: %v",
			len(pages), lines, len(gapped), pageSummaries(pages))
	}
}

func pageSummaries(ps []pager.Page) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Event.Payload.Summary)
	}
	return strings.Join(out, "\n")
}
