package stripeusage

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stripe/stripe-go/v84"
)

// The package decodes Stripe's JSON into its own small types (wire.go).
// These tests decode the same bytes with stripe-go's types, the oracle,
// and check that every field the package reads comes out the same.

func TestAPIVersionIsStripeGos(t *testing.T) {
	if apiVersion != stripe.APIVersion {
		t.Fatalf("apiVersion %q, stripe-go's %q: update wire.go with the SDK", apiVersion, stripe.APIVersion)
	}
}

func TestSummaryPageDecodesAsStripeGo(t *testing.T) {
	body := []byte(`{"object":"list","url":"/v1/billing/meters/mtr_1/event_summaries","has_more":true,"data":[
		{"id":"mes_1","object":"billing.meter_event_summary","aggregated_value":12.5,"start_time":1772409600,
		 "end_time":1772413200,"livemode":true,"meter":"mtr_1"},
		{"id":"mes_2","object":"billing.meter_event_summary","aggregated_value":0,"start_time":1772413200,
		 "end_time":1772416800,"livemode":false,"meter":"mtr_1"}]}`)
	var want stripe.BillingMeterEventSummaryList
	var got summaryPage
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.HasMore != want.HasMore || len(got.Data) != len(want.Data) {
		t.Fatalf("has_more %t, %d summaries; stripe-go %t, %d", got.HasMore, len(got.Data), want.HasMore, len(want.Data))
	}
	for i, w := range want.Data {
		g := got.Data[i]
		if g.ID != w.ID || g.AggregatedValue != w.AggregatedValue || g.StartTime != w.StartTime ||
			g.EndTime != w.EndTime || g.Livemode != w.Livemode {
			t.Errorf("summary %d: got %+v, stripe-go %+v", i, *g, *w)
		}
	}
}

func TestErrorBodyDecodesAsStripeGo(t *testing.T) {
	body := []byte(`{"error":{"type":"invalid_request_error","code":"resource_missing","param":"id",
		"message":"No such meter: 'mtr_1'","doc_url":"https://stripe.com/docs/error-codes/resource-missing",
		"request_log_url":"https://dashboard.stripe.com/logs/req_1"}}`)
	var want struct {
		Error *stripe.Error `json:"error"`
	}
	var got apiErrorBody
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	w, g := want.Error, got.Error
	if g.Type != string(w.Type) || g.Code != string(w.Code) || g.Param != w.Param || g.Message != w.Msg {
		t.Fatalf("got %+v, stripe-go type %q code %q param %q message %q", *g, w.Type, w.Code, w.Param, w.Msg)
	}
}

func TestAlertEventDecodesAsStripeGo(t *testing.T) {
	fixture, err := os.ReadFile("testdata/billing_alert_triggered.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		body string
	}{
		{name: "the fixture", body: string(fixture)},
		{name: "a meter object", body: `{"id":"evt_1","type":"billing.alert.triggered","created":5,"livemode":false,
			"data":{"object":{"alert":{"id":"alrt_1","usage_threshold":{"meter":{"id":"mtr_9","object":"billing.meter"}}}}}}`},
		{name: "a null meter", body: `{"id":"evt_1","type":"billing.alert.triggered",
			"data":{"object":{"alert":{"id":"alrt_1","usage_threshold":{"meter":null}}}}}`},
		{name: "no usage threshold", body: `{"id":"evt_1","type":"billing.alert.triggered","data":{"object":{"alert":{"id":"alrt_1"}}}}`},
		{name: "an empty data", body: `{"id":"evt_1","type":"billing.alert.triggered","data":{}}`},
		{name: "an object that is a string", body: `{"id":"evt_1","type":"billing.alert.triggered","data":{"object":"x"}}`},
		{name: "an object that is null", body: `{"id":"evt_1","type":"billing.alert.triggered","data":{"object":null}}`},
		{name: "no data", body: `{"id":"evt_1","type":"billing.alert.triggered"}`},
		{name: "a meter that is a number", body: `{"id":"evt_1","type":"billing.alert.triggered",
			"data":{"object":{"alert":{"id":"alrt_1","usage_threshold":{"meter":5}}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given the same event, when stripe-go's types and the
			// package's decode it, then both fail or both read the same.
			var want stripe.Event
			var got event
			werr := json.Unmarshal([]byte(tt.body), &want)
			gerr := json.Unmarshal([]byte(tt.body), &got)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("event: stripe-go's error %v, the package's %v", werr, gerr)
			}
			if werr != nil {
				return
			}
			if got.ID != want.ID || got.Type != string(want.Type) || got.Created != want.Created ||
				got.Livemode != want.Livemode || got.Account != want.Account || (got.Data == nil) != (want.Data == nil) {
				t.Fatalf("event: got %+v, stripe-go %+v", got, want)
			}
			if got.Data == nil || len(got.Data.Raw) == 0 {
				return
			}
			if string(got.Data.Raw) != string(want.Data.Raw) {
				t.Fatalf("data.object: got %s, stripe-go %s", got.Data.Raw, want.Data.Raw)
			}
			// The object as the package read it with stripe-go: its alert
			// and value kept raw.
			var wobj struct {
				stripe.BillingAlertTriggered
				Alert json.RawMessage `json:"alert"`
				Value json.RawMessage `json:"value"`
			}
			var gobj triggered
			werr = json.Unmarshal(want.Data.Raw, &wobj)
			gerr = json.Unmarshal(got.Data.Raw, &gobj)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("data.object: stripe-go's error %v, the package's %v", werr, gerr)
			}
			if werr != nil {
				return
			}
			if gobj.Customer != wobj.Customer || gobj.Livemode != wobj.Livemode {
				t.Fatalf("data.object: got %+v, stripe-go %+v", gobj, wobj)
			}
			var walert stripe.BillingAlert
			werr = json.Unmarshal(wobj.Alert, &walert)
			wmeter := ""
			if u := walert.UsageThreshold; u != nil && u.Meter != nil {
				wmeter = u.Meter.ID
			}
			id, meter, gerr := readAlert(gobj.Alert)
			if (werr == nil && walert.ID != "") != (gerr == nil) {
				t.Fatalf("alert: stripe-go's error %v (id %q), the package's %v", werr, walert.ID, gerr)
			}
			if gerr == nil && (id != walert.ID || meter != wmeter) {
				t.Fatalf("alert %q meter %q, stripe-go %q %q", id, meter, walert.ID, wmeter)
			}
		})
	}
}
