package localrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/app/spendledger"
	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/testkit"
)

// The Stripe drill's configuration: CloudEvents usage on source "meters"
// counted on meter "api", which Stripe's meter mtr_api sums per hour, and
// Stripe's billing alerts on source "stripe-alerts".
const (
	sumsDoorSources = `[{"name":"payments","scheme":"standard-webhooks","secret_env":"HOOKLINE_PAYMENTS_SECRETS","queue":"payments"},` +
		`{"name":"usage","scheme":"standard-webhooks","secret_env":"HOOKLINE_USAGE_SECRETS","queue":"usage"},` +
		`{"name":"meters","scheme":"standard-webhooks","secret_env":"HOOKLINE_METERS_SECRETS","queue":"usage"},` +
		`{"name":"stripe-alerts","scheme":"stripe","secret_env":"HOOKLINE_STRIPE_ALERTS_SECRETS","queue":"usage"}]`
	sumsMappings = `{"meters": {"format": "cloudevents", "usage_types": ["com.example.api"], "meter_name": "api", "unit": "units", "max_age": "840h"},
	  "stripe-alerts": {"format": "stripe-alerts"}}`
	stripeAlertsSecret = "whsec_bG9jYWwtc3RyaXBlLWFsZXJ0cy1zZWNyZXQ"
	sumsSource         = "stripe-local"
)

// sumsDrill is the running system with a Stripe sums source, driven from
// outside: usage through the door, the Stripe face through /sim/meters.
type sumsDrill struct {
	t      *testing.T
	sys    *localrun.System
	clock  *localrun.Clock
	ledger spendledger.Ledger
}

// startSumsDrill starts the system with SUM_SOURCES reading the
// simulator's Stripe face from start, settling buckets 2 h after they end.
func startSumsDrill(t *testing.T, start time.Time) *sumsDrill {
	t.Helper()
	sources := fmt.Sprintf(`{%q: {"provider": "stripe", "usage_source": "meters", "account": "acct_local",
	  "start": %q, "settle": "2h", "lag": "1s", "interval": "1s",
	  "meters": {"api": {"provider_meter": "mtr_api", "aggregation": "sum"}}}}`, sumsSource, start.Format(time.RFC3339))
	clock := &localrun.Clock{}
	sys, ledger := startDrill(t, everySecond(), onClock(clock), env(map[string]string{"HOOKLINE_SOURCES": sumsDoorSources,
		"USAGE_MAPPINGS": sumsMappings, "SUM_SOURCES": sources, "HOOKLINE_METERS_SECRETS": metersSecret,
		"HOOKLINE_STRIPE_ALERTS_SECRETS": stripeAlertsSecret}))
	d := &sumsDrill{t: t, sys: sys, clock: clock, ledger: ledger}
	d.sim(http.MethodPost, "", providersim.BillingMeter{ID: "mtr_api", EventName: "api_call", Aggregation: "sum"}, nil)
	return d
}

// sim calls the Stripe face's administration, failing on any answer but
// 2xx, and decodes the answer into out when given.
func (d *sumsDrill) sim(method, path string, body, out any) {
	d.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		d.t.Fatal(err)
	}
	req, err := http.NewRequest(method, d.sys.Sim.URL()+providersim.MeterSimPath+path, bytes.NewReader(b))
	if err != nil {
		d.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		d.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, got)
	}
	if out != nil {
		if err := json.Unmarshal(got, out); err != nil {
			d.t.Fatalf("%s %s: %s: %v", method, path, got, err)
		}
	}
}

// workload creates a workload whose Stripe customer is customer.
func (d *sumsDrill) workload(id, customer string, limit int64) {
	d.t.Helper()
	createWorkload(d.t, d.ledger, spend.NewWorkload{ID: id, Owner: "o", RoutingKey: "rk", Cap: limit}, customer)
}

// door sends one usage CloudEvent for customer to the door.
func (d *sumsDrill) door(id, customer, value string, at time.Time) {
	d.t.Helper()
	ev := providersim.UsageCloudEvent{Source: "//app/api", ID: id, Type: "com.example.api", Subject: customer, Time: at, Value: value}
	if code, got := ceSend(d.t, d.sys, "msg_"+id, false, false, ev); code != 200 {
		d.t.Fatalf("door %s: %d %s", id, code, got)
	}
}

// stripe records one meter event at Stripe.
func (d *sumsDrill) stripe(id, customer, value string, at time.Time) {
	d.t.Helper()
	d.sim(http.MethodPost, "/events", providersim.MeterEvent{EventName: "api_call", Customer: customer, Value: value,
		Identifier: id, Timestamp: at}, nil)
}

// bucket waits until workload id's bucket starting at start satisfies ok,
// and returns it.
func (d *sumsDrill) bucket(id string, start time.Time, what string, ok func(spend.Bucket) bool) spend.Bucket {
	d.t.Helper()
	var got spend.Bucket
	testkit.Eventually(d.t, settleBound, what, func() bool {
		bs, err := d.ledger.Spend.Explainer.Buckets(context.Background(), id, 0)
		if err != nil {
			d.t.Fatal(err)
		}
		for _, b := range bs {
			if b.Start.Equal(start) && ok(b) {
				got = b
				return true
			}
		}
		return false
	})
	return got
}

// total is workload id's counted total.
func (d *sumsDrill) total(id string) int64 {
	d.t.Helper()
	w, err := d.ledger.Spend.Workloads.Get(context.Background(), id)
	if err != nil {
		d.t.Fatal(err)
	}
	return w.Total
}

// runs waits until the reconciler has read every workload's sums at
// least n more times: each run reads each of the drill's three workloads.
func (d *sumsDrill) runs(n int) {
	d.t.Helper()
	count := func() int {
		var calls providersim.MeterCallCounts
		d.sim(http.MethodGet, "/calls", nil, &calls)
		return calls.Summaries
	}
	from := count()
	testkit.Eventually(d.t, settleBound, fmt.Sprintf("%d more runs", n), func() bool { return count() >= from+3*n })
}

// pages are the pages the simulator's pager got whose dedup key starts
// with prefix, by dedup key.
func (d *sumsDrill) pages(prefix string) map[string]pager.Event {
	out := map[string]pager.Event{}
	for _, p := range d.sys.Sim.Pager.Pages() {
		if strings.HasPrefix(p.DedupKey, prefix) && p.EventAction == pager.ActionTrigger {
			out[p.DedupKey] = p
		}
	}
	return out
}

// TestSumsAgainstStripeLocalRun drives the running system as a team that
// meters with Stripe does: its application reports each API call to
// hookline's door and to Stripe; Stripe serves hourly sums and sends
// billing alerts. Every outcome of the max rule is checked from outside.
func TestSumsAgainstStripeLocalRun(t *testing.T) {
	t.Parallel()
	hour := time.Now().UTC().Truncate(time.Hour)
	d := startSumsDrill(t, hour.Add(-6*time.Hour))
	past, open := hour.Add(-time.Hour), hour // a closed bucket and the open one
	d.workload("wl-sum", "cus_sum", 1_000_000)
	d.workload("wl-cap", "cus_cap", 10)
	d.workload("wl-alert", "cus_alert", 1_000_000)

	// Given usage the door counted before Stripe shows anything
	d.door("e1", "cus_sum", "3", past.Add(10*time.Minute))
	d.door("e3", "cus_sum", "4", open.Add(time.Second))
	d.bucket("wl-sum", past, "the door's usage in the closed bucket", func(b spend.Bucket) bool { return b.W == 3 })
	d.bucket("wl-sum", open, "the door's usage in the open bucket", func(b spend.Bucket) bool { return b.W == 4 })

	// When Stripe shows the same usage and an event the door never got
	d.stripe("e1", "cus_sum", "3", past.Add(10*time.Minute))
	d.stripe("e2", "cus_sum", "5", past.Add(20*time.Minute))
	d.stripe("e3", "cus_sum", "4", open.Add(time.Second))
	d.bucket("wl-sum", past, "Stripe's sum of the closed bucket", func(b spend.Bucket) bool { return b.PStar == 8 })
	d.bucket("wl-sum", open, "Stripe's sum of the open bucket", func(b spend.Bucket) bool { return b.PStar == 4 })
	// Then usage sent both ways is counted once, and the lost event by the poll
	if got := d.total("wl-sum"); got != 12 {
		t.Fatalf("total = %d, want 12: 3 and 4 both ways, 5 by the poll alone", got)
	}

	// When Stripe shows an event the door lost, and then cancels it
	d.stripe("e4", "cus_sum", "6", open.Add(time.Minute))
	d.bucket("wl-sum", open, "the lost event topped up", func(b spend.Bucket) bool { return b.PStar == 10 })
	d.sim(http.MethodPost, "/cancel", map[string]string{"event_name": "api_call", "identifier": "e4"}, nil)
	b := d.bucket("wl-sum", open, "the downward revision", func(b spend.Bucket) bool { return b.Downs == 1 })
	// Then the revision is paged once and changes nothing
	if b.PLatest != 4 || b.Counted != 10 || d.total("wl-sum") != 18 {
		t.Fatalf("after a cancellation: bucket %+v, total %d; want P=4 counted=10 total=18", b, d.total("wl-sum"))
	}

	// When Stripe tops up a workload past its cap
	d.stripe("e5", "cus_cap", "15", open.Add(2*time.Minute))
	d.bucket("wl-cap", open, "the top-up past the cap", func(b spend.Bucket) bool { return b.Counted == 15 })

	// When Stripe alerts on usage its summaries do not show yet
	d.sim(http.MethodPost, "/gaps", providersim.MeterGap{Customer: "cus_alert", At: open}, nil)
	d.sim(http.MethodPost, "/alerts", map[string]any{"meter": "mtr_api", "customer": "cus_alert", "gte": 5}, nil)
	d.stripe("e6", "cus_alert", "7", open.Add(3*time.Minute))
	d.sim(http.MethodPost, "/alerts/send", nil, nil)
	var alerts []json.RawMessage
	d.sim(http.MethodGet, "/alerts", nil, &alerts)
	if len(alerts) != 1 {
		t.Fatalf("alert events = %d, want 1", len(alerts))
	}
	// sent again, as Stripe retries a delivery
	if code, got := send(t, d.sys, "stripe-alerts", providersim.StripeSigner(stripeAlertsSecret), alerts[0]); code != 200 {
		t.Fatalf("alert again: %d %s", code, got)
	}

	// When three hours pass: both buckets settle
	d.clock.Advance(3 * time.Hour)
	d.bucket("wl-sum", open, "the open bucket settled", func(b spend.Bucket) bool { return b.Settled })
	settled := d.bucket("wl-sum", past, "the closed bucket settled", func(b spend.Bucket) bool { return b.Settled })
	if settled.Gap != 5 {
		t.Fatalf("the closed bucket settled with gap %d, want +5 (Stripe 8, the door 3): %+v", settled.Gap, settled)
	}

	// When the late webhook of the lost event arrives, after the top-up
	// and the settle
	d.door("e2", "cus_sum", "5", past.Add(20*time.Minute))
	d.bucket("wl-sum", past, "the late webhook", func(b spend.Bucket) bool { return b.W == 8 })
	// Then it adds nothing
	if got := d.total("wl-sum"); got != 18 {
		t.Fatalf("total after the late webhook = %d, want 18", got)
	}
	d.runs(3)

	// Then: one page per cap trip, per downward revision, per alert
	testkit.Eventually(t, settleBound, "the pages sent", func() bool {
		return len(d.pages("bucket-down#")) == 1 && len(d.pages("usage-alert#")) == 1
	})
	if w, err := d.ledger.Spend.Workloads.Get(context.Background(), "wl-cap"); err != nil || w.Status != spend.StatusPaused {
		t.Fatalf("wl-cap after a top-up past its cap: %+v %v, want paused", w, err)
	}
	pauses := pauseKeys(d.sys.Sim.Pager.Pages())["wl-cap"]
	if len(pauses) != 1 {
		t.Fatalf("pause pages of wl-cap = %v, want one", pauses)
	}
	for _, p := range d.sys.Sim.Pager.Pages() {
		if pauseKeys([]pager.Event{p})["wl-cap"] != nil && !strings.Contains(p.Payload.Summary, "record=bucket:"+sumsSource+"/acct_local/test/api/wl-cap@") {
			t.Errorf("the pause page does not name the bucket: %s", p.Payload.Summary)
		}
	}
	// and each bucket that settled with its paths apart was paged once:
	// wl-sum's closed bucket (the door's 3 against Stripe's 8, before the
	// late webhook) and wl-cap's (Stripe's 15, which the door never got)
	gaps := map[string]int{}
	for _, p := range d.pages("bucket-gap#") {
		gaps[strings.Split(p.DedupKey, "#")[1]]++
		if !strings.Contains(p.Payload.Summary, "UTC") || !strings.Contains(p.Payload.Summary, "diff=+") {
			t.Errorf("the gap page does not name the bucket's zone and difference: %s", p.Payload.Summary)
		}
	}
	if len(gaps) != 2 || gaps["wl-sum"] != 1 || gaps["wl-cap"] != 1 {
		t.Fatalf("gap pages by workload = %v, want one for wl-sum and one for wl-cap", gaps)
	}
	for _, want := range []struct {
		id    string
		total int64
	}{{"wl-sum", 18}, {"wl-cap", 15}, {"wl-alert", 0}} {
		if got := d.total(want.id); got != want.total {
			t.Errorf("%s: total %d, want %d", want.id, got, want.total)
		}
	}
}
