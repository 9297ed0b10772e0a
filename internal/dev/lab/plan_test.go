package lab

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// measured is a report with known figures: a receiver p99 of 20 ms, a
// worker p99 of 50 ms with full batches of 10, and per event 6 write
// units on the intake table, 1 on its source index and 2 on the
// idempotency table.
func measured() *Report {
	return &Report{Name: "idempotency-on", Rate: 200, Duration: "5s", Payload: "stripe-invoice-paid.json", PayloadBytes: 5853,
		CallsPerEvent: map[string]float64{"DynamoDB.PutItem": 2, "DynamoDB.UpdateItem": 2, "SQS.SendMessage": 1, "SQS.ReceiveMessage": 1.3,
			"SQS.DeleteMessageBatch": 0.1, "SQS.GetQueueAttributes": 0.01},
		AWSCalls: 6.41,
		Units: Units{Write: 9, Metered: true, ByTable: map[string]TableUnits{
			"hookline-intake": {Write: 6}, "hookline-intake/by_source_received": {Write: 1}, "hookline-idempotency": {Write: 2},
		}},
		Stages:         []Stage{{Name: receiverStage, P50: 5, P99: 20}, {Name: workerStage, P50: 10, P99: 50}},
		CostPerMillion: Cost{APIGateway: 1, Lambda: 0.5, SQS: 0.9, DynamoDB: 5.625, Total: 8.025, Prices: "us-east-1 list prices, 2025-01"},
	}
}

// templateSettings are infra/template.yaml's settings with AWS's quotas.
func templateSettings() PlanSettings {
	return PlanSettings{Quotas: DefaultQuotas(), StageRate: 1500, StageBurst: 2000, WorkerBatchSize: 10, WorkerMaxConcurrency: 50,
		OneKeyPerSource: []string{"hookline-intake/by_source_received"}, Sources: 1}
}

func planLine(t *testing.T, p *Plan, what string) PlanLine {
	t.Helper()
	for _, l := range p.Lines {
		if l.What == what {
			return l
		}
	}
	t.Fatalf("the plan has no line %q", what)
	return PlanLine{}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }

func TestPlanWorksFromTheMeasuredFigures(t *testing.T) {
	// Given a run with known calls, units and latencies
	// When it is planned at 5,000 webhooks/s against the template
	p, err := PlanFor(measured(), 5000, templateSettings())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, what string
		need       float64
		quota      string
	}{
		{"the receiver: rate × its p99", "Lambda ReceiverFunction concurrency", 5000 * 0.020, "meets"},
		{"the worker: batches/s × its p99", "Lambda PaymentWorkerFunction concurrency", 5000.0 / 10 * 0.050, "meets"},
		{"both from the account's pool", "Lambda concurrency, account", 100 + 25, "meets"},
		{"the intake table's writes", "DynamoDB hookline-intake writes", 30000, "meets"},
		{"more than a new table serves at once", "DynamoDB hookline-intake writes at once", 30000, "raise to 30,000"},
		{"the idempotency table", "DynamoDB hookline-idempotency writes", 10000, "meets"},
		{"the spread table's partitions", "DynamoDB hookline-intake partitions", 30, "meets"},
		{"the source index's one partition", "DynamoDB hookline-intake/by_source_received one source's partition", 5000, "no quota fixes it"},
		{"the account's API throttle", "API Gateway requests, account", 5000, "meets"},
		{"the template's stage throttle", "API Gateway requests, HTTP API stage", 5000, "raise to 5,000"},
		{"SQS: send, receive and delete a batch", "SQS requests, payments queue", 5000 * 1.2, "no quota"},
		{"SQS in flight: rate × the worker's p99", "SQS messages in flight, payments queue", 250, "meets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Then each need is the rate times the measured figure, and
			// its quota column says whether the quota holds
			l := planLine(t, p, tc.what)
			if !near(l.Need, tc.need) || l.Quota() != tc.quota {
				t.Fatalf("%s: needs %g %s (%s), want %g (%s); %s", tc.what, l.Need, l.Unit, l.Quota(), tc.need, tc.quota, l.How)
			}
		})
	}
	// and a day costs the measured cost per million events × 432 million
	if c := p.CostPerDay; !near(c.Total, 8.025*432) || !near(c.DynamoDB, 5.625*432) || c.Prices != "us-east-1 list prices, 2025-01" {
		t.Fatalf("cost per day %+v", c)
	}
}

func TestTheSourceIndexIsOnePartitionPerSource(t *testing.T) {
	const what = "DynamoDB hookline-intake/by_source_received one source's partition"
	for _, tc := range []struct {
		name    string
		rate    float64
		sources float64
		quota   string
	}{
		{"under a partition's 1,000 write units", 999, 1, "meets"},
		{"at the limit", 1000, 1, "meets"},
		{"over it for one source", 1001, 1, "no quota fixes it"},
		{"5,000/s from one source", 5000, 1, "no quota fixes it"},
		{"5,000/s over five sources", 5000, 5, "meets"},
		{"5,000/s over four sources", 5000, 4, "no quota fixes it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Given one write unit an event on the index keyed by source
			s := templateSettings()
			s.Sources = tc.sources
			// When planned at the rate
			p, err := PlanFor(measured(), tc.rate, s)
			if err != nil {
				t.Fatal(err)
			}
			// Then past 1,000 write units a second for one source no
			// quota fixes it, and the line says how to shard
			l := planLine(t, p, what)
			if l.Quota() != tc.quota || l.Limit != 1000 {
				t.Fatalf("at %g/s over %g sources: %s (%g against %g): %s", tc.rate, tc.sources, l.Quota(), l.Need, l.Limit, l.How)
			}
			if tc.quota == QuotaNoFix && !strings.Contains(l.How, "shard the key (source#0") {
				t.Fatalf("no fix named: %s", l.How)
			}
		})
	}
}

func TestPlanNamesTheQuotasToRaise(t *testing.T) {
	// Given a slow receiver and worker (p99 300 ms and 2 s) and batches
	// of one
	r := measured()
	r.Stages = []Stage{{Name: receiverStage, P99: 300}, {Name: workerStage, P99: 2000}}
	r.CallsPerEvent["SQS.DeleteMessageBatch"] = 1
	// When planned at 12,000 webhooks/s
	p, err := PlanFor(r, 12000, templateSettings())
	if err != nil {
		t.Fatal(err)
	}
	// Then every quota it passes is named with what to raise it to
	for what, quota := range map[string]string{
		"Lambda ReceiverFunction concurrency":                                "raise to 3,600",    // 12,000 × 0.3 s
		"Lambda PaymentWorkerFunction concurrency":                           "no quota fixes it", // 24,000 > an event source's 1,000
		"Lambda concurrency, account":                                        "raise to 27,600",   // 3,600 + 24,000
		"API Gateway requests, account":                                      "raise to 12,000",   // over 10,000
		"DynamoDB hookline-intake writes":                                    "raise to 72,000",   // 12,000 × 6 > 40,000
		"DynamoDB hookline-idempotency writes":                               "meets",             // 24,000
		"DynamoDB hookline-intake partitions":                                QuotaMeets,          // a key per event
		"API Gateway requests, HTTP API stage":                               "raise to 12,000",   // the template's 1,500
		"SQS requests, payments queue":                                       QuotaNone,           // no quota at any rate
		"DynamoDB hookline-intake/by_source_received one source's partition": QuotaNoFix,
	} {
		if got := planLine(t, p, what).Quota(); got != quota {
			t.Errorf("%s: %s, want %s", what, got, quota)
		}
	}
	// and a worker's MaximumConcurrency within reach is raised
	r.Stages[1].P99 = 30
	p, _ = PlanFor(r, 12000, templateSettings())
	if got := planLine(t, p, "Lambda PaymentWorkerFunction concurrency").Quota(); got != "raise to 360" {
		t.Errorf("the worker at 12,000 batches/s × 30 ms: %s, want raise to 360", got)
	}
}

func TestPlanReadsTheStagesTheObserverNames(t *testing.T) {
	// Given the legs an observer reports
	names := map[string]bool{}
	for _, s := range newObserver(time.Now()).stages() {
		names[s.Name] = true
	}
	// Then the plan's receiver and worker durations are among them
	for _, n := range []string{receiverStage, workerStage} {
		if !names[n] {
			t.Errorf("the observer reports no stage %q: %v", n, names)
		}
	}
}

func TestPlanWithoutDurationsSaysSo(t *testing.T) {
	// Given a run whose stages were not measured
	r := measured()
	r.Stages = nil
	p, err := PlanFor(r, 5000, templateSettings())
	if err != nil {
		t.Fatal(err)
	}
	// Then the Lambda lines are not judged
	if l := planLine(t, p, "Lambda ReceiverFunction concurrency"); l.Verdict != QuotaUnmeasured {
		t.Fatalf("receiver: %s", l.Quota())
	}
}

func TestPlanRefusesWhatItCannotWork(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *Report
		rate float64
	}{
		{"no rate", measured(), 0},
		{"a negative rate", measured(), -5},
		{"an infinite rate", measured(), math.Inf(1)},
		{"no report", nil, 5000},
		{"no calls measured", &Report{}, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := PlanFor(tc.r, tc.rate, templateSettings()); !errors.Is(err, ErrNoPlan) {
				t.Fatalf("err %v, want ErrNoPlan", err)
			}
		})
	}
}

func TestSummaryCarriesThePlan(t *testing.T) {
	// Given a report with a plan
	r := measured()
	p, err := PlanFor(r, 5000, templateSettings())
	if err != nil {
		t.Fatal(err)
	}
	r.Plan = p
	// When it is summarised
	var out strings.Builder
	Summary(&out, r)
	// Then the plan follows the measured report, with its quota column
	for _, want := range []string{
		"capacity plan at 5,000 webhooks/s, worked from the run idempotency-on at 200 webhooks/s",
		"quota", "no quota fixes it", "raise to 5,000", "cost per day at 5,000 webhooks/s: $3,467",
	} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("the summary has no %q:\n%s", want, out.String())
		}
	}
	t.Log(out.String())
}

// TestPlanJudgesEachShardOfASource: the replay index is keyed by a
// source's shard, so one source's writes spread over its shards: at
// 5,000/s sixteen shards take 312.5 write units a second each, and at
// 20,000/s 1,250, past one partition key value's 1,000, which no quota
// lifts.
func TestPlanJudgesEachShardOfASource(t *testing.T) {
	r := measured()
	r.Units.ByTable = map[string]TableUnits{"hookline-intake": {Write: 3}, "hookline-intake/by_shard_received": {Write: 1}, "hookline-idempotency": {Write: 2}}
	s := templateSettings()
	s.ShardsPerSource = map[string]float64{"hookline-intake/by_shard_received": 16}
	for _, tt := range []struct {
		rate    float64
		need    float64
		verdict string
	}{{5000, 312.5, QuotaMeets}, {20000, 1250, QuotaNoFix}} {
		p, err := PlanFor(r, tt.rate, s)
		if err != nil {
			t.Fatal(err)
		}
		l := planLine(t, p, "DynamoDB hookline-intake/by_shard_received one shard of a source")
		if l.Need != tt.need || l.Verdict != tt.verdict || !strings.Contains(l.How, "16,000 webhooks/s") {
			t.Errorf("at %.0f/s: %+v, want %.1f units/s, %q, a limit of 16,000 webhooks/s named", tt.rate, l, tt.need, tt.verdict)
		}
	}
}
