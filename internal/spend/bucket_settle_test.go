package spend

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
)

func TestSettleOfAPollOnlySourcePagesNoGap(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	f := newSumsFixture(t, env, env.DynamoDB)
	f.now = sumStart.Add(30 * time.Minute)
	f.workload(t, "wl-poll", 1_000_000, 1_000_000)
	ctx := context.Background()
	// given OpenAI's day bucket of tokens, which no webhook feeds,
	// and Stripe's hour bucket, whose webhooks were all lost
	srcs := testSources(t)
	openai, stripe := srcs["openai-poll"], srcs["stripe-test"]
	for _, k := range []BucketKey{KeyOf(openai, openai.Meters["tokens"], "wl-poll", sumStart),
		KeyOf(stripe, stripe.Meters["api"], "wl-poll", sumStart)} {
		if _, err := f.s.Buckets.Observe(ctx, Observation{Key: k, Value: 700, RunID: "run-1"}); err != nil {
			t.Fatal(err)
		}
	}
	// when both settle
	f.now = sumStart.Add(30 * 24 * time.Hour)
	bs, err := f.s.Buckets.UnsettledBuckets(ctx, "wl-poll", f.now)
	if err != nil || len(bs) != 2 {
		t.Fatalf("unsettled = %+v, %v; want both buckets", bs, err)
	}
	gaps, err := f.s.Buckets.Settle(ctx, "wl-poll", bs, "run-settle")
	if err != nil {
		t.Fatal(err)
	}
	// then only Stripe's is a gap: OpenAI's poll is its only path, so its
	// webhook sum of 0 disagrees with nothing
	if len(gaps) != 1 || gaps[0].Bucket.Source != "stripe-test" {
		t.Fatalf("gaps = %+v, want Stripe's bucket alone", gaps)
	}
	if pages := f.pages(t, "bucket-gap#"); len(pages) != 1 {
		t.Fatalf("gap pages = %d, want 1", len(pages))
	}
	left, err := f.s.Buckets.UnsettledBuckets(ctx, "wl-poll", f.now)
	if err != nil || len(left) != 0 {
		t.Fatalf("unsettled after settle = %+v, %v; want none", left, err)
	}
}

func TestADeferredBucketedRecordReattributedIsCountedOnceWithItsBucket(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	f := newSumsFixture(t, env, env.DynamoDB)
	f.now = sumStart.Add(90 * time.Minute)
	ctx := context.Background()
	// given a webhook record of a Stripe-reconciled meter whose customer
	// no workload has yet: it is deferred
	u := Usage{RecordID: "ur_early", WorkloadRef: "cus_late", Units: 10, OccurredAt: sumStart.Add(time.Hour + time.Minute),
		ObservedAt: sumStart.Add(time.Hour + 2*time.Minute), Path: PathWebhook, EventID: "evt_early", Source: "meters", Meter: "api"}
	if res := f.apply(t, u); res.Outcome != Deferred {
		t.Fatalf("outcome = %s, want deferred", res.Outcome)
	}
	// when the alias is added, the record reattributed, and Stripe shows the same 10
	f.workload(t, "wl-late", 1_000_000, 1_000_000)
	if err := f.s.Workloads.AddAlias(ctx, "cus_late", "wl-late"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Ledger.Reattribute(ctx, "ur_early"); err != nil {
		t.Fatal(err)
	}
	src := testSources(t)["stripe-test"]
	k := KeyOf(src, src.Meters["api"], "wl-late", sumStart.Add(time.Hour))
	if _, err := f.s.Buckets.Observe(ctx, Observation{Key: k, Value: 10, RunID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	// then the record landed in its bucket, and the poll adds nothing
	if got := f.total(t, "wl-late"); got != 10 {
		t.Fatalf("total = %d, want 10: the record and Stripe's sum are the same usage", got)
	}
}

func TestABucketDeltaNamesThePathThatFoundTheRecord(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	f := newSumsFixture(t, env, env.DynamoDB)
	f.now = sumStart.Add(90 * time.Minute)
	f.workload(t, "wl-path", 1_000_000, 1_000_000)
	// given a record of a bucketed meter that the export found, not the door
	at := sumStart.Add(time.Hour + time.Minute)
	f.apply(t, Usage{RecordID: "ur_polled", WorkloadRef: "wl-path", Units: 7, OccurredAt: at, ObservedAt: at,
		Path: PathPoll, Source: "meters", Meter: "api"})
	// then its bucket's delta says the poll found it
	src := testSources(t)["stripe-test"]
	id := recordDeltaID(KeyOf(src, src.Meters["api"], "wl-path", sumStart.Add(time.Hour)), "ur_polled")
	d, _, err := f.s.Explainer.BucketDelta(context.Background(), id)
	if err != nil || d.Cause != PathPoll || d.Amount != 7 {
		t.Fatalf("delta %s = %+v, %v; want 7 found by the poll", id, d, err)
	}
}
