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

// testSources has one source, "stripe-test", over usage source "meters":
// meter "api" keeps the first number on a downward revision, meter
// "calls" follows it.
func testSources(t testing.TB) sums.Sources {
	t.Helper()
	ss, err := sums.ParseSources(`{"stripe-test": {"provider": "stripe", "usage_source": "meters", "account": "acct_1",
		"start": "2026-11-30T00:00:00Z", "settle": "2h", "meters": {
		"api": {"provider_meter": "mtr_api", "aggregation": "sum"},
		"calls": {"provider_meter": "mtr_calls", "aggregation": "count", "follow_down": true}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	return ss
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
	meter     string
	hour      int
	minute    int
	units     int64
	webhook   bool // the webhook path delivers it
	provider  bool // the provider ingested it
	cancelled bool // the provider cancelled it later
}

func newBucketWorld(rng *rand.Rand) *bucketWorld {
	w := &bucketWorld{delivered: map[int]bool{}, shown: map[string][]int64{}}
	for range 20 + rng.IntN(20) {
		w.recs = append(w.recs, bucketRec{meter: []string{"api", "calls"}[rng.IntN(2)], hour: rng.IntN(3),
			minute: rng.IntN(60), units: 1 + rng.Int64N(20), webhook: rng.Float64() < 0.8,
			provider: rng.Float64() < 0.85, cancelled: rng.Float64() < 0.1})
	}
	return w
}

func bucketName(meter string, hour int) string { return fmt.Sprintf("%s@%d", meter, hour) }

// providerValue is the provider's sum for a bucket after step, or false
// when it shows nothing: records become visible in order as the run
// goes on (lag), and cancellations land in the second half.
func (w *bucketWorld) providerValue(meter string, hour int, visible int, cancelsLanded bool) (int64, bool) {
	var sum int64
	seen := false
	for i, r := range w.recs {
		if i >= visible || !r.provider || r.meter != meter || r.hour != hour {
			continue
		}
		seen = true
		if !(r.cancelled && cancelsLanded) {
			sum += r.units
		}
	}
	return sum, seen
}

func (w *bucketWorld) usage(i int) Usage {
	r := w.recs[i]
	at := sumStart.Add(time.Duration(r.hour)*time.Hour + time.Duration(r.minute)*time.Minute + 999*time.Millisecond)
	return Usage{RecordID: fmt.Sprintf("rec-%d", i), WorkloadRef: "wl-sum", Units: r.units, OccurredAt: at,
		ObservedAt: at, Path: PathWebhook, EventID: fmt.Sprintf("evt-%d", i), Source: "meters", Meter: r.meter}
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
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("replay: go test ./internal/spend/ -run 'TestBucketMaxRuleProperty' -bucket.seed=%d", seed)
				}
			}()
			runBucketProperty(t, env, seed, fmt.Sprintf("wl-sum-%d", n))
		})
	}
}

func runBucketProperty(t *testing.T, env *localaws.Env, seed uint64, id string) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	db := &ambiguousDB{DB: env.DynamoDB, rng: rng}
	f := newSumsFixture(t, env, db)
	f.now = sumStart.Add(3*time.Hour + 10*time.Minute)
	capUnits := 100 + rng.Int64N(300)
	f.workload(t, id, capUnits, 1_000_000)
	db.after, db.lost = 0.1, 0.05
	w := newBucketWorld(rng)
	src := testSources(t)["stripe-test"]
	steps := 3 * len(w.recs)
	for step := range steps {
		visible := len(w.recs) * (step + 1) / steps
		if rng.Float64() < 0.5 {
			i := rng.IntN(len(w.recs))
			if !w.recs[i].webhook {
				continue
			}
			u := w.usage(i)
			u.WorkloadRef, u.RecordID, u.EventID = id, id+"-"+u.RecordID, id+"-"+u.EventID
			retry(t, "apply "+u.RecordID, func() error { _, err := f.s.Ledger.Apply(ctx, u); return err })
			w.delivered[i] = true
			continue
		}
		meter, hour := []string{"api", "calls"}[rng.IntN(2)], rng.IntN(3)
		v, ok := w.providerValue(meter, hour, visible, step > steps/2)
		if !ok {
			continue
		}
		k := KeyOf(src, src.Meters[meter], id, sumStart.Add(time.Duration(hour)*time.Hour))
		o := Observation{Key: k, Value: v, RunID: fmt.Sprintf("run-%d", step)}
		retry(t, "observe "+k.String(), func() error { _, err := f.s.Recon.Observe(ctx, o); return err })
		w.shown[bucketName(meter, hour)] = append(w.shown[bucketName(meter, hour)], v)
	}
	wl, err := f.s.Workloads.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	retry(t, "recheck", func() error { _, err := f.s.Recon.Recheck(ctx, wl); return err })
	checkBuckets(t, f, w, id, src)
	checkSettle(t, f, w, id)
}

// expected is what a bucket must count, and W and the provider's latest.
func (w *bucketWorld) expected(meter string, hour int) (counted, wsum, latest int64, seen bool) {
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
	if meter == "calls" && seen {
		return max(wsum, latest), wsum, latest, seen
	}
	return max(wsum, pStar), wsum, latest, seen
}

func checkBuckets(t *testing.T, f *fixture, w *bucketWorld, id string, src sums.Source) {
	ctx := context.Background()
	var sum int64
	for _, meter := range []string{"api", "calls"} {
		for hour := range 3 {
			k := KeyOf(src, src.Meters[meter], id, sumStart.Add(time.Duration(hour)*time.Hour))
			h, err := f.s.Recon.readHead(ctx, k, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			counted, wsum, latest, _ := w.expected(meter, hour)
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

func checkSettle(t *testing.T, f *fixture, w *bucketWorld, id string) {
	ctx := context.Background()
	f.now = sumStart.Add(6 * time.Hour)
	var gapped []string
	for _, meter := range []string{"api", "calls"} {
		for hour := range 3 {
			if _, wsum, latest, _ := w.expected(meter, hour); latest != wsum {
				gapped = append(gapped, fmt.Sprintf("%s/%s@%s", "acct_1/test", meter, id))
			}
		}
	}
	for run := range 2 {
		var bs []Bucket
		retry(t, "list", func() (err error) { bs, err = f.s.Recon.UnsettledBuckets(ctx, id, f.now); return err })
		retry(t, "settle", func() error { _, err := f.s.Recon.Settle(ctx, id, bs, fmt.Sprintf("settle-%d", run)); return err })
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
