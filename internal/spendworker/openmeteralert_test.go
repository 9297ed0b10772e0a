package spendworker_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/spendworker"
	"github.com/hookline/hookline/internal/usagein"
)

// omSums is an OpenMeter source reconciling meter tokens (OpenMeter's
// tokens_total) of usage source "meters", at scale 1000.
const omSums = `{"om": {"provider": "openmeter", "usage_source": "meters", "account": "ns_default",
  "start": "2026-02-01T00:00:00Z", "meters": {"tokens": {"provider_meter": "tokens_total", "aggregation": "sum", "scale": 1000}}}}`

var (
	omYesterday = time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC)
	omToday     = time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	omTomorrow  = time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC)
)

// newOpenMeterAlertFixture is a worker over omSums, and workload wl-1
// (subject wl-1 at OpenMeter) with 80,000 units of tokens yesterday and
// 100,000 today: the entitlement's period is a day, and resets at
// midnight.
func newOpenMeterAlertFixture(t *testing.T) *alertFixture {
	t.Helper()
	ctx := context.Background()
	f := newSumsFixture(t, omSums)
	if _, err := f.spend.Workloads.CreateWorkload(ctx, spend.NewWorkload{ID: "wl-1", Owner: "o", RoutingKey: "rk", Cap: 1_000_000_000}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		id    string
		units int64
		at    time.Time
	}{{"ce_yesterday", 80_000, omYesterday.Add(10 * time.Hour)}, {"ce_today", 100_000, omToday.Add(10 * time.Hour)}} {
		if _, err := f.spend.Ledger.Apply(ctx, spend.Usage{RecordID: r.id, WorkloadRef: "wl-1", Units: r.units, OccurredAt: r.at,
			ObservedAt: alertNow, Path: spend.PathWebhook, EventID: r.id, Source: "meters", Meter: "tokens"}); err != nil {
			t.Fatal(err)
		}
	}
	f.handle(t)
	return f
}

// omThreshold is an entitlements.balance.threshold notification for
// subject wl-1 on tokens_total, with usage in the period [from, to).
func omThreshold(id, usage string, from, to time.Time) string {
	return fmt.Sprintf(`{"id":%q,"type":"entitlements.balance.threshold","timestamp":"2026-03-10T11:59:00Z","data":{
  "entitlement":{"type":"metered","id":"01ENT","subjectKey":"wl-1","featureKey":"tokens","currentUsagePeriod":{"from":%q,"to":%q}},
  "feature":{"key":"tokens","name":"Tokens","meterSlug":"tokens_total"},"subject":{"key":"wl-1"},
  "value":{"hasAccess":true,"usage":%s},"threshold":{"value":100,"type":"usage_value"}}}`,
		id, from.Format(time.RFC3339), to.Format(time.RFC3339), usage)
}

// omMessage is the usage message the door queues for an OpenMeter
// notification received on the openmeter-alerts source "om-alerts".
func omMessage(t *testing.T, body string) events.SQSMessage {
	t.Helper()
	ms, err := usagein.ParseMappings([]byte(`{"om-alerts": {"format": "openmeter-alerts"}}`))
	if err != nil {
		t.Fatal(err)
	}
	m := ms.For("om-alerts")
	b, err := m.Read([]byte(body), usagein.Request{Source: "om-alerts", Seen: alertNow})
	if err != nil {
		t.Fatal(err)
	}
	msg := message(b.Items[0].EventID, string(m.Envelope("om-alerts", b.Items[0].Record)))
	msg.MessageAttributes["received_at"] = events.SQSMessageAttribute{
		StringValue: aws.String(alertNow.Add(-time.Second).Format("2006-01-02T15:04:05.000Z07:00")), DataType: "String"}
	return msg
}

func TestAnOpenMeterThresholdIsComparedOverItsCurrentPeriod(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		usage    string
		from, to time.Time
		ledger   int64
		paged    bool
	}{
		// 150.5 today is above today's 100,000, though not above the
		// 180,000 since yesterday: the period reset at midnight.
		{"today, above", "150.5", omToday, omTomorrow, 100_000, true},
		{"today, below", "90", omToday, omTomorrow, 100_000, false},
		// 90 yesterday is above yesterday's 80,000, though not above what
		// came after the period ended.
		{"yesterday, above", "90", omYesterday, omToday, 80_000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newOpenMeterAlertFixture(t)
			// When the threshold is delivered, and delivered again
			msg := omMessage(t, omThreshold("01JALERT", tc.usage, tc.from, tc.to))
			f.handle(t, msg)
			f.handle(t, msg)
			// Then it is recorded once, over the period it carries
			as := f.alerts(t)
			value, _ := usagein.ScaleDecimal(tc.usage, 1000)
			want := spend.Alert{EventID: "01JALERT", Source: "om", Meter: "tokens", WorkloadID: "wl-1", AlertID: "01ENT", Customer: "wl-1",
				Value: value, Since: tc.from, SinceFrom: spendworker.SincePeriod, Until: tc.to, ReceivedAt: alertNow.Add(-time.Second),
				Ledger: tc.ledger, Paged: tc.paged}
			if len(as) != 1 || !sameAlert(as[0], want) {
				t.Fatalf("alerts %+v\nwant [%+v]", as, want)
			}
			// a ledger below it pages once
			var wantPages []string
			if tc.paged {
				wantPages = []string{spendworker.AlertDedupKey("om", "01JALERT")}
			}
			if !slices.Equal(f.sent.keys, wantPages) {
				t.Fatalf("pages %v, want %v", f.sent.keys, wantPages)
			}
			// and the workload's next reconciliation moves up.
			if due := f.due(t, "om"); !slices.Equal(due, []string{"wl-1"}) {
				t.Fatalf("due %v", due)
			}
		})
	}
}

func TestAnOpenMeterThresholdOnAnUnknownMeterIsDeadLettered(t *testing.T) {
	t.Parallel()
	f := newOpenMeterAlertFixture(t)
	body := omThreshold("01JOTHER", "1", omToday, omTomorrow)
	body = string(bytes.Replace([]byte(body), []byte("tokens_total"), []byte("minutes_total"), 1))
	f.handle(t, omMessage(t, body))
	if dl := f.deadLetters(t); len(dl) != 1 || !bytes.Contains([]byte(dl[0]), []byte(spendworker.ReasonAlertUnknownMeter)) {
		t.Fatalf("dead letters %v", dl)
	}
}
