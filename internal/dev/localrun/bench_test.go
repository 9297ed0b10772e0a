package localrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/period"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/webhook"
)

var tippingEvent = regexp.MustCompile(`event=(\S+)`)

// BenchmarkE2EUsage sends signed usage webhooks from 32 concurrent
// connections through the receiver, SQS and the spend worker into the
// ledger: 20 workloads with a cap of 1000 units, 50 events of 25 units
// each, so every workload crosses its cap once. It reports events/s and
// the latency from the tipping event's webhook to its page at the pager
// sink (enforcement plus the outbox). Run with -benchtime 1x.
func BenchmarkE2EUsage(b *testing.B) {
	for range b.N {
		runUsageE2E(b, 20, 50, 25)
	}
}

func runUsageE2E(b *testing.B, workloads, perWorkload int, units int64) {
	u := startUsageBench(b, workloads, 0)
	defer u.sys.Close()
	sys := u.sys
	n := workloads * perWorkload
	b.ResetTimer()
	start := time.Now()
	sent := sendUsage(b, sys, workloads, n, units)
	elapsed, lat := u.settle(b, workloads, int64(perWorkload)*units, start, sent)
	rate := float64(n) / elapsed.Seconds()
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "event_to_page_p50_ms")
	b.ReportMetric(float64(lat[len(lat)-1].Milliseconds()), "event_to_page_max_ms")
	fmt.Printf("usage e2e: %d events over %d workloads, %.0f events/s attributed, event→page p50 %s max %s (%d pages, one per workload)\n",
		n, workloads, rate, lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), len(lat))
}

// usageBench is a local system with workloads wl-00, wl-01, ... capped at
// 1000 units, recording when each tipping event's page reaches the pager
// sink.
type usageBench struct {
	sys   *localrun.System
	spend *spend.Spend
	mu    sync.Mutex
	paged map[string]time.Time // tipping event ID -> page arrival
}

// startUsageBench starts the system (concurrency 0: the default) and
// creates the workloads.
func startUsageBench(b *testing.B, workloads, concurrency int) *usageBench {
	return startUsageBenchEnv(b, workloads, concurrency, nil)
}

// startUsageBenchEnv is startUsageBench with the system's variables read
// from env instead of none.
func startUsageBenchEnv(b *testing.B, workloads, concurrency int, env map[string]string) *usageBench {
	u := &usageBench{paged: map[string]time.Time{}}
	sys, err := localrun.Start(context.Background(), localrun.Config{
		Addr: "127.0.0.1:0", MaxConcurrency: concurrency, Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Sim: providersim.Config{OnPage: u.onPage},
	})
	if err != nil {
		b.Fatal(err)
	}
	u.sys = sys
	ledger, err := sys.Ledger()
	if err != nil {
		sys.Close()
		b.Fatal(err)
	}
	u.spend = ledger.Spend
	for w := range workloads {
		if _, err := u.spend.Workloads.CreateWorkload(context.Background(), spend.NewWorkload{ID: fmt.Sprintf("wl-%02d", w), Owner: "bench", RoutingKey: "rk", Cap: 1000}); err != nil {
			sys.Close()
			b.Fatal(err)
		}
	}
	return u
}

func (u *usageBench) onPage(ev pager.Event) {
	if ev.Payload == nil {
		return
	}
	if m := tippingEvent.FindStringSubmatch(ev.Payload.Summary); m != nil {
		u.mu.Lock()
		u.paged[m[1]] = time.Now()
		u.mu.Unlock()
	}
}

// settle waits until every workload holds want units, stops the timer, waits
// for one page per workload, and returns the time from start to full
// attribution and each page's latency from its event's send, sorted.
func (u *usageBench) settle(b *testing.B, workloads int, want int64, start time.Time, sent map[string]time.Time) (time.Duration, []time.Duration) {
	for !allAttributed(context.Background(), u.spend, workloads, want) {
		time.Sleep(20 * time.Millisecond)
		if time.Since(start) > 5*time.Minute {
			b.Fatal("usage not attributed within 5 minutes")
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	for deadline := time.Now().Add(30 * time.Second); ; {
		u.mu.Lock()
		got := len(u.paged)
		u.mu.Unlock()
		if got >= workloads || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var lat []time.Duration
	u.mu.Lock()
	for ev, at := range u.paged {
		lat = append(lat, at.Sub(sent[ev]))
	}
	u.mu.Unlock()
	if len(lat) != workloads {
		b.Fatalf("%d pages for %d workloads", len(lat), workloads)
	}
	slices.Sort(lat)
	return elapsed, lat
}

func allAttributed(ctx context.Context, s *spend.Spend, workloads int, want int64) bool {
	for w := range workloads {
		wl, err := s.Workloads.Get(ctx, fmt.Sprintf("wl-%02d", w))
		if err != nil || wl.Total != want {
			return false
		}
	}
	return true
}

// sendUsage posts n usage webhooks round-robin over the workloads from 32
// goroutines and returns when each event was sent.
func sendUsage(b *testing.B, sys *localrun.System, workloads, n int, units int64) map[string]time.Time {
	secret := localrun.DevSecrets[localrun.SecretVar("usage")]
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	ids := make(chan int)
	var mu sync.Mutex
	sent := make(map[string]time.Time, n)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range ids {
				rec := fmt.Sprintf("ur_bench_%06d", i)
				ev := provider.UsageEvent{ID: "evt_" + rec, Type: provider.UsageEventType, Created: time.Now().UTC(),
					Data: provider.UsageRecord{RecordID: rec, WorkloadRef: fmt.Sprintf("wl-%02d", i%workloads), Units: units, OccurredAt: time.Now().UTC()}}
				body, _ := json.Marshal(ev)
				h, _ := webhook.SignHeaders(webhook.SchemeStandard, []string{secret}, ev.ID, time.Now(), body)
				req, _ := http.NewRequest(http.MethodPost, sys.URL+"/webhooks/usage", bytes.NewReader(body))
				req.Header = h
				req.Header.Set("Content-Type", "application/json")
				at := time.Now()
				resp, err := client.Do(req)
				if err != nil || resp.StatusCode != 200 {
					b.Errorf("usage webhook %s: %v %v", ev.ID, err, resp)
					continue
				}
				io.Copy(io.Discard, resp.Body) // to its end, so the connection is reused
				resp.Body.Close()
				mu.Lock()
				sent[ev.ID] = at
				mu.Unlock()
			}
		})
	}
	for i := range n {
		ids <- i
	}
	close(ids)
	wg.Wait()
	return sent
}

var (
	pacedRate        = flag.Int("usage.rate", 500, "arrival rate of BenchmarkUsagePaced, events/s")
	pacedConcurrency = flag.Int("usage.concurrency", 0, "concurrent spend-worker invocations (0: localrun's default)")
)

// BenchmarkUsagePaced offers signed usage webhooks at a fixed arrival rate
// (open loop: each event is sent at its scheduled time whether or not the
// earlier ones were answered; -usage.rate, default 500/s) for 100
// workloads with a cap of 1000, 25 events of 50 units each, so every
// workload crosses its cap once. It reports the offered and attributed
// rates, their ratio (1.0: the path keeps up), and the latency from each
// tipping event's webhook to its page at the pager sink, p50 and p99.
// Run with -benchtime 1x.
func BenchmarkUsagePaced(b *testing.B) {
	for range b.N {
		runUsagePaced(b, 100, 25, 50, *pacedRate)
	}
}

func runUsagePaced(b *testing.B, workloads, perWorkload int, units int64, rate int) {
	u := startUsageBench(b, workloads, *pacedConcurrency)
	defer u.sys.Close()
	sys := u.sys
	n := workloads * perWorkload
	secret := localrun.DevSecrets[localrun.SecretVar("usage")]
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	var smu sync.Mutex
	sent := make(map[string]time.Time, n)
	var wg sync.WaitGroup
	var retries atomic.Int64
	b.ResetTimer()
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(at))
		wg.Go(func() {
			rec := fmt.Sprintf("ur_paced_%06d", i)
			ev := provider.UsageEvent{ID: "evt_" + rec, Type: provider.UsageEventType, Created: time.Now().UTC(),
				Data: provider.UsageRecord{RecordID: rec, WorkloadRef: fmt.Sprintf("wl-%02d", i%workloads), Units: units, OccurredAt: time.Now().UTC()}}
			body, _ := json.Marshal(ev)
			sentAt := time.Now()
			// As a provider does, retry a 5xx (the receiver sheds load
			// with 503 when intake cannot keep up) after a backoff.
			for attempt, wait := 1, 100*time.Millisecond; ; attempt, wait = attempt+1, wait*2 {
				h, _ := webhook.SignHeaders(webhook.SchemeStandard, []string{secret}, ev.ID, time.Now(), body)
				req, _ := http.NewRequest(http.MethodPost, sys.URL+"/webhooks/usage", bytes.NewReader(body))
				req.Header = h
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				status := 0
				if err == nil {
					status = resp.StatusCode
					io.Copy(io.Discard, resp.Body) // to its end, so the connection is reused
					resp.Body.Close()
				}
				if status == http.StatusOK {
					break
				}
				if (err == nil && status < 500) || attempt == 6 {
					b.Errorf("usage webhook %s: status %d, %v (attempt %d)", ev.ID, status, err, attempt)
					return
				}
				retries.Add(1)
				time.Sleep(wait)
			}
			smu.Lock()
			sent[ev.ID] = sentAt
			smu.Unlock()
		})
	}
	offered := float64(n) / time.Since(start).Seconds()
	wg.Wait()
	elapsed, lat := u.settle(b, workloads, int64(perWorkload)*units, start, sent)
	attributed := float64(n) / elapsed.Seconds()
	p50, p99 := lat[len(lat)/2], lat[(len(lat)*99)/100]
	b.ReportMetric(offered, "offered/s")
	b.ReportMetric(attributed, "attributed/s")
	b.ReportMetric(attributed/offered, "attributed/offered")
	b.ReportMetric(float64(p50.Milliseconds()), "event_to_page_p50_ms")
	b.ReportMetric(float64(p99.Milliseconds()), "event_to_page_p99_ms")
	b.ReportMetric(float64(retries.Load()), "retried_5xx")
	b.ReportMetric(0, "ns/op")
	fmt.Printf("usage paced: %d events offered at %.0f/s, attributed at %.0f/s (attributed ÷ offered %.2f), event→page p50 %s p99 %s (%d pages), %d 5xx answers retried\n",
		n, offered, attributed, attributed/offered, p50.Round(time.Millisecond), p99.Round(time.Millisecond), len(lat), retries.Load())
}

var hotEvents = flag.Int("hot.events", 3000, "usage events BenchmarkHotWorkload sends in each half of its run")

// BenchmarkHotWorkload sends usage webhooks for ONE workload, paced at
// 500/s (open loop, as BenchmarkUsagePaced), through the local system
// twice in the same run: with the local DynamoDB's model of AWS's limits
// off (the baseline) and on (per-partition throughput: 1,000 write units
// a second on the workload's item, and the conflicts of transactions on
// it). It reports each half's rate (events over the time from the first
// send to the last record in the ledger), their ratio on/off, the p99 of
// event → ledger (webhook sent → the ledger entry's accepted_at), the
// usage DLQ's depth and the throttles the model answered. The exact total
// and the empty DLQ are checked; nothing timed is. Run with -benchtime 1x.
func BenchmarkHotWorkload(b *testing.B) {
	for range b.N {
		off := runHot(b, false, *hotEvents, 500)
		on := runHot(b, true, *hotEvents, 500)
		reportHot(b, off, on)
		b.ReportMetric(on.workloadWCU, "on_workload_wcu/s")
		fmt.Printf("hot workload: %d events at 500/s to one workload; limits off %.0f/s (event→ledger p99 %s), on %.0f/s (p99 %s, %d throttles answered, the workload's item at %.0f write units/s of 1,000); ratio on/off %.2f; %d dead letters\n",
			*hotEvents, off.rate, off.p99.Round(time.Millisecond), on.rate, on.p99.Round(time.Millisecond), on.throttles, on.workloadWCU,
			on.rate/off.rate, off.dead+on.dead)
	}
}

// reportHot reports the metrics both halves of a hot-workload benchmark
// share: the ratio on/off, each half's rate and p99, the dead letters and
// the throttles.
func reportHot(b *testing.B, off, on hotRun) {
	b.ReportMetric(on.rate/off.rate, "ratio_on/off")
	b.ReportMetric(off.rate, "off_events/s")
	b.ReportMetric(on.rate, "on_events/s")
	b.ReportMetric(float64(off.p99.Milliseconds()), "off_ledger_p99_ms")
	b.ReportMetric(float64(on.p99.Milliseconds()), "on_ledger_p99_ms")
	b.ReportMetric(float64(off.dead+on.dead), "dead_letters")
	b.ReportMetric(float64(on.throttles), "on_throttles")
	b.ReportMetric(0, "ns/op")
}

// hotRun is one half of a hot-workload benchmark.
type hotRun struct {
	rate      float64
	p99       time.Duration
	dead      int
	throttles int64
	// workloadWCU is the write units a second the workloads table took
	// (the hot workload's item, and nothing else is written there).
	workloadWCU float64
	// For a run that crosses a period's boundary: crossing is how long
	// the move of the clock waited for the invocations in flight, and
	// before and after the totals of the periods either side of it.
	crossing      time.Duration
	before, after int64
}

// hotUnits is what each event of a hot-workload benchmark counts.
const hotUnits = 3

// hotLoad is what a hot-workload benchmark sends to its one workload,
// "hot": the system's variables, the door's path, how a delivery is
// signed, and event i's message ID, body and ledger record ID, made at
// now by the run's clock. measured, when set, reads what it needs from
// the system before it closes. periods, when not a lifetime total, is
// the workload's period, and the run crosses one of its boundaries
// mid-run (runHotLoad says how).
type hotLoad struct {
	env      map[string]string
	path     string
	sign     providersim.Signer
	event    func(i int, now time.Time) (msgID string, body []byte, record string)
	measured func(u *usageBench)
	periods  spend.Periods
}

// usageHot is BenchmarkHotWorkload's load: usage.recorded webhooks on the
// usage source.
func usageHot() hotLoad {
	return hotLoad{path: "/webhooks/usage",
		sign: providersim.StandardSigner(localrun.DevSecrets[localrun.SecretVar("usage")], "application/json", false),
		event: func(i int, now time.Time) (string, []byte, string) {
			rec := fmt.Sprintf("ur_hot_%06d", i)
			ev := provider.UsageEvent{ID: "evt_" + rec, Type: provider.UsageEventType, Created: now.UTC(),
				Data: provider.UsageRecord{RecordID: rec, WorkloadRef: "hot", Units: hotUnits, OccurredAt: now.UTC()}}
			body, _ := json.Marshal(ev)
			return ev.ID, body, rec
		}}
}

// runHot sends n usage events for one workload at rate/s with the
// model on or off, waits for the exact total and measures.
func runHot(b *testing.B, model bool, n, rate int) hotRun {
	return runHotLoad(b, model, n, rate, usageHot())
}

// runHotLoad is runHot for any load. Events are made and signed at the
// run's clock. For a load with a period, the clock is first set to 30 s
// before the end of the period after the one that holds it, and at the
// run's middle event to that end (unless wall time took it there
// first): the events before it count in the period before the boundary
// (those still in flight arrive late, inside the grace), the rest in the
// one after it, and the workload's total is both periods' totals. The
// move is short, so that the signatures made before it are still inside
// the receivers' replay window after it, as they are when a real clock
// crosses a boundary.
func runHotLoad(b *testing.B, model bool, n, rate int, load hotLoad) hotRun {
	b.Setenv(localaws.ModelEnv, map[bool]string{true: "on", false: "off"}[model])
	u := startUsageBenchEnv(b, 0, 0, load.env)
	defer u.sys.Close()
	ctx := context.Background()
	want := int64(n) * hotUnits
	// A cap far above the run's total: the bench measures attribution,
	// not enforcement.
	if _, err := u.spend.Workloads.CreateWorkload(ctx, spend.NewWorkload{ID: "hot", Owner: "bench", RoutingKey: "rk", Cap: 1000 * want,
		Periods: load.periods}); err != nil {
		b.Fatal(err)
	}
	var boundary time.Time
	if !load.periods.Lifetime() {
		boundary = hotBoundary(b, u.sys.Clock(), load.periods)
	}
	// The clock's lead on wall time before the boundary's move and after
	// it, to read the ledger's accepted_at (the run's time) as wall time.
	aheadBefore, aheadAfter := u.sys.Clock().Ahead(), u.sys.Clock().Ahead()
	var crossing time.Duration
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	sent := make([]time.Time, n)
	records := make([]string, n)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		if i == n/2 && !boundary.IsZero() && u.sys.Clock().Now().Before(boundary) {
			moved := time.Now()
			if _, err := u.sys.Clock().Set(boundary); err != nil {
				b.Fatal(err)
			}
			crossing, aheadAfter = time.Since(moved), u.sys.Clock().Ahead()
		}
		wg.Go(func() {
			msgID, body, rec := load.event(i, u.sys.Clock().Now())
			records[i] = rec
			sent[i] = time.Now()
			for attempt, wait := 1, 100*time.Millisecond; ; attempt, wait = attempt+1, wait*2 {
				h, _ := load.sign(msgID, u.sys.Clock().Now(), body)
				req, _ := http.NewRequest(http.MethodPost, u.sys.URL+load.path, bytes.NewReader(body))
				req.Header = h
				resp, err := client.Do(req)
				status := 0
				if err == nil {
					status = resp.StatusCode
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if status == http.StatusOK {
					return
				}
				if (err == nil && status < 500) || attempt == 6 {
					b.Errorf("usage webhook %s: status %d, %v (attempt %d)", msgID, status, err, attempt)
					return
				}
				time.Sleep(wait)
			}
		})
	}
	wg.Wait()
	var total int64
	for {
		if t, err := hotTotal(ctx, u.spend, load.periods); err == nil {
			total = t
		}
		if total >= want || time.Since(start) > 3*time.Minute {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if total != want {
		b.Fatalf("model %v: workload total %d, want exactly %d", model, total, want)
	}
	lat := make([]time.Duration, 0, n)
	for i := range n {
		e, err := u.spend.Ledger.Entry(ctx, records[i])
		if err != nil {
			b.Fatalf("entry %d: %v", i, err)
		}
		ahead := aheadBefore
		if !boundary.IsZero() && !e.AcceptedAt.Before(boundary) {
			ahead = aheadAfter
		}
		lat = append(lat, e.AcceptedAt.Add(-ahead).Sub(sent[i]))
	}
	slices.Sort(lat)
	run := hotRun{rate: float64(n) / elapsed.Seconds(), p99: lat[len(lat)*99/100], dead: dlqDepth(b, u.sys), crossing: crossing}
	if !boundary.IsZero() {
		run.before, run.after = hotPeriods(b, u.spend, boundary)
	}
	if run.dead != 0 {
		b.Fatalf("model %v: %d usage records dead-lettered", model, run.dead)
	}
	capacity := u.sys.AWS.Capacity()
	run.workloadWCU = capacity.Tables[u.sys.AWS.TableName("WorkloadsTable")].WriteUnits / elapsed.Seconds()
	for _, t := range capacity.Tables {
		run.throttles += t.ReadThrottles + t.WriteThrottles
		for _, ix := range t.Indexes {
			run.throttles += ix.ReadThrottles + ix.WriteThrottles
		}
	}
	if load.measured != nil {
		load.measured(u)
	}
	return run
}

// dlqDepth is the number of messages in the usage DLQ.
func dlqDepth(b *testing.B, sys *localrun.System) int {
	out, err := sys.AWS.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(sys.AWS.QueueURL("UsageDLQ")), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		b.Fatal(err)
	}
	depth, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	return depth
}

// hotTotal is the hot workload's total: its lifetime total, or for a
// workload with a period the current period's and the one before it
// (the run crosses one boundary).
func hotTotal(ctx context.Context, s *spend.Spend, p spend.Periods) (int64, error) {
	if p.Lifetime() {
		wl, err := s.Workloads.Get(ctx, "hot")
		return wl.Total, err
	}
	cur, prev, err := s.Explainer.Periods(ctx, "hot")
	if err != nil || cur == nil {
		return 0, err
	}
	total := cur.Total
	if prev != nil {
		total += prev.Total
	}
	return total, nil
}

// hotBoundary sets clock to 30 s before the end of the period of p
// after the one that holds it (so that the clock only moves forward,
// whatever the hour of the run), and returns that end: the boundary the
// run crosses.
func hotBoundary(b *testing.B, clock *localrun.Clock, p spend.Periods) time.Time {
	b.Helper()
	cur, err := p.At(clock.Now())
	if err != nil {
		b.Fatal(err)
	}
	next, err := p.At(cur.End)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := clock.Set(next.End.Add(-30 * time.Second)); err != nil {
		b.Fatal(err)
	}
	return next.End
}

// hotPeriods checks that the hot workload crossed boundary: its current
// period starts there, the one before ends there, and both hold usage.
// It returns both periods' totals.
func hotPeriods(b *testing.B, s *spend.Spend, boundary time.Time) (before, after int64) {
	b.Helper()
	cur, prev, err := s.Explainer.Periods(context.Background(), "hot")
	if err != nil || cur == nil || prev == nil {
		b.Fatalf("the hot workload's periods: %v, %v, %v", cur, prev, err)
	}
	if !cur.Period.Start.Equal(boundary) || !prev.Period.End.Equal(boundary) || cur.Total == 0 || prev.Total == 0 {
		b.Fatalf("periods %s (total %d) and %s (total %d), want both sides of %s with usage",
			prev.Period, prev.Total, cur.Period, cur.Total, boundary.UTC().Format(time.RFC3339))
	}
	return prev.Total, cur.Total
}

// BenchmarkHotPeriod is BenchmarkHotWorkload with a billing period that
// the run crosses: the one workload has a day period in UTC (grace 1h),
// and the run's clock is moved across the day's end at the run's middle
// event (runHotLoad), as `hookline dev clock` moves it. It sends
// -hot.events events at 500/s (open loop) three times in the same run:
// limits off with a lifetime total (the baseline, BenchmarkHotWorkload's
// off half), limits off with the period crossed, and limits on with the
// period crossed. It reports ratio_on/off = the rate with limits on while
// crossing / the baseline's, ratio_period_off/off = the rate with limits
// off while crossing / the baseline's, each run's rate and event → ledger
// p99, how long the clock's move waited for the invocations in flight,
// and both periods' totals (checked exact: their sum is the run's
// units, and each side of the boundary holds usage). Run with -benchtime
// 1x.
func BenchmarkHotPeriod(b *testing.B) {
	day, err := spend.ParsePeriods(period.Config{Period: "day", Anchor: "2026-01-01T00:00:00", TimeZone: "UTC"}, "1h", "")
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		off := runHot(b, false, *hotEvents, 500)
		crossing := usageHot()
		crossing.periods = day
		offPeriod := runHotLoad(b, false, *hotEvents, 500, crossing)
		on := runHotLoad(b, true, *hotEvents, 500, crossing)
		reportHot(b, off, on)
		b.ReportMetric(offPeriod.rate/off.rate, "ratio_period_off/off")
		b.ReportMetric(offPeriod.rate, "period_off_events/s")
		b.ReportMetric(float64(offPeriod.p99.Milliseconds()), "period_off_ledger_p99_ms")
		b.ReportMetric(float64(on.crossing.Milliseconds()), "on_crossing_ms")
		fmt.Printf("hot period: %d events at 500/s to one workload with a UTC day period, crossing its end mid-run; limits off, lifetime: %.0f/s (p99 %s); limits off, crossing: %.0f/s (p99 %s, move waited %s, %d+%d units); limits on, crossing: %.0f/s (p99 %s, move waited %s, %d+%d units, %d throttles answered); ratio on/off %.2f, period off/off %.2f; %d dead letters\n",
			*hotEvents, off.rate, off.p99.Round(time.Millisecond), offPeriod.rate, offPeriod.p99.Round(time.Millisecond),
			offPeriod.crossing.Round(time.Millisecond), offPeriod.before, offPeriod.after, on.rate, on.p99.Round(time.Millisecond),
			on.crossing.Round(time.Millisecond), on.before, on.after, on.throttles, on.rate/off.rate, offPeriod.rate/off.rate,
			off.dead+offPeriod.dead+on.dead)
	}
}
