package lab

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// ErrNoPlan reports a capacity plan that cannot be worked out: no rate,
// or a report without the figures a plan is worked from.
var ErrNoPlan = errors.New("lab: no capacity plan")

// Quotas are the AWS quotas a capacity plan is held against, per account
// and Region unless named otherwise. [DefaultQuotas] has AWS's defaults;
// docs/design.md ("Capacity plan at 5,000 webhooks/s") names the pages
// they come from.
type Quotas struct {
	// LambdaConcurrency is the account's concurrent executions, shared by
	// every function without reserved concurrency.
	LambdaConcurrency float64 `json:"lambda_concurrency"`
	// LambdaScaling is how many execution environments a function may add
	// every 10 seconds.
	LambdaScaling float64 `json:"lambda_scaling_per_10s"`
	// ESMConcurrency is the highest ScalingConfig.MaximumConcurrency an SQS
	// event source mapping takes, and ESMScaling how many concurrent
	// batches it adds a minute.
	ESMConcurrency float64 `json:"esm_max_concurrency"`
	ESMScaling     float64 `json:"esm_scaling_per_minute"`
	// APIRate and APIBurst are API Gateway's throttle across every API of
	// the account: steady requests/s, and the burst AWS sets from it.
	APIRate  float64 `json:"api_rate"`
	APIBurst float64 `json:"api_burst"`
	// TableUnits is an on-demand table's (and each of its GSIs') request
	// units a second, reads and writes each.
	TableUnits float64 `json:"table_request_units"`
	// WarmWrites and WarmReads are what a new on-demand table or GSI
	// serves at once (its warm throughput) before it scales or is
	// pre-warmed.
	WarmWrites float64 `json:"warm_write_units"`
	WarmReads  float64 `json:"warm_read_units"`
	// PartitionWrites and PartitionReads are one partition's units a
	// second: one partition key value can never have more.
	PartitionWrites float64 `json:"partition_write_units"`
	PartitionReads  float64 `json:"partition_read_units"`
	// SQSInFlight is a standard queue's messages received and not yet
	// deleted.
	SQSInFlight float64 `json:"sqs_in_flight"`
}

// DefaultQuotas are AWS's default quotas (most Regions).
func DefaultQuotas() Quotas {
	return Quotas{
		LambdaConcurrency: 1000, LambdaScaling: 1000, ESMConcurrency: 1000, ESMScaling: 300,
		APIRate: 10000, APIBurst: 5000,
		TableUnits: 40000, WarmWrites: 4000, WarmReads: 12000, PartitionWrites: 1000, PartitionReads: 3000,
		SQSInFlight: 120000,
	}
}

// PlanSettings are what a plan needs besides the run's figures: the
// template's settings, as plain values, and the quotas.
type PlanSettings struct {
	Quotas Quotas
	// StageRate and StageBurst are the HTTP API stage's route throttling
	// (ThrottlingRateLimit, ThrottlingBurstLimit; 0: not set).
	StageRate, StageBurst float64
	// WorkerBatchSize and WorkerMaxConcurrency are the payment worker's
	// event source: BatchSize and ScalingConfig.MaximumConcurrency (0: not
	// set).
	WorkerBatchSize, WorkerMaxConcurrency float64
	// OneKeyPerSource names the tables and indexes ("table/index") whose
	// partition key is the webhook's source, so that all of one source's
	// writes land on one partition key value.
	OneKeyPerSource []string
	// ShardsPerSource names the tables and indexes whose partition key is
	// a source's shard, with how many shards a source has
	// (intake.ReceivedShards for the replay index).
	ShardsPerSource map[string]float64
	// Sources is how many sources share the rate evenly (0: one).
	Sources float64
}

// Verdicts of a plan line against its quota.
const (
	QuotaMeets = "meets"
	QuotaRaise = "raise"
	// QuotaNoFix is a limit that raising no quota lifts: the design must
	// change.
	QuotaNoFix = "no quota fixes it"
	// QuotaNone is a service that sets no limit at the rate.
	QuotaNone = "no quota"
	// QuotaUnmeasured is a figure the run did not measure.
	QuotaUnmeasured = "not measured"
)

// Plan is what a rate needs of AWS, worked from one run's measured
// calls, units and latencies.
type Plan struct {
	Rate float64 `json:"rate"`
	// From names the run and the figures the plan is worked from.
	From  string     `json:"from"`
	Lines []PlanLine `json:"lines"`
	// CostPerDay is a day at Rate, by service, priced as the run's cost
	// per million events was.
	CostPerDay Cost `json:"cost_per_day"`
}

// PlanLine is one resource's need at the plan's rate and its quota.
type PlanLine struct {
	// What is the resource ("Lambda ReceiverFunction concurrency").
	What string  `json:"what"`
	Need float64 `json:"need"`
	Unit string  `json:"unit"`
	// Limit is the quota or setting the need is held against, named by
	// LimitName (0 and "": none).
	Limit     float64 `json:"limit,omitempty"`
	LimitName string  `json:"limit_name,omitempty"`
	// Verdict is one of the Quota constants; RaiseTo is set with
	// QuotaRaise.
	Verdict string  `json:"quota"`
	RaiseTo float64 `json:"raise_to,omitempty"`
	// How says how the need was worked out, and the fix.
	How string `json:"how"`
}

// Quota is the line's quota column: "meets", "raise to 5,000", "no quota
// fixes it".
func (l PlanLine) Quota() string {
	if l.Verdict == QuotaRaise {
		return "raise to " + thousands(l.RaiseTo)
	}
	return l.Verdict
}

// Stage names the plan reads durations from ([Stage]).
const (
	receiverStage = "receiver (sent → 200)"
	workerStage   = "worker (picked up → charged)"
)

// PlanFor works out what rate webhooks a second need of AWS from r's
// measured figures: Lambda concurrency per function from the rate and
// the stages' p99 durations, DynamoDB units per table, index and
// partition from the units per event, SQS requests from the calls per
// event, API Gateway's rate against its throttles, and the cost of a
// day. It is pure: the same report and settings give the same plan.
func PlanFor(r *Report, rate float64, s PlanSettings) (*Plan, error) {
	if r == nil || !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("%w: a rate above 0 and a report are needed", ErrNoPlan)
	}
	if len(r.CallsPerEvent) == 0 {
		return nil, fmt.Errorf("%w: the run measured no AWS calls", ErrNoPlan)
	}
	if s.Sources <= 0 {
		s.Sources = 1
	}
	if s.WorkerBatchSize <= 0 {
		s.WorkerBatchSize = 10
	}
	p := &Plan{Rate: rate, From: planSource(r)}
	p.Lines = append(p.Lines, apiLines(rate, s)...)
	p.Lines = append(p.Lines, lambdaLines(r, rate, s)...)
	p.Lines = append(p.Lines, sqsLines(r, rate, s)...)
	p.Lines = append(p.Lines, dynamoLines(r, rate, s)...)
	p.CostPerDay = costPerDay(r.CostPerMillion, rate)
	return p, nil
}

func planSource(r *Report) string {
	units := fmt.Sprintf("%.2f write and %.2f read units", r.Units.Write, r.Units.Read)
	if !r.Units.Metered {
		units += " (one a call: the capacity model was off, a lower bound)"
	}
	return fmt.Sprintf("run %s at %g webhooks/s for %s, body %s, %d bytes: per event %.2f AWS calls, %s",
		r.Name, r.Rate, r.Duration, r.Payload, r.PayloadBytes, r.AWSCalls, units)
}

// judge sets a line's verdict: it meets limit, or the quota is raised to
// need rounded up to step.
func judge(l PlanLine, limit float64, name string, step float64) PlanLine {
	l.Limit, l.LimitName = limit, name
	if l.Need <= limit {
		l.Verdict = QuotaMeets
		return l
	}
	l.Verdict, l.RaiseTo = QuotaRaise, roundUp(l.Need, step)
	return l
}

func roundUp(x, step float64) float64 { return math.Ceil(x/step) * step }

func apiLines(rate float64, s PlanSettings) []PlanLine {
	q := s.Quotas
	account := judge(PlanLine{What: "API Gateway requests, account", Need: rate, Unit: "requests/s",
		How: fmt.Sprintf("one request a webhook; the burst AWS sets with the rate quota is %s requests, not a quota one asks for", thousands(q.APIBurst))},
		q.APIRate, "account throttle per Region", 1000)
	stage := PlanLine{What: "API Gateway requests, HTTP API stage", Need: rate, Unit: "requests/s"}
	if s.StageRate <= 0 {
		stage.Verdict, stage.How = QuotaMeets, "the stage sets no throttling: the account's applies"
		return []PlanLine{account, stage}
	}
	stage = judge(stage, s.StageRate, "template: HttpApiStage ThrottlingRateLimit", 100)
	stage.How = fmt.Sprintf("a template setting, not a quota: set ThrottlingRateLimit to the rate and ThrottlingBurstLimit (%s now) to %s, at most the account's burst",
		thousands(s.StageBurst), thousands(math.Min(math.Max(rate, s.StageBurst), q.APIBurst)))
	if stage.Verdict == QuotaMeets {
		stage.How = fmt.Sprintf("ThrottlingBurstLimit %s", thousands(s.StageBurst))
	}
	return []PlanLine{account, stage}
}

// stageP99 is the p99 of the named stage, in seconds (0: not measured).
func stageP99(st []Stage, name string) float64 { return stageOf(st, name).P99 / 1000 }

func stageOf(st []Stage, name string) Stage {
	for _, s := range st {
		if s.Name == name {
			return s
		}
	}
	return Stage{}
}

// eventsPerBatch is how full the worker's batches were: events over the
// batch deletes, between one and the batch size.
func eventsPerBatch(r *Report, size float64) float64 {
	deletes := r.CallsPerEvent["SQS.DeleteMessageBatch"]
	if deletes <= 0 {
		return 1
	}
	return math.Min(math.Max(1/deletes, 1), size)
}

func lambdaLines(r *Report, rate float64, s PlanSettings) []PlanLine {
	q := s.Quotas
	recvSec, workSec := stageP99(r.Stages, receiverStage), stageP99(r.Stages, workerStage)
	fill := eventsPerBatch(r, s.WorkerBatchSize)
	recv := PlanLine{What: "Lambda ReceiverFunction concurrency", Need: rate * recvSec, Unit: "concurrent executions"}
	recv = judge(recv, q.LambdaConcurrency, "account concurrent executions", 100)
	recvP50 := stageOf(r.Stages, receiverStage).P50
	recv.How = fmt.Sprintf("%s webhooks/s × %.1f ms (receiver p99, sent → 200; at its p50 of %.1f ms, %s); it adds %s environments every 10 s, so it reaches this in %.0f s from cold",
		thousands(rate), 1000*recvSec, recvP50, needText(rate*recvP50/1000), thousands(q.LambdaScaling), 10*math.Ceil(recv.Need/q.LambdaScaling))
	work := PlanLine{What: "Lambda PaymentWorkerFunction concurrency", Need: rate / fill * workSec, Unit: "concurrent executions"}
	switch {
	case work.Need > q.ESMConcurrency:
		work.Limit, work.LimitName, work.Verdict = q.ESMConcurrency, "event source MaximumConcurrency (at most)", QuotaNoFix
	case s.WorkerMaxConcurrency > 0:
		work = judge(work, s.WorkerMaxConcurrency, "template: PaymentsEventSource MaximumConcurrency", 10)
	default:
		work.Verdict = QuotaMeets
	}
	work.How = fmt.Sprintf("%s batches/s (%.2f events a batch, as measured; at most %g) × %.1f ms (worker p99, picked up → charged: a batch's records run at once); the event source adds %s concurrent batches a minute",
		thousands(rate/fill), fill, s.WorkerBatchSize, 1000*workSec, thousands(q.ESMScaling))
	if work.Verdict == QuotaNoFix {
		work.How += "; more than one event source can run: split the queue"
	}
	lines := []PlanLine{recv, work}
	if recvSec == 0 || workSec == 0 {
		for i := range lines {
			lines[i].Verdict, lines[i].RaiseTo, lines[i].How = QuotaUnmeasured, 0, "the run measured no duration for this stage"
		}
		return lines
	}
	total := judge(PlanLine{What: "Lambda concurrency, account", Need: recv.Need + work.Need, Unit: "concurrent executions",
		How: "both functions draw on the account's pool, with every other function of the Region"},
		q.LambdaConcurrency, "account concurrent executions", 100)
	return append(lines, total)
}

// sqsPerEvent is an event's SQS requests as AWS bills them: the calls
// the run made, with one long-polled receive a batch for the short polls
// of the local event source and without the lab's queue-depth reads.
func sqsPerEvent(r *Report, fill float64) float64 {
	n := 1 / fill
	for op, v := range r.CallsPerEvent {
		if strings.HasPrefix(op, "SQS.") && op != "SQS.ReceiveMessage" && op != "SQS.GetQueueAttributes" {
			n += v
		}
	}
	return n
}

func sqsLines(r *Report, rate float64, s PlanSettings) []PlanLine {
	fill := eventsPerBatch(r, s.WorkerBatchSize)
	per := sqsPerEvent(r, fill)
	reqs := PlanLine{What: "SQS requests, payments queue", Need: rate * per, Unit: "requests/s", Verdict: QuotaNone,
		How: fmt.Sprintf("%.2f a webhook (send, one receive and one batch delete a batch); a standard queue takes a nearly unlimited number of calls a second for each action", per)}
	inFlight := PlanLine{What: "SQS messages in flight, payments queue", Need: rate * stageP99(r.Stages, workerStage), Unit: "messages",
		How: "the rate × the worker's p99: received and not yet deleted"}
	return []PlanLine{reqs, judge(inFlight, s.Quotas.SQSInFlight, "standard queue in-flight messages", 1000)}
}

func dynamoLines(r *Report, rate float64, s PlanSettings) []PlanLine {
	var lines []PlanLine
	for _, name := range slices.Sorted(maps.Keys(r.Units.ByTable)) {
		u := r.Units.ByTable[name]
		lines = append(lines, tableLines(name, u, rate, s)...)
	}
	return lines
}

func tableLines(name string, u TableUnits, rate float64, s PlanSettings) []PlanLine {
	q := s.Quotas
	kind := "table"
	if strings.Contains(name, "/") {
		kind = "index"
	}
	var lines []PlanLine
	for _, d := range []struct {
		what        string
		perEvent    float64
		quota, warm float64
		unit        string
	}{{"writes", u.Write, q.TableUnits, q.WarmWrites, "write units/s"}, {"reads", u.Read, q.TableUnits, q.WarmReads, "read units/s"}} {
		if d.perEvent <= 0 {
			continue
		}
		need := rate * d.perEvent
		l := judge(PlanLine{What: fmt.Sprintf("DynamoDB %s %s", name, d.what), Need: need, Unit: d.unit,
			How: fmt.Sprintf("%.2f a webhook, measured; on-demand, so no account quota", d.perEvent)}, d.quota, "on-demand per "+kind, 1000)
		lines = append(lines, l)
		warm := judge(PlanLine{What: fmt.Sprintf("DynamoDB %s %s at once", name, d.what), Need: need, Unit: d.unit,
			How: "what a new on-demand " + kind + " serves before it scales (twice its peak within 30 minutes): pre-warm it (WarmThroughput) before the load"},
			d.warm, "warm throughput of a new "+kind, 1000)
		lines = append(lines, warm)
	}
	if u.Write > 0 {
		lines = append(lines, partitionLine(name, u, rate, s))
	}
	return lines
}

// partitionLine is the busiest partition of a table or index: one
// partition key value per source takes all of a source's writes, which
// no quota lifts past a partition's limit; a key per event spreads them.
func partitionLine(name string, u TableUnits, rate float64, s PlanSettings) PlanLine {
	q := s.Quotas
	if shards := s.ShardsPerSource[name]; shards > 0 {
		return shardLine(name, u, rate, shards, s)
	}
	if !slices.Contains(s.OneKeyPerSource, name) {
		return PlanLine{What: "DynamoDB " + name + " partitions", Need: math.Ceil(rate * u.Write / q.PartitionWrites), Unit: "partitions at least",
			Verdict: QuotaMeets, How: fmt.Sprintf("a key per event, so the writes spread; at %s write units a partition they need this many, which on-demand splits to as it scales", thousands(q.PartitionWrites))}
	}
	need := rate * u.Write / s.Sources
	l := PlanLine{What: "DynamoDB " + name + " one source's partition", Need: need, Unit: "write units/s",
		Limit: q.PartitionWrites, LimitName: "one partition key value"}
	perSource := q.PartitionWrites / u.Write
	if need <= q.PartitionWrites {
		l.Verdict = QuotaMeets
		l.How = fmt.Sprintf("its partition key is the source: one source can send at most %s webhooks/s", thousands(perSource))
		return l
	}
	shards := math.Ceil(need / (q.PartitionWrites / 2))
	l.Verdict = QuotaNoFix
	l.How = fmt.Sprintf("its partition key is the source, so one source's writes share one partition, capped at %s webhooks/s; shard the key (source#0 … source#%.0f, %.0f shards at half a partition each) and query every shard to read a range",
		thousands(perSource), shards-1, shards)
	return l
}

// shardLine is the busiest shard of an index whose key is a source's
// shard: a source's writes spread evenly over its shards.
func shardLine(name string, u TableUnits, rate, shards float64, s PlanSettings) PlanLine {
	q := s.Quotas
	need := rate * u.Write / max(s.Sources, 1) / shards
	l := PlanLine{What: "DynamoDB " + name + " one shard of a source", Need: need, Unit: "write units/s",
		Limit: q.PartitionWrites, LimitName: "one partition key value", Verdict: QuotaMeets,
		How: fmt.Sprintf("its partition key is one of a source's %.0f shards: one source can send at most %s webhooks/s", shards, thousands(shards*q.PartitionWrites/u.Write))}
	if need > q.PartitionWrites {
		l.Verdict = QuotaNoFix
		l.How += "; raise the shard count (intake.ReceivedShards) and query every shard to read a range"
	}
	return l
}

func costPerDay(perMillion Cost, rate float64) Cost {
	f := rate * 86400 / 1e6
	return Cost{APIGateway: perMillion.APIGateway * f, Lambda: perMillion.Lambda * f, SQS: perMillion.SQS * f,
		DynamoDB: perMillion.DynamoDB * f, Total: perMillion.Total * f, Prices: perMillion.Prices}
}

// WritePlan writes p as a table, what, the need, what it is held against
// and the quota column, each row followed by how it was worked out.
func WritePlan(w io.Writer, p *Plan) {
	fmt.Fprintf(w, "capacity plan at %s webhooks/s, worked from the %s\n", thousands(p.Rate), p.From)
	rows := [][]string{{"what", "needs", "against", "quota"}}
	for _, l := range p.Lines {
		against := "-"
		if l.LimitName != "" {
			against = thousands(l.Limit) + " (" + l.LimitName + ")"
		}
		rows = append(rows, []string{l.What, needText(l.Need) + " " + l.Unit, against, l.Quota()})
	}
	width := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			width[i] = max(width[i], utf8.RuneCountInString(cell))
		}
	}
	for i, row := range rows {
		var b strings.Builder
		for j, cell := range row {
			b.WriteString(cell)
			if j < len(row)-1 {
				b.WriteString(strings.Repeat(" ", width[j]-utf8.RuneCountInString(cell)+2))
			}
		}
		fmt.Fprintf(w, "  %s\n", b.String())
		if i > 0 {
			fmt.Fprintf(w, "      %s\n", p.Lines[i-1].How)
		}
	}
	c := p.CostPerDay
	fmt.Fprintf(w, "cost per day at %s webhooks/s: $%s (API Gateway %s, Lambda %s, SQS %s, DynamoDB %s; %s)\n",
		thousands(p.Rate), thousands(c.Total), thousands(c.APIGateway), thousands(c.Lambda), thousands(c.SQS), thousands(c.DynamoDB), c.Prices)
}

// needText rounds a need up: a plan never asks for less than it needs.
func needText(x float64) string {
	if x > 0 && x < 10 {
		return fmt.Sprintf("%.1f", math.Ceil(x*10)/10)
	}
	return thousands(math.Ceil(x))
}
