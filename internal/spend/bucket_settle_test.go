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
		if _, err := f.s.Recon.Observe(ctx, Observation{Key: k, Value: 700, RunID: "run-1"}); err != nil {
			t.Fatal(err)
		}
	}
	// when both settle
	f.now = sumStart.Add(30 * 24 * time.Hour)
	bs, err := f.s.Recon.UnsettledBuckets(ctx, "wl-poll", f.now)
	if err != nil || len(bs) != 2 {
		t.Fatalf("unsettled = %+v, %v; want both buckets", bs, err)
	}
	gaps, err := f.s.Recon.Settle(ctx, "wl-poll", bs, "run-settle")
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
	left, err := f.s.Recon.UnsettledBuckets(ctx, "wl-poll", f.now)
	if err != nil || len(left) != 0 {
		t.Fatalf("unsettled after settle = %+v, %v; want none", left, err)
	}
}
