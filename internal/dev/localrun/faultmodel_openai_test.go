package localrun_test

import (
	"fmt"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/spend"
)

// The OpenAI part of the end-to-end model: workloads that call OpenAI,
// whose usage reaches the ledger by poll alone (OpenAI sends no webhook),
// through the face's lag, missing buckets, short pages, 429s and float
// noise on costs, with buckets revised up while the poll reads them and
// some revised down once it has.
const (
	e2eLLMSource      = "openai-model"
	e2eLLMCostsSource = "openai-model-costs"
	e2eLLMAccount     = "org_model"
	e2eLLMScale       = 1_000_000 // micro-dollars
)

// e2eLLMSums are the OpenAI sources: tokens priced as input + 4 × output
// per hour, and costs in micro-dollars per day.
func e2eLLMSums(start time.Time) string {
	return fmt.Sprintf(`%q: {"provider": "openai", "usage_source": "llm", "account": %q, "livemode": true, "start": %q,
	  "settle": "2h", "lag": "1s", "interval": "1s",
	  "meters": {"tokens": {"endpoint": "completions", "fields": {"input_tokens": 1, "output_tokens": 4}}}},
	 %q: {"provider": "openai", "usage_source": "llm-costs", "account": %q, "livemode": true, "start": %q, "width": "24h",
	  "settle": "2h", "lag": "1s", "interval": "1s",
	  "meters": {"spend": {"endpoint": "costs", "field": "amount.value", "currency": "usd", "scale": %d}}}`,
		e2eLLMSource, e2eLLMAccount, start.Format(time.RFC3339),
		e2eLLMCostsSource, e2eLLMAccount, start.Truncate(24*time.Hour).Format(time.RFC3339), e2eLLMScale)
}

// e2eLLMCall is one call a workload made to OpenAI: its tokens and cost.
type e2eLLMCall struct {
	workload string
	at       time.Time
	in, out  int64
	cost     int64 // micro-dollars
	// up revises its hour up by up input tokens while the poll reads;
	// down revises it down by its own input tokens once the poll has seen
	// the bucket.
	up   int64
	down bool
}

// llmWorkloads are the OpenAI workloads and their caps by total.
var llmWorkloads = []struct {
	id  string
	cap func(int64) int64
}{
	{"wl-llm-0", func(n int64) int64 { return n * 9 / 10 }}, // crosses
	{"wl-llm-1", func(n int64) int64 { return 2 * n }},
}

// planLLM draws n calls over the closed hour and the open one, and the
// buckets they must end at.
func (r *e2eRun) planLLM(n int) {
	now := time.Now().UTC()
	for i := range n {
		id := fmt.Sprintf("llm_%04d", i)
		c := &e2eLLMCall{workload: llmWorkloads[r.d.Hash("llm-ref", id)%uint64(len(llmWorkloads))].id,
			in: 1 + int64(r.d.Hash("llm-in", id)%500), out: int64(r.d.Hash("llm-out", id) % 200),
			cost: 1 + int64(r.d.Hash("llm-cost", id)%50_000)}
		c.at = r.sumsHour.Add(-time.Hour).Add(time.Duration(r.d.Hash("llm-at", id)%3600) * time.Second)
		if r.d.Roll("llm-open", id) < 0.5 {
			c.at = r.sumsHour.Add(time.Duration(float64(now.Sub(r.sumsHour)) * r.d.Roll("llm-at-open", id)))
		}
		if roll := r.d.Roll("llm-revise", id); roll < 0.05 {
			c.up = 1 + int64(r.d.Hash("llm-up", id)%100)
		} else if roll < 0.08 {
			c.down = true
		}
		r.llm = append(r.llm, c)
		r.llmBucket(e2eLLMSource, "tokens", c, time.Hour).addP(c.in+4*c.out+c.up, c.down, c.in)
		r.llmBucket(e2eLLMCostsSource, "spend", c, 24*time.Hour).addP(c.cost, false, 0)
	}
	totals := map[string]int64{}
	for _, b := range r.sumsBuckets {
		totals[b.key.WorkloadID] += b.counted()
	}
	for _, w := range llmWorkloads {
		r.workloads = append(r.workloads, e2eWorkload{id: w.id, cap: max(w.cap(totals[w.id]), 1), total: totals[w.id]})
	}
}

// llmBucket is the bucket of c in source's meter of the given width.
func (r *e2eRun) llmBucket(source, meter string, c *e2eLLMCall, width time.Duration) *e2eBucket {
	k := spend.BucketKey{WorkloadID: c.workload, Source: source, Account: e2eLLMAccount, Mode: "live", Meter: meter,
		Start: c.at.UTC().Truncate(time.Second).Truncate(width)}
	b, ok := r.sumsBuckets[k.String()]
	if !ok {
		b = &e2eBucket{key: k}
		r.sumsBuckets[k.String()] = b
	}
	return b
}

// addP adds what the provider shows for a bucket; down marks a downward
// revision of by to come.
func (b *e2eBucket) addP(p int64, down bool, by int64) {
	b.p += p
	if down {
		b.cancelled = true
		b.cancelledSum += by
	}
}

// startLLM sets the OpenAI face's faults and the workloads' projects.
func (r *e2eRun) startLLM() {
	sim := r.sys.Sim
	sim.SetOpenAILag(500 * time.Millisecond)
	sim.SetOpenAIPageSize(1)
	sim.FailOpenAICalls(3, 50*time.Millisecond)
	sim.SetOpenAICostNoise(true)
	if err := sim.AddOpenAIGap(providersim.OpenAIGap{Share: 0.3, Until: time.Now().Add(5 * time.Second)}); err != nil {
		r.t.Fatal(err)
	}
	for _, w := range llmWorkloads {
		r.alias(w.id, projectOf(w.id))
	}
}

// projectOf is an OpenAI workload's project.
func projectOf(workload string) string { return "proj_" + workload[len("wl-"):] }

// publishLLM records the calls at OpenAI: their tokens, with the upward
// revisions, and their costs.
func (r *e2eRun) publishLLM() {
	sim := r.sys.Sim
	for _, c := range r.llm {
		err := sim.AddOpenAIUsage(providersim.OpenAIUsage{Endpoint: "completions", Project: projectOf(c.workload), At: c.at,
			Fields: map[string]int64{"input_tokens": c.in, "output_tokens": c.out}})
		if err == nil {
			err = sim.AddOpenAICost(providersim.OpenAICost{Project: projectOf(c.workload), At: c.at,
				Value: fmt.Sprintf("%d.%06d", c.cost/e2eLLMScale, c.cost%e2eLLMScale)})
		}
		if err == nil && c.up > 0 {
			err = sim.ReviseOpenAIUsage("completions", projectOf(c.workload), c.at, "input_tokens", c.up)
		}
		if err != nil {
			r.t.Errorf("publish %s's call at %s: %v", c.workload, c.at, err)
		}
	}
}

// reviseLLMDown revises down the calls marked so, once the poll has seen
// every bucket.
func (r *e2eRun) reviseLLMDown() {
	for _, c := range r.llm {
		if !c.down {
			continue
		}
		if err := r.sys.Sim.ReviseOpenAIUsage("completions", projectOf(c.workload), c.at, "input_tokens", -c.in); err != nil {
			r.t.Errorf("revise %s's call at %s down: %v", c.workload, c.at, err)
		}
	}
}
