package providersim_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v84"
	stripewebhook "github.com/stripe/stripe-go/v84/webhook"

	"github.com/hookline/hookline/internal/dev/providersim"
)

// triggered decodes an alert event with stripe-go's types.
func triggered(t *testing.T, ev providersim.StripeEvent) (stripe.Event, stripe.BillingAlertTriggered) {
	t.Helper()
	var e stripe.Event
	var at stripe.BillingAlertTriggered
	if err := json.Unmarshal(ev.Body, &e); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(e.Data.Raw, &at); err != nil {
		t.Fatal(err)
	}
	return e, at
}

func TestMeterAlertFiresOncePerCustomer(t *testing.T) {
	// Given usage before the alerts, a lag of a minute, and two alerts:
	// gte 10 for cus_a, gte 3 for every customer
	f := newMeterFixture(t, providersim.Config{})
	f.sim.SetMeterLag("", time.Minute)
	now := f.clock.Now()
	f.mustEvent(t, "cus_a", "8", "before", now)
	alertA, err := f.sim.AddAlert(f.meter.ID, "cus_a", 10)
	if err != nil {
		t.Fatal(err)
	}
	alertAll, err := f.sim.AddAlert(f.meter.ID, "", 3)
	if err != nil {
		t.Fatal(err)
	}

	// When usage after them crosses both thresholds
	f.mustEvent(t, "cus_a", "4", "a1", now)
	f.clock.Advance(time.Second)
	f.mustEvent(t, "cus_a", "7.5", "a2", now)
	f.mustEvent(t, "cus_b", "3", "b1", now)
	early := f.sim.PendingAlerts()
	f.clock.Advance(time.Minute)
	evs := f.sim.PendingAlerts()

	// Then nothing fires before the usage shows, then one event per alert and customer
	if len(early) != 0 || len(evs) != 3 {
		t.Fatalf("%d events within the lag, %d after", len(early), len(evs))
	}
	type key struct{ alert, customer string }
	got := map[key]int64{}
	for _, ev := range evs {
		e, at := triggered(t, ev)
		u := at.Alert.UsageThreshold
		if e.Type != "billing.alert.triggered" || e.ID != ev.ID || e.Livemode || e.APIVersion != stripe.APIVersion ||
			at.Object != "billing.alert_triggered" || at.Alert.Object != "billing.alert" ||
			u.Meter.ID != f.meter.ID || u.Recurrence != "one_time" || at.Created != e.Created {
			t.Fatalf("event %s", ev.Body)
		}
		got[key{at.Alert.ID, at.Customer}] = at.Value
		if at.Alert.ID == alertA && (u.GTE != 10 || len(u.Filters) != 1 || u.Filters[0].Customer.ID != "cus_a") {
			t.Fatalf("alert %s", ev.Body)
		}
	}
	want := map[key]int64{{alertA, "cus_a"}: 11, {alertAll, "cus_a"}: 4, {alertAll, "cus_b"}: 3}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("values %v, want %v", got, want)
		}
	}

	// And more usage fires nothing again; the events stay listed
	f.mustEvent(t, "cus_a", "100", "a3", f.clock.Now())
	f.mustEvent(t, "cus_b", "100", "b2", f.clock.Now())
	f.clock.Advance(time.Hour)
	if again := f.sim.PendingAlerts(); len(again) != 0 || len(f.sim.AlertEvents()) != 3 {
		t.Fatalf("%d more events", len(again))
	}
}

// stripeReceiver verifies every post with stripe-go's webhook package.
type stripeReceiver struct {
	secret string
	mu     sync.Mutex
	events []stripe.Event
	errs   []error
}

func (r *stripeReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	ev, err := stripewebhook.ConstructEvent(body, req.Header.Get("Stripe-Signature"), r.secret)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errs = append(r.errs, err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.events = append(r.events, ev)
}

// adminCall sends a JSON request to the meter administration.
func adminCall(t *testing.T, sim *providersim.Sim, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, sim.URL()+path, r)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

func TestMeterAdminScript(t *testing.T) {
	// Given a simulator driven only over HTTP
	clock := providersim.NewManualClock(day1.Add(48 * time.Hour))
	sim := start(t, providersim.Config{Now: clock.Now})
	p := providersim.MeterSimPath
	steps := []struct {
		method, path string
		body         any
		want         int
	}{
		{"POST", p, providersim.BillingMeter{ID: "mtr_admin", EventName: "tokens"}, 200},
		{"POST", p, providersim.BillingMeter{ID: "mtr_admin", EventName: "other"}, 400},
		{"POST", p + "/events", providersim.MeterEvent{EventName: "tokens", Customer: "cus_a", Value: "1.5", Identifier: "x", Timestamp: day1}, 200},
		{"POST", p + "/events", providersim.MeterEvent{EventName: "tokens", Customer: "cus_a", Value: "1.5", Identifier: "x", Timestamp: day1}, 400},
		{"POST", p + "/events", providersim.MeterEvent{EventName: "tokens", Customer: "cus_a", Value: "2", Identifier: "y", Timestamp: day1}, 200},
		{"POST", p + "/cancel", map[string]string{"event_name": "tokens", "identifier": "y"}, 204},
		{"POST", p + "/revise", map[string]any{"meter": "mtr_admin", "customer": "cus_a", "at": day1, "by": "0.5"}, 204},
		{"POST", p + "/lag", map[string]string{"lag": "2m"}, 204},
		{"POST", p + "/lag", map[string]string{"lag": "soon"}, 400},
		{"POST", p + "/gaps", map[string]any{"share": 2}, 400},
		{"POST", p + "/gaps", map[string]any{"at": day1.Add(time.Hour)}, 204},
		{"DELETE", p + "/gaps", nil, 204},
		{"POST", p + "/noise", map[string]bool{"on": false}, 204},
		{"POST", p + "/livemode", map[string]bool{"on": false}, 204},
		{"POST", p + "/ratelimit", map[string]any{"endpoint": "bogus", "per_second": 1}, 400},
		{"POST", p + "/ratelimit", map[string]any{"endpoint": "", "per_second": 50}, 204},
		{"POST", p + "/fail", map[string]any{"endpoint": "event_summaries", "next": 1}, 204},
		{"POST", p + "/alerts", map[string]any{"meter": "mtr_admin", "customer": "cus_a", "gte": 1}, 200},
		{"POST", p + "/alerts", map[string]any{"meter": "mtr_none", "gte": 1}, 400},
		{"POST", p + "/alerts/send", nil, 409},
	}
	for i, s := range steps {
		if status, data := adminCall(t, sim, s.method, s.path, s.body); status != s.want {
			t.Fatalf("step %d %s %s: %d %s, want %d", i, s.method, s.path, status, data, s.want)
		}
	}

	// When usage after the alert shows, and a driver reads everything back
	if status, data := adminCall(t, sim, "POST", p+"/events",
		providersim.MeterEvent{EventName: "tokens", Customer: "cus_a", Value: "1", Timestamp: clock.Now()}); status != 200 {
		t.Fatalf("%d %s", status, data)
	}
	clock.Advance(2 * time.Minute)
	q := url.Values{"customer": {"cus_a"}, "start": {day1.Format(time.RFC3339)}, "end": {day1.Add(time.Hour).Format(time.RFC3339)}}
	_, sum := adminCall(t, sim, "GET", p+"/mtr_admin/sum?"+q.Encode(), nil)
	f := &meterFixture{sim: sim, clock: clock, meter: providersim.BillingMeter{ID: "mtr_admin"}}
	summary := summaryQuery("cus_a", day1, day1.Add(time.Hour), "hour")
	limited, _, _ := f.summaries(t, summary)
	values := f.values(t, summary)
	_, calls := adminCall(t, sim, "GET", p+"/calls", nil)
	_, alerts := adminCall(t, sim, "GET", p+"/alerts", nil)

	// Then each reads what the script made
	var sumBody struct{ Value string }
	var callsBody providersim.MeterCallCounts
	var alertBodies []stripe.Event
	for _, d := range []struct {
		data []byte
		v    any
	}{{sum, &sumBody}, {calls, &callsBody}, {alerts, &alertBodies}} {
		if err := json.Unmarshal(d.data, d.v); err != nil {
			t.Fatalf("%s: %v", d.data, err)
		}
	}
	if sumBody.Value != "1" || limited != http.StatusTooManyRequests || !sameStrings(values, []string{"01T00=1"}) {
		t.Fatalf("sum %s, first summaries %d, then %v", sum, limited, values)
	}
	if callsBody.Summaries != 2 || callsBody.RateLimited[providersim.MeterSummariesEndpoint] != 1 || len(alertBodies) != 1 {
		t.Fatalf("calls %s, alerts %s", calls, alerts)
	}

	// And the pending alert goes out once, signed as Stripe signs
	recv := &stripeReceiver{secret: "whsec_meters"}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	snd, err := providersim.NewSender(providersim.SenderConfig{URL: srv.URL, Sign: providersim.StripeSigner(recv.secret)})
	if err != nil {
		t.Fatal(err)
	}
	sim.SetMeterAlertWebhooks(snd)
	for _, want := range []string{`{"delivered":1,"sent":1}`, `{"delivered":0,"sent":0}`} {
		if status, data := adminCall(t, sim, "POST", p+"/alerts/send", nil); status != 200 || string(bytes.TrimSpace(data)) != want {
			t.Fatalf("send: %d %s, want %s", status, data, want)
		}
	}
	if len(recv.errs) != 0 || len(recv.events) != 1 || recv.events[0].Type != "billing.alert.triggered" {
		t.Fatalf("received %d, errors %v", len(recv.events), recv.errs)
	}
}

func TestStripeAPIVersionIsStripeGos(t *testing.T) {
	if providersim.StripeAPIVersion != stripe.APIVersion {
		t.Fatalf("StripeAPIVersion %s, stripe-go pins %s", providersim.StripeAPIVersion, stripe.APIVersion)
	}
}
