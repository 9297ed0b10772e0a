package providersim_test

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v84"

	"github.com/hookline/hookline/internal/dev/providersim"
)

// day1 is a UTC midnight; the meter tests' clock starts two days later.
var day1 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// meterFixture is a simulator with a sum meter "api_calls" and a manual
// clock at day1 + 48h.
type meterFixture struct {
	sim   *providersim.Sim
	clock *providersim.ManualClock
	meter providersim.BillingMeter
	key   string
}

func newMeterFixture(t *testing.T, cfg providersim.Config) *meterFixture {
	t.Helper()
	f := &meterFixture{clock: providersim.NewManualClock(day1.Add(48 * time.Hour)), key: cfg.APIKey}
	cfg.Now = f.clock.Now
	f.sim = start(t, cfg)
	m, err := f.sim.AddMeter(providersim.BillingMeter{EventName: "api_calls"})
	if err != nil {
		t.Fatal(err)
	}
	f.meter = m
	return f
}

// call sends a request to the Stripe face with the fixture's key, a form
// body for POST.
func (f *meterFixture) call(t *testing.T, method, path string, form url.Values) (int, http.Header, []byte) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, f.sim.URL()+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if f.key != "" {
		req.Header.Set("Authorization", "Bearer "+f.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, data
}

// postEvent posts a meter event for customer at ts.
func (f *meterFixture) postEvent(t *testing.T, customer, value, identifier string, ts time.Time) (int, http.Header, stripeError) {
	t.Helper()
	form := url.Values{"event_name": {f.meter.EventName}, "payload[stripe_customer_id]": {customer},
		"payload[value]": {value}, "identifier": {identifier}, "timestamp": {strconv.FormatInt(ts.Unix(), 10)}}
	status, h, data := f.call(t, http.MethodPost, "/v1/billing/meter_events", form)
	return status, h, decodeStripeError(t, status, data)
}

// mustEvent posts a meter event that must be accepted.
func (f *meterFixture) mustEvent(t *testing.T, customer, value, identifier string, ts time.Time) {
	t.Helper()
	if status, _, e := f.postEvent(t, customer, value, identifier, ts); status != http.StatusOK {
		t.Fatalf("event %s: %d %+v", identifier, status, e)
	}
}

type stripeError struct {
	Error stripe.Error `json:"error"`
}

func decodeStripeError(t *testing.T, status int, data []byte) stripeError {
	t.Helper()
	var e stripeError
	if status != http.StatusOK {
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatalf("%d %s: %v", status, data, err)
		}
	}
	return e
}

// summaryQuery is a summaries query for customer over [start, end).
func summaryQuery(customer string, start, end time.Time, window string) url.Values {
	q := url.Values{"customer": {customer}, "start_time": {strconv.FormatInt(start.Unix(), 10)},
		"end_time": {strconv.FormatInt(end.Unix(), 10)}}
	if window != "" {
		q.Set("value_grouping_window", window)
	}
	return q
}

// summaries lists summaries of the fixture's meter, decoded with
// stripe-go's types.
func (f *meterFixture) summaries(t *testing.T, q url.Values) (int, stripe.BillingMeterEventSummaryList, stripeError) {
	t.Helper()
	status, _, data := f.call(t, http.MethodGet, "/v1/billing/meters/"+f.meter.ID+"/event_summaries?"+q.Encode(), nil)
	var list stripe.BillingMeterEventSummaryList
	if status == http.StatusOK {
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
	}
	return status, list, decodeStripeError(t, status, data)
}

// values lists the summaries as "start-hour:value" for compact checks.
func (f *meterFixture) values(t *testing.T, q url.Values) []string {
	t.Helper()
	status, list, e := f.summaries(t, q)
	if status != http.StatusOK {
		t.Fatalf("summaries: %d %+v", status, e)
	}
	var out []string
	for _, s := range list.Data {
		out = append(out, time.Unix(s.StartTime, 0).UTC().Format("02T15")+"="+strconv.FormatFloat(s.AggregatedValue, 'f', -1, 64))
	}
	return out
}

func sameStrings(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

func TestMeterSummariesByHourAndDay(t *testing.T) {
	// Given decimal events in three hours of two days, and one for another customer
	f := newMeterFixture(t, providersim.Config{})
	f.mustEvent(t, "cus_a", "0.1", "e1", day1.Add(1*time.Hour+10*time.Minute))
	f.mustEvent(t, "cus_a", "0.2", "e2", day1.Add(1*time.Hour+59*time.Minute+59*time.Second))
	f.mustEvent(t, "cus_a", "1.5", "e3", day1.Add(5*time.Hour))
	f.mustEvent(t, "cus_a", "2", "e4", day1.Add(26*time.Hour))
	f.mustEvent(t, "cus_b", "7", "e5", day1.Add(1*time.Hour))

	// When they are summed by hour, by day and over the whole range
	byHour := f.values(t, summaryQuery("cus_a", day1, day1.Add(48*time.Hour), "hour"))
	byDay := f.values(t, summaryQuery("cus_a", day1, day1.Add(48*time.Hour), "day"))
	whole := f.values(t, summaryQuery("cus_a", day1, day1.Add(47*time.Hour+30*time.Minute), ""))

	// Then empty hours are left out and each bucket holds its own customer's sum exactly
	if want := []string{"01T01=0.3", "01T05=1.5", "02T02=2"}; !sameStrings(byHour, want) {
		t.Fatalf("by hour %v, want %v", byHour, want)
	}
	if want := []string{"01T00=1.8", "02T00=2"}; !sameStrings(byDay, want) {
		t.Fatalf("by day %v, want %v", byDay, want)
	}
	if want := []string{"01T00=3.8"}; !sameStrings(whole, want) {
		t.Fatalf("whole range %v, want %v", whole, want)
	}
	if got := f.sim.MeterSum(f.meter.ID, "cus_a", day1, day1.Add(24*time.Hour)).FloatString(1); got != "1.8" {
		t.Fatalf("truth of day 1 %s, want 1.8", got)
	}

	// And the objects have Stripe's shape, with IDs that change between answers
	_, first, _ := f.summaries(t, summaryQuery("cus_a", day1, day1.Add(2*time.Hour), "hour"))
	_, second, _ := f.summaries(t, summaryQuery("cus_a", day1, day1.Add(2*time.Hour), "hour"))
	s := first.Data[0]
	if first.URL != "/v1/billing/meters/"+f.meter.ID+"/event_summaries" || first.HasMore ||
		s.Object != "billing.meter_event_summary" || s.Meter != f.meter.ID || s.Livemode ||
		s.EndTime-s.StartTime != 3600 || !strings.HasPrefix(s.ID, "mtrusg_") {
		t.Fatalf("summary %+v of list %+v", s, first.ListMeta)
	}
	if s.ID == second.Data[0].ID {
		t.Fatalf("summary ID %s is the same in two answers", s.ID)
	}
}

func TestMeterSummaryPaging(t *testing.T) {
	// Given 30 hours with events
	f := newMeterFixture(t, providersim.Config{})
	for h := range 30 {
		if _, err := f.sim.RecordMeterEvent(providersim.MeterEvent{EventName: "api_calls", Customer: "cus_a",
			Value: strconv.Itoa(h + 1), Timestamp: day1.Add(time.Duration(h) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	q := summaryQuery("cus_a", day1, day1.Add(48*time.Hour), "hour")
	q.Set("limit", "7")

	// When they are paged forwards with starting_after
	var starts []int64
	var pages []stripe.BillingMeterEventSummaryList
	for {
		status, list, e := f.summaries(t, q)
		if status != http.StatusOK || len(pages) > 10 {
			t.Fatalf("page %d: %d %+v", len(pages), status, e)
		}
		pages = append(pages, list)
		for _, s := range list.Data {
			starts = append(starts, s.StartTime)
		}
		if !list.HasMore {
			break
		}
		q.Set("starting_after", list.Data[len(list.Data)-1].ID)
	}

	// Then every bucket comes once, in order, in five pages
	if len(pages) != 5 || len(starts) != 30 {
		t.Fatalf("%d pages, %d buckets", len(pages), len(starts))
	}
	for i, s := range starts {
		if s != day1.Add(time.Duration(i)*time.Hour).Unix() {
			t.Fatalf("bucket %d starts at %d", i, s)
		}
	}

	// And ending_before leads back to the page before
	q.Del("starting_after")
	q.Set("ending_before", pages[2].Data[0].ID)
	_, back, _ := f.summaries(t, q)
	if len(back.Data) != 7 || back.Data[0].StartTime != pages[1].Data[0].StartTime || !back.HasMore {
		t.Fatalf("ending_before gave %d summaries from %d, has_more %v", len(back.Data), back.Data[0].StartTime, back.HasMore)
	}
}

func TestMeterSummaryValidation(t *testing.T) {
	f := newMeterFixture(t, providersim.Config{APIKey: "sk_test_meters"})
	ok := summaryQuery("cus_a", day1, day1.Add(time.Hour), "hour")
	tests := []struct {
		name       string
		edit       func(url.Values)
		wantStatus int
		wantCode   stripe.ErrorCode
	}{
		{name: "no customer", edit: func(q url.Values) { q.Del("customer") }, wantStatus: 400, wantCode: "parameter_missing"},
		{name: "no start", edit: func(q url.Values) { q.Del("start_time") }, wantStatus: 400, wantCode: "parameter_missing"},
		{name: "start not a number", edit: func(q url.Values) { q.Set("start_time", "soon") }, wantStatus: 400, wantCode: "parameter_invalid_integer"},
		{name: "window minute", edit: func(q url.Values) { q.Set("value_grouping_window", "minute") }, wantStatus: 400, wantCode: "parameter_invalid"},
		{name: "start off the minute", edit: func(q url.Values) {
			q.Del("value_grouping_window")
			q.Set("start_time", strconv.FormatInt(day1.Unix()+17, 10))
		}, wantStatus: 400, wantCode: "parameter_invalid"},
		{name: "hour window off the hour", edit: func(q url.Values) {
			q.Set("start_time", strconv.FormatInt(day1.Add(time.Minute).Unix(), 10))
		}, wantStatus: 400, wantCode: "parameter_invalid"},
		{name: "day window off the day", edit: func(q url.Values) { q.Set("value_grouping_window", "day") }, wantStatus: 400, wantCode: "parameter_invalid"},
		{name: "start after end", edit: func(q url.Values) { q.Set("start_time", q.Get("end_time")) }, wantStatus: 400, wantCode: "parameter_invalid"},
		{name: "limit 0", edit: func(q url.Values) { q.Set("limit", "0") }, wantStatus: 400, wantCode: "parameter_invalid"},
		{name: "limit 101", edit: func(q url.Values) { q.Set("limit", "101") }, wantStatus: 400, wantCode: "parameter_invalid"},
		{name: "limit 100", edit: func(q url.Values) { q.Set("limit", "100") }, wantStatus: 200},
		{name: "foreign cursor", edit: func(q url.Values) { q.Set("starting_after", "sum_123") }, wantStatus: 400, wantCode: "resource_missing"},
		{name: "both cursors", edit: func(q url.Values) {
			q.Set("starting_after", "mtrusg_000000000000abc")
			q.Set("ending_before", "mtrusg_000000000000abc")
		}, wantStatus: 400, wantCode: "parameter_invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := url.Values{}
			for k, v := range ok {
				q[k] = append([]string(nil), v...)
			}
			tc.edit(q)
			status, _, e := f.summaries(t, q)
			if status != tc.wantStatus || e.Error.Code != tc.wantCode {
				t.Fatalf("%d %+v, want %d %s", status, e.Error, tc.wantStatus, tc.wantCode)
			}
		})
	}
	t.Run("unknown meter", func(t *testing.T) {
		status, _, data := f.call(t, http.MethodGet, "/v1/billing/meters/mtr_nope/event_summaries?"+ok.Encode(), nil)
		if e := decodeStripeError(t, status, data); status != http.StatusNotFound || e.Error.Code != "resource_missing" {
			t.Fatalf("%d %s", status, data)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		f.key = "sk_test_other"
		defer func() { f.key = "sk_test_meters" }()
		if status, _, _ := f.summaries(t, ok); status != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401", status)
		}
	})
}

func TestMeterEventRules(t *testing.T) {
	f := newMeterFixture(t, providersim.Config{})
	now := f.clock.Now()

	t.Run("timestamp window", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			at   time.Time
			want int
		}{
			{"36 days ago", now.Add(-36 * 24 * time.Hour), 400},
			{"34 days ago", now.Add(-34 * 24 * time.Hour), 200},
			{"6 minutes ahead", now.Add(6 * time.Minute), 400},
			{"4 minutes ahead", now.Add(4 * time.Minute), 200},
		} {
			status, _, e := f.postEvent(t, "cus_ts", "1", "ts-"+tc.name, tc.at)
			if status != tc.want || (status == 400 && e.Error.Param != "timestamp") {
				t.Errorf("%s: %d %+v, want %d", tc.name, status, e.Error, tc.want)
			}
		}
	})

	t.Run("values", func(t *testing.T) {
		for _, v := range []string{"", "1/3", "-1", "1e3", "abc"} {
			if status, _, e := f.postEvent(t, "cus_v", v, "v-"+v, now); status != 400 || e.Error.Param != "payload[value]" {
				t.Errorf("value %q: %d %+v, want 400", v, status, e.Error)
			}
		}
	})

	t.Run("identifier unique for 24 hours, then counted again", func(t *testing.T) {
		// Given an event with identifier dup-1
		f.mustEvent(t, "cus_id", "5", "dup-1", f.clock.Now())

		// When it is sent again an hour later, and again 24 hours after the first
		f.clock.Advance(time.Hour)
		status, h, e := f.postEvent(t, "cus_id", "5", "dup-1", f.clock.Now())
		f.clock.Advance(23 * time.Hour)
		f.mustEvent(t, "cus_id", "5", "dup-1", f.clock.Now())

		// Then the repeat within 24 hours is refused as Stripe refuses it, and the later one counts
		if status != 400 || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Msg, "dup-1") ||
			h.Get("Stripe-Should-Retry") != "false" {
			t.Fatalf("repeat within 24h: %d %+v", status, e.Error)
		}
		if got := f.sim.MeterSum(f.meter.ID, "cus_id", day1, f.clock.Now().Add(time.Hour)).String(); got != "10/1" {
			t.Fatalf("truth %s, want 10: the identifier counts twice after 24h", got)
		}
	})

	t.Run("unknown event name is accepted and counted nowhere", func(t *testing.T) {
		form := url.Values{"event_name": {"nobody"}, "payload[stripe_customer_id]": {"cus_x"}, "payload[value]": {"1"}}
		if status, _, data := f.call(t, http.MethodPost, "/v1/billing/meter_events", form); status != http.StatusOK {
			t.Fatalf("%d %s", status, data)
		}
		if n := f.sim.MeterCalls().NoMeterFound; n != 1 {
			t.Fatalf("no meter found %d, want 1", n)
		}
		_, err := f.sim.RecordMeterEvent(providersim.MeterEvent{EventName: "nobody", Customer: "cus_x", Value: "1"})
		if !errors.Is(err, providersim.ErrNoMeter) {
			t.Fatalf("Go API: %v, want ErrNoMeter", err)
		}
	})

	t.Run("the answer is a billing.meter_event", func(t *testing.T) {
		form := url.Values{"event_name": {"api_calls"}, "payload[stripe_customer_id]": {"cus_shape"}, "payload[value]": {"2.5"}}
		status, _, data := f.call(t, http.MethodPost, "/v1/billing/meter_events", form)
		var ev stripe.BillingMeterEvent
		if err := json.Unmarshal(data, &ev); err != nil || status != 200 || ev.Object != "billing.meter_event" ||
			ev.Identifier == "" || ev.Payload["value"] != "2.5" || ev.Timestamp != f.clock.Now().Unix() {
			t.Fatalf("%d %s", status, data)
		}
	})
}

func TestMeterLag(t *testing.T) {
	// Given a global lag of 5 minutes and a second meter without lag
	f := newMeterFixture(t, providersim.Config{})
	fast, err := f.sim.AddMeter(providersim.BillingMeter{ID: "mtr_fast", EventName: "fast", Aggregation: providersim.MeterAggregationCount})
	if err != nil {
		t.Fatal(err)
	}
	f.sim.SetMeterLag("", 5*time.Minute)
	f.sim.SetMeterLag(fast.ID, 0)
	at := day1.Add(47 * time.Hour)
	q := summaryQuery("cus_a", at, at.Add(time.Hour), "hour")

	// When an event of each arrives
	f.mustEvent(t, "cus_a", "4", "lagged", at)
	if _, err := f.sim.RecordMeterEvent(providersim.MeterEvent{EventName: "fast", Customer: "cus_a", Timestamp: at}); err != nil {
		t.Fatal(err)
	}

	// Then the lagged one shows only 5 minutes later, the other at once
	fastFixture := &meterFixture{sim: f.sim, clock: f.clock, meter: fast}
	if got := fastFixture.values(t, q); !sameStrings(got, []string{"02T23=1"}) {
		t.Fatalf("fast meter %v", got)
	}
	f.clock.Advance(4*time.Minute + 59*time.Second)
	if got := f.values(t, q); len(got) != 0 {
		t.Fatalf("shown before the lag: %v", got)
	}
	f.clock.Advance(time.Second)
	if got := f.values(t, q); !sameStrings(got, []string{"02T23=4"}) {
		t.Fatalf("after the lag: %v", got)
	}
}

func TestMeterRevisions(t *testing.T) {
	// Given two events in one hour, lag 1 minute
	f := newMeterFixture(t, providersim.Config{})
	f.sim.SetMeterLag("", time.Minute)
	at := day1.Add(10 * time.Hour)
	q := summaryQuery("cus_a", day1, day1.Add(48*time.Hour), "hour")
	f.mustEvent(t, "cus_a", "2", "keep", at)
	f.mustEvent(t, "cus_a", "3", "cancel-me", at.Add(time.Minute))
	f.clock.Advance(time.Minute)
	if got := f.values(t, q); !sameStrings(got, []string{"01T10=5"}) {
		t.Fatalf("before: %v", got)
	}

	// When one is cancelled through a meter event adjustment
	status, _, data := f.call(t, http.MethodPost, "/v1/billing/meter_event_adjustments",
		url.Values{"type": {"cancel"}, "event_name": {"api_calls"}, "cancel[identifier]": {"cancel-me"}})
	var adj stripe.BillingMeterEventAdjustment
	if err := json.Unmarshal(data, &adj); err != nil || status != 200 || adj.Status != "pending" || adj.Cancel.Identifier != "cancel-me" {
		t.Fatalf("adjustment: %d %s", status, data)
	}

	// Then the bucket goes down once the lag has passed, and the truth at once
	if got := f.values(t, q); !sameStrings(got, []string{"01T10=5"}) {
		t.Fatalf("within the lag: %v", got)
	}
	f.clock.Advance(time.Minute)
	if got := f.values(t, q); !sameStrings(got, []string{"01T10=2"}) {
		t.Fatalf("after the cancel: %v", got)
	}

	// When a late event raises an older bucket, and a revision lowers it
	f.mustEvent(t, "cus_a", "1.25", "late", day1.Add(3*time.Hour))
	f.clock.Advance(time.Minute)
	up := f.values(t, q)
	if err := f.sim.ReviseMeterDown(f.meter.ID, "cus_a", day1.Add(3*time.Hour+30*time.Minute), "0.75"); err != nil {
		t.Fatal(err)
	}
	down := f.values(t, q)

	// Then both show, and the truth follows them
	if !sameStrings(up, []string{"01T03=1.25", "01T10=2"}) || !sameStrings(down, []string{"01T03=0.5", "01T10=2"}) {
		t.Fatalf("up %v, down %v", up, down)
	}
	if got := f.sim.MeterSum(f.meter.ID, "cus_a", day1, day1.Add(24*time.Hour)).FloatString(2); got != "2.50" {
		t.Fatalf("truth %s, want 2.50", got)
	}

	// And a bucket whose only event is cancelled shows 0, not nothing
	f.mustEvent(t, "cus_a", "9", "gone", day1.Add(20*time.Hour))
	if err := f.sim.CancelMeterEvent("api_calls", "gone"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Minute)
	if got := f.values(t, q); !sameStrings(got, []string{"01T03=0.5", "01T10=2", "01T20=0"}) {
		t.Fatalf("cancelled bucket: %v", got)
	}
}

func TestMeterGaps(t *testing.T) {
	f := newMeterFixture(t, providersim.Config{Seed: 7})
	for h := range 48 {
		if _, err := f.sim.RecordMeterEvent(providersim.MeterEvent{EventName: "api_calls", Customer: "cus_a",
			Value: "1", Timestamp: day1.Add(time.Duration(h) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	q := summaryQuery("cus_a", day1, day1.Add(4*time.Hour), "hour")

	t.Run("one bucket, for a while", func(t *testing.T) {
		// Given a gap at 02:30 until 10 minutes from now
		if err := f.sim.AddMeterGap(providersim.MeterGap{At: day1.Add(150 * time.Minute), Until: f.clock.Now().Add(10 * time.Minute)}); err != nil {
			t.Fatal(err)
		}
		// Then hour 2 is missing until then, and back after
		if got := f.values(t, q); !sameStrings(got, []string{"01T00=1", "01T01=1", "01T03=1"}) {
			t.Fatalf("during the gap: %v", got)
		}
		f.clock.Advance(10 * time.Minute)
		if got := f.values(t, q); len(got) != 4 {
			t.Fatalf("after the gap: %v", got)
		}
	})

	t.Run("a seeded share, until cleared", func(t *testing.T) {
		if err := f.sim.AddMeterGap(providersim.MeterGap{Customer: "cus_a", Share: 0.5}); err != nil {
			t.Fatal(err)
		}
		all := summaryQuery("cus_a", day1, day1.Add(48*time.Hour), "hour")
		all.Set("limit", "100")
		first, second := f.values(t, all), f.values(t, all)
		if len(first) == 0 || len(first) == 48 || !sameStrings(first, second) {
			t.Fatalf("%d of 48 shown, then %d", len(first), len(second))
		}
		// The same seed hides the same buckets in another simulator
		g := newMeterFixture(t, providersim.Config{Seed: 7})
		g.sim.SetMeterRateLimit("", 0)
		for h := range 48 {
			g.mustEvent(t, "cus_a", "1", "h"+strconv.Itoa(h), day1.Add(time.Duration(h)*time.Hour))
		}
		if err := g.sim.AddMeterGap(providersim.MeterGap{Share: 0.5}); err != nil {
			t.Fatal(err)
		}
		if other := g.values(t, all); !sameStrings(first, other) {
			t.Fatalf("another simulator with the seed shows %v, not %v", other, first)
		}
		f.sim.ClearMeterGaps()
		if got := f.values(t, all); len(got) != 48 {
			t.Fatalf("after clearing: %d buckets", len(got))
		}
	})

	if err := f.sim.AddMeterGap(providersim.MeterGap{}); !errors.Is(err, providersim.ErrInvalidMeter) {
		t.Fatalf("empty gap: %v", err)
	}
}

func TestMeterRateLimit(t *testing.T) {
	f := newMeterFixture(t, providersim.Config{})
	q := summaryQuery("cus_a", day1, day1.Add(time.Hour), "hour")

	// Given the default limit, 25 calls in one second of the clock pass
	for i := range providersim.DefaultMeterRateLimit {
		if status, _, e := f.summaries(t, q); status != http.StatusOK {
			t.Fatalf("call %d: %d %+v", i+1, status, e)
		}
	}
	// When a 26th comes in the same second
	status, h, data := f.call(t, http.MethodGet, "/v1/billing/meters/"+f.meter.ID+"/event_summaries?"+q.Encode(), nil)

	// Then it gets Stripe's 429, without Retry-After, and the next second passes again
	e := decodeStripeError(t, status, data)
	if status != http.StatusTooManyRequests || e.Error.Code != stripe.ErrorCodeRateLimit ||
		e.Error.Type != stripe.ErrorTypeInvalidRequest || h.Get("Retry-After") != "" {
		t.Fatalf("%d %v %s", status, h, data)
	}
	f.clock.Advance(time.Second)
	if status, _, _ := f.summaries(t, q); status != http.StatusOK {
		t.Fatalf("next second: %d", status)
	}

	// And the 429 fault answers the next calls whatever the rate, on its endpoint only
	f.sim.SetMeterRateLimit("", 0)
	f.sim.RateLimitMeterCalls(providersim.MeterSummariesEndpoint, 2)
	f.mustEvent(t, "cus_a", "1", "through", day1)
	var got []int
	for range 3 {
		status, _, _ := f.summaries(t, q)
		got = append(got, status)
	}
	if got[0] != 429 || got[1] != 429 || got[2] != 200 {
		t.Fatalf("statuses %v", got)
	}
	calls := f.sim.MeterCalls()
	if calls.Summaries != 30 || calls.RateLimited[providersim.MeterSummariesEndpoint] != 3 || calls.Events != 1 {
		t.Fatalf("calls %+v", calls)
	}
}

func TestMeterFloatNoise(t *testing.T) {
	// Given 0.1 + 0.2 in one hour and 5 in another
	f := newMeterFixture(t, providersim.Config{})
	f.mustEvent(t, "cus_a", "0.1", "a", day1)
	f.mustEvent(t, "cus_a", "0.2", "b", day1.Add(time.Minute))
	f.mustEvent(t, "cus_a", "5", "c", day1.Add(time.Hour))
	q := summaryQuery("cus_a", day1, day1.Add(2*time.Hour), "hour")
	raw := func() []json.RawMessage {
		_, _, data := f.call(t, http.MethodGet, "/v1/billing/meters/"+f.meter.ID+"/event_summaries?"+q.Encode(), nil)
		var list struct {
			Data []struct {
				Value json.RawMessage `json:"aggregated_value"`
			} `json:"data"`
		}
		if err := json.Unmarshal(data, &list); err != nil || len(list.Data) != 2 {
			t.Fatalf("%s", data)
		}
		return []json.RawMessage{list.Data[0].Value, list.Data[1].Value}
	}

	// Then without noise the values are exact decimals
	if got := raw(); string(got[0]) != "0.3" || string(got[1]) != "5" {
		t.Fatalf("exact: %s %s", got[0], got[1])
	}

	// And with noise they carry floating error a rounding removes
	f.sim.SetMeterFloatNoise(true)
	got := raw()
	if string(got[0]) != "0.30000000000000004" {
		t.Fatalf("0.1 + 0.2 rendered %s", got[0])
	}
	v, err := strconv.ParseFloat(string(got[1]), 64)
	if err != nil || v == 5 || math.Round(v) != 5 {
		t.Fatalf("5 rendered %s", got[1])
	}
}

func TestMeterLivemode(t *testing.T) {
	q := summaryQuery("cus_a", day1, day1.Add(time.Hour), "hour")

	t.Run("a live key makes a live face", func(t *testing.T) {
		f := newMeterFixture(t, providersim.Config{APIKey: "sk_live_meters"})
		f.mustEvent(t, "cus_a", "1", "a", day1)
		if _, list, _ := f.summaries(t, q); len(list.Data) != 1 || !list.Data[0].Livemode || !f.sim.MeterLivemode() {
			t.Fatalf("summaries %+v", list.Data)
		}
	})

	t.Run("the flag, and a key of the other mode", func(t *testing.T) {
		// Given a face switched to live mode that takes any key
		f := newMeterFixture(t, providersim.Config{})
		f.sim.SetMeterLivemode(true)
		f.mustEvent(t, "cus_a", "1", "a", day1)
		if _, list, _ := f.summaries(t, q); len(list.Data) != 1 || !list.Data[0].Livemode {
			t.Fatalf("summaries %+v", list.Data)
		}
		// When a test key asks, or sends an event
		f.key = "sk_test_x"
		status, _, _ := f.summaries(t, q)
		f.mustEvent(t, "cus_a", "1", "b", day1)

		// Then the test mode's world has no such meter, and the event counts nowhere
		if status != http.StatusNotFound {
			t.Fatalf("test key on a live face: %d", status)
		}
		if n := f.sim.MeterCalls().NoMeterFound; n != 1 || f.sim.MeterSum(f.meter.ID, "cus_a", day1, day1.Add(time.Hour)).Cmp(big.NewRat(1, 1)) != 0 {
			t.Fatalf("no meter found %d", n)
		}
	})
}

func TestMeterConfig(t *testing.T) {
	f := newMeterFixture(t, providersim.Config{})
	for _, m := range []providersim.BillingMeter{
		{EventName: "api_calls"},              // taken
		{EventName: "x", Aggregation: "last"}, // not decomposable
		{EventName: "y", ID: "meter_1"},       // not an mtr_ ID
		{EventName: strings.Repeat("n", 101)}, // too long
		{EventName: "z", ID: f.meter.ID},      // taken ID
	} {
		if _, err := f.sim.AddMeter(m); !errors.Is(err, providersim.ErrInvalidMeter) {
			t.Errorf("%+v: %v", m, err)
		}
	}
	if err := f.sim.ReviseMeterDown(f.meter.ID, "cus_a", day1, "-1"); !errors.Is(err, providersim.ErrInvalidMeterEvent) {
		t.Errorf("negative revision: %v", err)
	}
	if err := f.sim.CancelMeterEvent("api_calls", "never"); !errors.Is(err, providersim.ErrNoMeter) {
		t.Errorf("cancel of nothing: %v", err)
	}
	if f.sim.MeterSum("mtr_nope", "cus_a", day1, day1.Add(time.Hour)) != nil {
		t.Error("truth of an unknown meter")
	}
}
