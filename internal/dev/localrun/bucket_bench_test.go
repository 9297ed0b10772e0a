package localrun_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/usagein"
)

// BenchmarkHotBucket is BenchmarkHotWorkload with bucket heads: the one
// workload's usage arrives as CloudEvents on the door source "meters",
// which a Stripe source of SUM_SOURCES reconciles against hourly sums
// (the configuration of TestSumsAgainstStripeLocalRun), so every record
// is folded into its hour's bucket and the spend worker writes the
// bucket's head beside the workload's item. It sends -hot.events events
// at 500/s (open loop), with the local DynamoDB's model of AWS's limits
// off (the baseline) and on, in the same run, and reports each half's
// rate, their ratio on/off, the p99 of event → ledger, the usage DLQ's
// depth, the throttles the model answered and the head's writes per
// event (a batch's records of one bucket write its head once). The
// reconciler's schedule keeps the template's rate, so no poll writes the
// head during the run. Run with -benchtime 1x.
func BenchmarkHotBucket(b *testing.B) {
	for range b.N {
		off, offBucket := runHotBucket(b, false, *hotEvents, 500)
		on, onBucket := runHotBucket(b, true, *hotEvents, 500)
		reportHot(b, off, on)
		b.ReportMetric(offBucket.heads, "off_head_writes/event")
		b.ReportMetric(onBucket.heads, "on_head_writes/event")
		b.ReportMetric(onBucket.ledgerWCU, "on_ledger_wcu/event")
		fmt.Printf("hot bucket: %d CloudEvents at 500/s to one workload's hourly buckets; limits off %.0f/s (event→ledger p99 %s, %.3f head writes an event), on %.0f/s (p99 %s, %d throttles answered, %.3f head writes and %.2f ledger write units an event); ratio on/off %.2f; %d dead letters\n",
			*hotEvents, off.rate, off.p99.Round(time.Millisecond), offBucket.heads, on.rate, on.p99.Round(time.Millisecond), on.throttles,
			onBucket.heads, onBucket.ledgerWCU, on.rate/off.rate, off.dead+on.dead)
	}
}

// bucketRun is what a half of BenchmarkHotBucket measures besides a
// hotRun, per event: how often the workload's bucket heads were written
// (the sum of their versions), and the write units the ledger table took
// (entries, deltas and heads; 0 with the model off, which meters nothing).
type bucketRun struct {
	heads, ledgerWCU float64
}

// runHotBucket is one half of BenchmarkHotBucket.
func runHotBucket(b *testing.B, model bool, n, rate int) (hotRun, bucketRun) {
	var br bucketRun
	load := bucketHot()
	load.measured = func(u *usageBench) {
		bs, err := u.spend.Explainer.Buckets(context.Background(), "hot", 0)
		if err != nil || len(bs) == 0 {
			b.Fatalf("the hot workload's buckets: %d, %v", len(bs), err)
		}
		for _, h := range bs {
			br.heads += float64(h.Version) / float64(n)
		}
		br.ledgerWCU = u.sys.AWS.Capacity().Tables[u.sys.AWS.TableName("LedgerTable")].WriteUnits / float64(n)
	}
	return runHotLoad(b, model, n, rate, load), br
}

// bucketHot is the hot workload's usage as CloudEvents of meter api on
// the door source "meters", signed as a producer's Standard Webhooks
// library signs them, with a Stripe source of SUM_SOURCES over that
// meter from six hours before the run.
func bucketHot() hotLoad {
	sources := fmt.Sprintf(`{%q: {"provider": "stripe", "usage_source": "meters", "account": "acct_local",
	  "start": %q, "settle": "2h", "meters": {"api": {"provider_meter": "mtr_api", "aggregation": "sum"}}}}`,
		sumsSource, time.Now().UTC().Truncate(time.Hour).Add(-6*time.Hour).Format(time.RFC3339))
	return hotLoad{
		env: map[string]string{"HOOKLINE_SOURCES": sumsDoorSources, "USAGE_MAPPINGS": sumsMappings, "SUM_SOURCES": sources,
			"HOOKLINE_METERS_SECRETS": metersSecret, "HOOKLINE_STRIPE_ALERTS_SECRETS": stripeAlertsSecret},
		path: "/webhooks/meters",
		sign: providersim.StandardSigner(metersSecret, usagein.MediaCloudEvent, false),
		event: func(i int, now time.Time) (string, []byte, string) {
			ev := providersim.UsageCloudEvent{Source: "//app/api", ID: fmt.Sprintf("hot-%06d", i), Type: "com.example.api",
				Subject: "hot", Time: now.UTC(), Value: strconv.Itoa(hotUnits)}
			body, _, _ := providersim.CloudEventsBody([]providersim.UsageCloudEvent{ev}, false)
			return "msg_" + ev.ID, body, usagein.CloudEventKey("meters", ev.Source, ev.ID)
		}}
}
