package spendworker_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/spendworker"
	"github.com/hookline/hookline/internal/sums"
	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/queue"
)

// alertSums are a live Stripe source reconciling the records of usage
// source "meters", with one alert listed, and a test-mode one of usage
// source "sandbox" counting its meter at scale 1000.
const alertSums = `{
  "stripe-live": {"provider": "stripe", "usage_source": "meters", "account": "acct_1", "livemode": true,
    "start": "2026-02-01T00:00:00Z", "meters": {"api": {"provider_meter": "mtr_api", "aggregation": "sum"}},
    "alerts": {"alrt_listed": {"meter": "api", "created": "2026-03-01T00:00:00Z"}}},
  "stripe-sandbox": {"provider": "stripe", "usage_source": "sandbox", "account": "acct_1", "livemode": false,
    "start": "2026-02-01T00:00:00Z", "meters": {"api": {"provider_meter": "mtr_api_test", "aggregation": "sum", "scale": 1000}}}}`

// alertNow is the fixture's clock.
var alertNow = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

// alertsSource is the Stripe-signed usage source Stripe sends its events
// to.
const alertsSource = "stripe-alerts"

type alertFixture struct {
	env     *localaws.Env
	spend   *spend.Spend
	outbox  *pager.Outbox
	sent    *pageLog
	marks   *flakyMarks
	metrics *bytes.Buffer
	worker  *spendworker.Worker
}

// newSumsFixture is a spend worker over the sums sources sumsText, on
// the fixture's clock, with no workload yet.
func newSumsFixture(t *testing.T, sumsText string) *alertFixture {
	t.Helper()
	env := localaws.StartForTest(t)
	srcs, err := sums.ParseSources(sumsText)
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return alertNow }
	f := &alertFixture{env: env, sent: &pageLog{}, marks: &flakyMarks{}, metrics: &bytes.Buffer{}}
	f.outbox, err = pager.NewOutbox(pager.OutboxConfig{DB: env.DynamoDB, Table: env.TableName("LedgerTable"), Sender: f.sent, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	contract := spend.PathContract{ExpectedArrival: time.Minute, MaxAge: time.Hour, Interval: 5 * time.Minute}
	f.spend, err = spend.New(spend.Config{
		DB: env.DynamoDB, LedgerTable: env.TableName("LedgerTable"), WorkloadsTable: env.TableName("WorkloadsTable"),
		Pages: f.outbox, Webhook: contract, Poll: contract, ReconOwner: "spend-oncall", ReconRoutingKey: "rk-recon",
		Now: clock, Sums: srcs,
	})
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(queue.Config{SQS: env.SQS, URL: env.QueueURL("usage"), DeadLetterURL: env.QueueURL("usage-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	f.worker, err = spendworker.New(spendworker.Config{Ledger: f.spend.Ledger, Pages: f.outbox, Queue: q, Attributions: f.marks,
		Metrics: emf.New(f.metrics, "hookline"), Logger: testLogger(t), Now: clock,
		Sums: srcs, Workloads: f.spend.Workloads, Alerts: f.spend.Buckets, PollInterval: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// newAlertFixture is a worker over the sums sources of alertSums, and
// workload wl-1 (customer cus_abc at Stripe) with 800 units of meter api
// recorded on 15 February and 300 on 5 March: 1,100 since the live
// source's start, 300 since its listed alert's creation.
func newAlertFixture(t *testing.T) *alertFixture {
	t.Helper()
	ctx := context.Background()
	f := newSumsFixture(t, alertSums)
	if _, err := f.spend.Workloads.CreateWorkload(ctx, spend.NewWorkload{ID: "wl-1", Owner: "o", RoutingKey: "rk", Cap: 1_000_000}); err != nil {
		t.Fatal(err)
	}
	if err := f.spend.Workloads.AddAlias(ctx, "cus_abc", "wl-1"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		id    string
		units int64
		at    time.Time
	}{{"ur_feb", 800, time.Date(2026, 2, 15, 10, 0, 0, 0, time.UTC)}, {"ur_mar", 300, time.Date(2026, 3, 5, 10, 0, 0, 0, time.UTC)}} {
		if _, err := f.spend.Ledger.Apply(ctx, spend.Usage{RecordID: r.id, WorkloadRef: "cus_abc", Units: r.units, OccurredAt: r.at,
			ObservedAt: alertNow, Path: spend.PathWebhook, EventID: "evt_" + r.id, Source: "meters", Meter: "api"}); err != nil {
			t.Fatal(err)
		}
	}
	// A first batch makes the worker's full flush, so that each test's
	// pages are flushed by the keys its batch enqueued.
	f.handle(t)
	return f
}

// stripeAlert is a billing.alert.triggered event. An alert with a meter is
// written as its object, one without as its ID.
type stripeAlert struct {
	event, alert, meter, customer, value string
	live                                 bool
}

func (a stripeAlert) body() string {
	alert := strconv.Quote(a.alert)
	if a.meter != "" {
		alert = fmt.Sprintf(`{"id":%q,"object":"billing.alert","alert_type":"usage_threshold","livemode":%t,"status":"active",
			"usage_threshold":{"filters":[{"customer":%q,"type":"customer"}],"gte":1000,"meter":%q,"recurrence":"one_time"}}`,
			a.alert, a.live, a.customer, a.meter)
	}
	return fmt.Sprintf(`{"id":%q,"object":"event","api_version":"2026-02-25.clover","created":%d,
		"data":{"object":{"object":"billing.alert_triggered","alert":%s,"customer":%q,"livemode":%t,"value":%s}},
		"livemode":%t,"pending_webhooks":1,"request":{"id":null,"idempotency_key":null},"type":"billing.alert.triggered"}`,
		a.event, alertNow.Add(-time.Minute).Unix(), alert, a.customer, a.live, a.value, a.live)
}

// stripeMessage is the usage message the door queues for a Stripe event
// received on source, read under a stripe-alerts mapping.
func stripeMessage(t *testing.T, source, body string) events.SQSMessage {
	t.Helper()
	ms, err := usagein.ParseMappings([]byte(`{"` + source + `": {"format": "stripe-alerts"}}`))
	if err != nil {
		t.Fatal(err)
	}
	m := ms.For(source)
	b, err := m.Read([]byte(body), usagein.Request{Source: source, ContentType: "application/json", Seen: alertNow})
	if err != nil {
		t.Fatal(err)
	}
	it := b.Items[0]
	msg := message(it.EventID, string(m.Envelope(source, it.Record)))
	msg.MessageAttributes["source"] = events.SQSMessageAttribute{StringValue: aws.String(source), DataType: "String"}
	msg.MessageAttributes["received_at"] = events.SQSMessageAttribute{
		StringValue: aws.String(alertNow.Add(-time.Second).Format("2006-01-02T15:04:05.000Z07:00")), DataType: "String"}
	return msg
}

func (f *alertFixture) handle(t *testing.T, msgs ...events.SQSMessage) {
	t.Helper()
	resp, err := f.worker.Handle(context.Background(), events.SQSEvent{Records: msgs})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %+v, %v; want every message acknowledged", resp, err)
	}
}

func (f *alertFixture) alerts(t *testing.T) []spend.Alert {
	t.Helper()
	as, err := f.spend.Explainer.Alerts(context.Background(), "wl-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

func (f *alertFixture) due(t *testing.T, source string) []string {
	t.Helper()
	due, err := f.spend.Buckets.DueWorkloads(context.Background(), source)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for id := range due {
		ids = append(ids, id)
	}
	return ids
}

// pending are the dedup keys of the pages enqueued and not sent.
func (f *alertFixture) pending(t *testing.T) []string {
	t.Helper()
	ps, err := f.outbox.Pending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range ps {
		keys = append(keys, p.DedupKey)
	}
	return keys
}

// deadLetters receives and deletes the usage DLQ's messages, returning
// their failure reasons.
func (f *alertFixture) deadLetters(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	url := aws.String(f.env.QueueURL("usage-dlq"))
	out, err := f.env.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, m := range out.Messages {
		reasons = append(reasons, aws.ToString(m.MessageAttributes["failure_reason"].StringValue))
		if _, err := f.env.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
	return reasons
}

// metric sums an EMF metric over the lines whose dim is val.
func (f *alertFixture) metric(t *testing.T, name, dim, val string) float64 {
	t.Helper()
	var n float64
	sc := bufio.NewScanner(bytes.NewReader(f.metrics.Bytes()))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("EMF line %q: %v", sc.Text(), err)
		}
		if v, ok := line[name].(float64); ok && line[dim] == val {
			n += v
		}
	}
	return n
}

func (f *alertFixture) checkTotal(t *testing.T) {
	t.Helper()
	w, err := f.spend.Workloads.Get(context.Background(), "wl-1")
	if err != nil || w.Total != 1100 {
		t.Fatalf("total = %d, %v; want 1100: an alert is never counted", w.Total, err)
	}
}

func TestAnAlertAboveTheLedgerPagesOnceEvenDeliveredTwice(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	// Given Stripe's alert alrt_listed, created on 1 March, at 1,000 units
	// of meter api, while the ledger counts 300 since 1 March
	msg := stripeMessage(t, alertsSource, stripeAlert{event: "evt_above", alert: "alrt_listed", meter: "mtr_api",
		customer: "cus_abc", value: "1000", live: true}.body())

	// When it is delivered, and delivered again
	f.handle(t, msg)
	f.handle(t, msg)

	// Then its owner is paged once, by the key of the batch that enqueued
	// the page
	if want := []string{"usage-alert#stripe-live#evt_above"}; !slices.Equal(f.sent.keys, want) {
		t.Fatalf("pages sent %v, want %v", f.sent.keys, want)
	}
	if p := f.pending(t); len(p) != 0 {
		t.Fatalf("pages left in the outbox: %v", p)
	}
	// the alert is recorded once, compared since the alert's creation
	as := f.alerts(t)
	want := spend.Alert{EventID: "evt_above", Source: "stripe-live", Meter: "api", WorkloadID: "wl-1", AlertID: "alrt_listed",
		Customer: "cus_abc", Value: 1000, Since: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), SinceFrom: spendworker.SinceConfigured,
		ReceivedAt: alertNow.Add(-time.Second), Ledger: 300, Paged: true}
	if len(as) != 1 || !sameAlert(as[0], want) {
		t.Fatalf("alerts %+v\nwant [%+v]", as, want)
	}
	// the workload is read on the reconciler's next run
	if due := f.due(t, "stripe-live"); !slices.Equal(due, []string{"wl-1"}) {
		t.Fatalf("due %v, want wl-1", due)
	}
	// each delivery is marked on its intake record and counted
	wantMarks := []intake.Mark{
		{Source: alertsSource, EventID: "evt_above", State: intake.AttributionAlert, Workload: "wl-1", Reason: spendworker.AlertPaged},
		{Source: alertsSource, EventID: "evt_above", State: intake.AttributionAlert, Workload: "wl-1", Reason: spendworker.AlertDuplicate},
	}
	if !slices.Equal(f.marks.marks, wantMarks) {
		t.Fatalf("marks %+v\nwant %+v", f.marks.marks, wantMarks)
	}
	if p, d := f.metric(t, spendworker.MetricUsageAlerts, "Outcome", "paged"), f.metric(t, spendworker.MetricUsageAlerts, "Outcome", "duplicate"); p != 1 || d != 1 {
		t.Fatalf("UsageAlerts paged %v, duplicate %v; want 1 and 1", p, d)
	}
	// and nothing is counted or dead-lettered.
	f.checkTotal(t)
	if dl := f.deadLetters(t); len(dl) != 0 {
		t.Fatalf("dead letters %v", dl)
	}
}

func TestAnUnlistedAlertTheLedgerHoldsIsRecordedWithoutAPage(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	// Given an alert the live source does not list, at 1,000 units of
	// meter api: the ledger counts 1,100 since the source's start
	f.handle(t, stripeMessage(t, alertsSource, stripeAlert{event: "evt_below", alert: "alrt_unlisted", meter: "mtr_api",
		customer: "cus_abc", value: "1000", live: true}.body()))

	// Then it is recorded, compared since the source's start, and pages
	// nobody
	as := f.alerts(t)
	want := spend.Alert{EventID: "evt_below", Source: "stripe-live", Meter: "api", WorkloadID: "wl-1", AlertID: "alrt_unlisted",
		Customer: "cus_abc", Value: 1000, Since: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), SinceFrom: spendworker.SinceSourceStart,
		ReceivedAt: alertNow.Add(-time.Second), Ledger: 1100}
	if len(as) != 1 || !sameAlert(as[0], want) {
		t.Fatalf("alerts %+v\nwant [%+v]", as, want)
	}
	if len(f.sent.keys) != 0 || len(f.pending(t)) != 0 {
		t.Fatalf("pages sent %v, pending %v; want none", f.sent.keys, f.pending(t))
	}
	// and the workload is still read on the next run.
	if due := f.due(t, "stripe-live"); !slices.Equal(due, []string{"wl-1"}) {
		t.Fatalf("due %v, want wl-1", due)
	}
	if r := f.metric(t, spendworker.MetricUsageAlerts, "Outcome", "recorded"); r != 1 || len(f.marks.marks) != 1 || f.marks.marks[0].Reason != spendworker.AlertRecorded {
		t.Fatalf("UsageAlerts recorded %v, marks %+v", r, f.marks.marks)
	}
	f.checkTotal(t)
}

func TestATestModeAlertIsComparedWithTheTestSource(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	// Given a test-mode alert of the sandbox's meter at 1.5, scale 1000
	f.handle(t, stripeMessage(t, alertsSource, stripeAlert{event: "evt_sandbox", alert: "alrt_sandbox", meter: "mtr_api_test",
		customer: "cus_abc", value: `"1.5"`, live: false}.body()))
	// Then it is compared with the test-mode source, in its units, and
	// never with the live one
	as := f.alerts(t)
	if len(as) != 1 || as[0].Source != "stripe-sandbox" || as[0].Value != 1500 || as[0].Ledger != 0 || !as[0].Paged {
		t.Fatalf("alerts %+v, want one of stripe-sandbox at 1500 units, paged", as)
	}
	if want := []string{"usage-alert#stripe-sandbox#evt_sandbox"}; !slices.Equal(f.sent.keys, want) {
		t.Fatalf("pages sent %v, want %v", f.sent.keys, want)
	}
	if due := f.due(t, "stripe-live"); len(due) != 0 {
		t.Fatalf("the live source has due workloads %v", due)
	}
}

func TestAnotherStripeEventIsNotUsage(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	// Given another Stripe event on the alerts source
	f.handle(t, stripeMessage(t, alertsSource, `{"id":"evt_charge","object":"event","type":"charge.succeeded","livemode":true,"data":{"object":{}}}`))
	// Then it is acknowledged as not usage, and nothing is recorded
	want := []intake.Mark{{Source: alertsSource, EventID: "evt_charge", State: intake.AttributionNotUsage}}
	if !slices.Equal(f.marks.marks, want) {
		t.Fatalf("marks %+v, want %+v", f.marks.marks, want)
	}
	if as := f.alerts(t); len(as) != 0 {
		t.Fatalf("alerts %+v", as)
	}
	if dl := f.deadLetters(t); len(dl) != 0 {
		t.Fatalf("dead letters %v", dl)
	}
	f.checkTotal(t)
}

func TestAnAlertThatCannotBeComparedIsDeadLetteredWithItsReason(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	live := stripeAlert{alert: "alrt_x", meter: "mtr_api", customer: "cus_abc", value: "1000", live: true}
	with := func(edit func(*stripeAlert)) stripeAlert {
		a := live
		edit(&a)
		return a
	}
	tests := []struct {
		name, source string
		alert        stripeAlert
		reason       string
	}{
		{"a test-mode alert on the live source's usage source", "meters", with(func(a *stripeAlert) { a.live = false }),
			spendworker.ReasonAlertLivemode},
		{"a test-mode alert of a live meter", alertsSource, with(func(a *stripeAlert) { a.live = false }),
			spendworker.ReasonAlertLivemode},
		{"a test-mode alert listed by the live source", alertsSource, with(func(a *stripeAlert) { a.live, a.alert, a.meter = false, "alrt_listed", "" }),
			spendworker.ReasonAlertLivemode},
		{"an unlisted alert of no source's meter", alertsSource, with(func(a *stripeAlert) { a.meter = "mtr_nope" }),
			spendworker.ReasonAlertUnknownMeter},
		{"an unlisted alert without its meter", alertsSource, with(func(a *stripeAlert) { a.meter = "" }),
			spendworker.ReasonAlertUnknownMeter},
		{"a listed alert on another meter", alertsSource, with(func(a *stripeAlert) { a.alert, a.meter = "alrt_listed", "mtr_nope" }),
			spendworker.ReasonAlertUnknownMeter},
		{"a customer no workload has", alertsSource, with(func(a *stripeAlert) { a.customer = "cus_nobody" }),
			spendworker.ReasonUnknownWorkload},
		{"no customer", alertsSource, with(func(a *stripeAlert) { a.customer = "" }), spendworker.ReasonInvalidAlert},
		{"a value finer than the meter's scale", alertsSource, with(func(a *stripeAlert) { a.value = "12.5" }), spendworker.ReasonInvalidAlert},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.alert.event = fmt.Sprintf("evt_refused_%d", i)
			// Given an alert the ledger cannot compare, when it is handled,
			f.handle(t, stripeMessage(t, tc.source, tc.alert.body()))
			// then it is dead-lettered with its reason
			dl := f.deadLetters(t)
			if len(dl) != 1 || !strings.HasPrefix(dl[0], tc.reason+": ") {
				t.Fatalf("dead letters %q, want one for %s", dl, tc.reason)
			}
			if n := f.metric(t, spendworker.MetricUsageDeadLettered, "Reason", tc.reason); n == 0 {
				t.Fatalf("no %s dead letter counted", tc.reason)
			}
		})
	}
	// and none is recorded, paged or makes a workload due.
	if as := f.alerts(t); len(as) != 0 {
		t.Fatalf("alerts %+v", as)
	}
	if len(f.sent.keys) != 0 || len(f.pending(t)) != 0 || len(f.due(t, "stripe-live")) != 0 || len(f.due(t, "stripe-sandbox")) != 0 {
		t.Fatalf("pages %v, pending %v, due %v", f.sent.keys, f.pending(t), f.due(t, "stripe-live"))
	}
	f.checkTotal(t)
}

// staticResolver resolves every reference to wl-1, or fails.
type staticResolver struct{ err error }

func (r staticResolver) Resolve(context.Context, string) (spend.Workload, error) {
	return spend.Workload{ID: "wl-1"}, r.err
}

// deadLetterLog records the reasons of the messages dead-lettered.
type deadLetterLog struct {
	mu      sync.Mutex
	reasons []string
}

func (q *deadLetterLog) DeadLetter(_ context.Context, _ events.SQSMessage, reason string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.reasons = append(q.reasons, reason)
	return nil
}

func TestAnAlertTheLedgerCouldNotRecordReturnsToTheQueue(t *testing.T) {
	t.Parallel()
	srcs, err := sums.ParseSources(alertSums)
	if err != nil {
		t.Fatal(err)
	}
	msg := stripeMessage(t, alertsSource, stripeAlert{event: "evt_retry", alert: "alrt_listed", meter: "mtr_api",
		customer: "cus_abc", value: "1000", live: true}.body())
	tests := []struct {
		name      string
		workloads staticResolver
	}{
		{"the workloads cannot be read", staticResolver{err: errors.New("dynamodb: throttled")}},
		{"the ledger cannot be written", staticResolver{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := &deadLetterLog{}
			w, err := spendworker.New(spendworker.Config{Ledger: failingLedger{}, Queue: q, Now: func() time.Time { return alertNow },
				Sums: srcs, Workloads: tc.workloads, Alerts: failingLedger{}, PollInterval: 5 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := w.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg}})
			if err != nil || len(resp.BatchItemFailures) != 1 || len(q.reasons) != 0 {
				t.Fatalf("Handle = %+v, %v, dead letters %v; want the alert back on the queue", resp, err, q.reasons)
			}
		})
	}
}

func TestSumsNeedTheWorkloadsTheAlertsAndThePollInterval(t *testing.T) {
	srcs, err := sums.ParseSources(alertSums)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []spendworker.Config{
		{Ledger: failingLedger{}, Queue: noQueue{}, Sums: srcs, Alerts: failingLedger{}, PollInterval: time.Minute},
		{Ledger: failingLedger{}, Queue: noQueue{}, Sums: srcs, Workloads: staticResolver{}, Alerts: failingLedger{}},
		{Ledger: failingLedger{}, Queue: noQueue{}, Sums: srcs, Workloads: staticResolver{}, PollInterval: time.Minute},
	} {
		if _, err := spendworker.New(cfg); err == nil {
			t.Fatalf("New(%+v) = nil error", cfg)
		}
	}
}

// sameAlert compares alerts, their times as instants.
func sameAlert(got, want spend.Alert) bool {
	return got.Since.Equal(want.Since) && got.ReceivedAt.Equal(want.ReceivedAt) &&
		func() bool {
			got.Since, want.Since, got.ReceivedAt, want.ReceivedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
			return got == want
		}()
}
