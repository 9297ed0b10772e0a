package spend

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
)

func TestBucketsBetweenTakesOneSourcesHeadsInTheRange(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	f := newSumsFixture(t, env, env.DynamoDB)
	f.now = sumStart.Add(4 * time.Hour)
	f.workload(t, "wl-range", 1_000_000, 1_000_000)
	ctx := context.Background()
	srcs := testSources(t)
	stripe, openai := srcs["stripe-test"], srcs["openai-poll"]
	observe := func(k BucketKey, v int64) {
		t.Helper()
		if _, err := f.s.Buckets.Observe(ctx, Observation{Key: k, Value: v, RunID: "run-1"}); err != nil {
			t.Fatal(err)
		}
	}
	// given Stripe's buckets at hours 0 to 3, the first settled, and
	// OpenAI's day bucket at hour 0
	for h := range 4 {
		observe(KeyOf(stripe, stripe.Meters["api"], "wl-range", sumStart.Add(time.Duration(h)*time.Hour)), int64(10+h))
	}
	observe(KeyOf(openai, openai.Meters["tokens"], "wl-range", sumStart), 99)
	f.now = sumStart.Add(40 * 24 * time.Hour)
	first, err := f.s.Buckets.UnsettledBuckets(ctx, "wl-range", sumStart)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || first[1].Source != "stripe-test" {
		t.Fatalf("unsettled at hour 0 = %+v, want OpenAI's and Stripe's", first)
	}
	if _, err := f.s.Buckets.Settle(ctx, "wl-range", first[1:], "run-settle"); err != nil {
		t.Fatal(err)
	}
	// when Stripe's heads from hour 0 to hour 3 are asked for
	got, err := f.s.Buckets.BucketsBetween(ctx, "wl-range", "stripe-test", sumStart, sumStart.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// then hours 0 (settled), 1 and 2 come, oldest first, with their latest values
	var line string
	for _, b := range got {
		line += fmt.Sprintf("%s=%d/%v ", b.Start.Format("15"), b.PLatest, b.Settled)
	}
	if line != "00=10/true 01=11/false 02=12/false " {
		t.Fatalf("buckets = %q", line)
	}
}
