package paymentworker_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/lab"
	"github.com/hookline/hookline/pkg/local/lambdalocal"
	"github.com/hookline/hookline/pkg/local/localrun"
	"github.com/hookline/hookline/pkg/paymentworker"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/queue"
	"github.com/hookline/hookline/pkg/webhook"
)

// timedCharger records when each event's charge settled.
type timedCharger struct {
	paymentworker.Charger
	mu   sync.Mutex
	done map[string]time.Time
}

func (c *timedCharger) note(req provider.ChargeRequest, res provider.Result) provider.Result {
	if res.Outcome == provider.Succeeded {
		c.mu.Lock()
		if _, ok := c.done[req.EventID]; !ok {
			c.done[req.EventID] = time.Now()
		}
		c.mu.Unlock()
	}
	return res
}

func (c *timedCharger) CreateCharge(ctx context.Context, key string, req provider.ChargeRequest) provider.Result {
	return c.note(req, c.Charger.CreateCharge(ctx, key, req))
}

func benchEvents() int {
	if n, err := strconv.Atoi(os.Getenv("HOOKLINE_BENCH_EVENTS")); err == nil && n > 0 {
		return n
	}
	return 3000
}

// BenchmarkE2EPayments sends signed payment webhooks from 32 concurrent
// provider connections through the HTTP adapter, the receiver, SQS and the
// payment worker to the provider simulator (which ignores idempotency
// keys), with 0.2% of acknowledgements lost, once with the registry and
// once without it. Run it with -benchtime 1x: each iteration is a whole run.
func BenchmarkE2EPayments(b *testing.B) {
	for _, on := range []bool{true, false} {
		b.Run(fmt.Sprintf("registry=%v", on), func(b *testing.B) {
			for range b.N {
				runPaymentsE2E(b, benchEvents(), on)
			}
		})
	}
}

func runPaymentsE2E(b *testing.B, n int, registry bool) {
	sys, err := localrun.Start(context.Background(), localrun.Config{Addr: "127.0.0.1:0", NoWorkers: true, Lookup: func(string) (string, bool) { return "", false }})
	if err != nil {
		b.Fatal(err)
	}
	defer sys.Close()
	url := sys.AWS.QueueURL("payments")
	// Lost acknowledgements come back after 5 s instead of the template's 180 s.
	if _, err := sys.AWS.SQS.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"VisibilityTimeout": "5"}}); err != nil {
		b.Fatal(err)
	}
	client, _ := provider.New(provider.Config{BaseURL: sys.Sim.URL(), Timeout: 2 * time.Second})
	charger := &timedCharger{Charger: client, done: map[string]time.Time{}}
	var reg paymentworker.Registry
	if registry {
		store, _ := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: sys.AWS.DynamoDB, Table: sys.AWS.TableName("IdempotencyTable")})
		reg, _ = idempotency.New(idempotency.Config{Store: store, Namespace: "payments", CacheSize: 10000})
	} else {
		reg, charger.Charger = noRegistry{}, naiveCharger{client}
	}
	q, _ := queue.New(queue.Config{SQS: sys.AWS.SQS, URL: url, DeadLetterURL: sys.AWS.QueueURL("payments-dlq")})
	w, err := paymentworker.New(paymentworker.Config{Registry: reg, Provider: charger, Queue: q})
	if err != nil {
		b.Fatal(err)
	}
	var acks, invoking atomic.Int64
	handle := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		invoking.Add(1)
		defer invoking.Add(-1)
		return w.Handle(ctx, ev)
	}
	m, _ := lambdalocal.NewSQSMapping(lambdalocal.SQSMappingConfig{
		SQS: sys.AWS.SQS, QueueURL: url, Function: "PaymentWorkerFunction", Handler: handle, ReportBatchItemFailures: true,
		Concurrency: 8, Timeout: 30 * time.Second, DropAck: func(string) bool { return acks.Add(1)%500 == 0 },
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)

	before := sys.AWS.Calls.Snapshot()
	b.ResetTimer()
	start := time.Now()
	sent, intakeDone := sendPayments(b, sys.URL, n)
	for charger.count() < n || m.Stats().Deleted.Load() < int64(n) {
		time.Sleep(20 * time.Millisecond)
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("only %d of %d charged", charger.count(), n)
		}
	}
	elapsed := charger.last().Sub(start)
	b.StopTimer()
	after := sys.AWS.Calls.Snapshot()
	// The bare pipeline's ceiling, measured now on the same emulators: the
	// full path is compared with it, never with a constant. It replays the
	// AWS calls of one probe webhook.
	httpc := &http.Client{}
	send := func(ctx context.Context, id string) error { return postPayment(httpc, sys.URL, id, 1000) }
	settled := func(id string) bool {
		charger.mu.Lock()
		_, ok := charger.done[id]
		charger.mu.Unlock()
		return ok && invoking.Load() == 0
	}
	sc, err := lab.RecordScript(context.Background(), sys.AWS, send, settled)
	if err != nil {
		b.Fatal(err)
	}
	ceiling, err := lab.BareCeiling(context.Background(), sys.AWS, sc, n, 8)
	if err != nil {
		b.Fatal(err)
	}
	report(b, n, start, elapsed, intakeDone, sent, charger, sys.Sim.Charges.Duplicates(), before, after, ceiling)
}

func (c *timedCharger) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.done)
}

func (c *timedCharger) last() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var t time.Time
	for _, d := range c.done {
		if d.After(t) {
			t = d
		}
	}
	return t
}

// sendPayments posts n signed webhooks from 32 goroutines and returns when
// each was sent and when the last 200 arrived.
func sendPayments(b *testing.B, base string, n int) (map[string]time.Time, time.Time) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	ids := make(chan int)
	var mu sync.Mutex
	sent := make(map[string]time.Time, n)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range ids {
				id := fmt.Sprintf("evt_bench_%06d", i)
				at := time.Now()
				if err := postPayment(client, base, id, int64(1000+(i%50)*10)); err != nil {
					b.Error(err)
					continue
				}
				mu.Lock()
				sent[id] = at
				mu.Unlock()
			}
		})
	}
	for i := range n {
		ids <- i
	}
	close(ids)
	wg.Wait()
	return sent, time.Now()
}

// postPayment sends one signed payment webhook and wants a 200.
func postPayment(client *http.Client, base, id string, amount int64) error {
	secret := localrun.DevSecrets[localrun.SecretVar("payments")]
	body := []byte(paymentBody(id, amount))
	h, _ := webhook.SignHeaders(webhook.SchemeStandard, []string{secret}, id, time.Now(), body)
	req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/payments", bytes.NewReader(body))
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", id, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("webhook %s: status %d", id, resp.StatusCode)
	}
	return nil
}

func report(b *testing.B, n int, start time.Time, elapsed time.Duration, intakeDone time.Time, sent map[string]time.Time,
	charger *timedCharger, dups int, before, after map[string]int64, ceiling float64) {
	var lat []time.Duration
	charger.mu.Lock()
	for id, at := range sent {
		if d, ok := charger.done[id]; ok {
			lat = append(lat, d.Sub(at))
		}
	}
	charger.mu.Unlock()
	slices.Sort(lat)
	rate := float64(n) / elapsed.Seconds()
	intake := float64(n) / intakeDone.Sub(start).Seconds()
	calls := func(service string) float64 {
		var d int64
		for k, v := range after {
			if len(k) > len(service) && k[:len(service)+1] == service+"." {
				d += v - before[k]
			}
		}
		return float64(d) / float64(n)
	}
	b.ReportMetric(rate, "webhooks/s")
	b.ReportMetric(rate/ceiling, "x_ceiling")
	b.ReportMetric(intake, "accepted/s")
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50_ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "p99_ms")
	b.ReportMetric(float64(dups), "duplicate_charges")
	b.ReportMetric(calls("DynamoDB"), "ddb_calls/event")
	b.ReportMetric(calls("SQS"), "sqs_calls/event")
	b.ReportMetric(ceiling, "bare_events/s")
	fmt.Printf("payments e2e: %d webhooks, %.0f/s end to end (%.2fx the %.0f/s bare-pipeline ceiling measured in the same run), intake %.0f accepted/s at concurrency 32, p50 %s p99 %s, %d duplicate charges, %.2f DynamoDB + %.2f SQS calls/event\n",
		n, rate, rate/ceiling, ceiling, intake, lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond), dups, calls("DynamoDB"), calls("SQS"))
}
