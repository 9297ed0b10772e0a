package usagein_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/provider"
)

var seen = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// tokenEvent is a CloudEvent of the tokens meter with the given data
// and extra attributes.
func tokenEvent(id, typ, data, extra string) string {
	return fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":"/meter","type":%q,"subject":"img-resize","time":%q%s,"data":{%s}}`,
		id, typ, seen.Add(-time.Minute).Format(time.RFC3339), extra, data)
}

func readAs(t *testing.T, m usagein.Mapping, body string) (usagein.Body, error) {
	t.Helper()
	return m.Read([]byte(body), usagein.Request{Source: "meters", DeliveryID: "msg_1", ContentType: usagein.MediaCloudEvent, Seen: seen})
}

func TestReadCloudEventUsage(t *testing.T) {
	m := parseMappings(t, tokensMapping).For("meters")
	b, err := readAs(t, m, tokenEvent("e1", "com.example.tokens", `"tokens":"12.5"`, `,"traceparent":"00-ab"`))
	if err != nil {
		t.Fatal(err)
	}
	it := b.Items[0]
	want := usagein.Record{Outcome: usagein.OutcomeUsage, Type: "com.example.tokens", RecordID: usagein.CloudEventKey("meters", "/meter", "e1"),
		WorkloadRef: "img-resize", Meter: "com.example.tokens", Unit: "milli_tokens", Units: 12500, OccurredAt: seen.Add(-time.Minute),
		Origin: usagein.Origin{Source: "/meter", ID: "e1"}}
	if it.Record != want || it.EventID != want.RecordID || b.Batch {
		t.Fatalf("read %+v (event %s)\nwant %+v", it.Record, it.EventID, want)
	}
}

func TestReadCloudEventValues(t *testing.T) {
	m := parseMappings(t, tokensMapping).For("meters")
	tests := []struct {
		name, data string
		outcome    string
		units      int64
		field      string
	}{
		{"a number", `"tokens":12.5`, usagein.OutcomeUsage, 12500, ""},
		{"an integer string", `"tokens":"7"`, usagein.OutcomeUsage, 7000, ""},
		{"zero", `"tokens":0`, usagein.OutcomeZero, 0, ""},
		{"zero as a string", `"tokens":"0.000"`, usagein.OutcomeZero, 0, ""},
		{"more precision than the scale", `"tokens":"12.5005"`, "", 0, "data.tokens"},
		{"negative", `"tokens":-1`, "", 0, "data.tokens"},
		{"null", `"tokens":null`, "", 0, "data.tokens"},
		{"missing", `"other":1`, "", 0, "data.tokens"},
		{"a boolean", `"tokens":true`, "", 0, "data.tokens"},
		{"not a decimal", `"tokens":"12,5"`, "", 0, "data.tokens"},
		{"past 2^53", `"tokens":9007199254740.993`, "", 0, "data.tokens"},
		{"spelled otherwise", `"Tokens":5`, "", 0, "data.Tokens"},
		{"given twice", `"tokens":5,"tokens":6`, "", 0, "data.tokens"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := readAs(t, m, tokenEvent("e-"+tc.name, "com.example.tokens", tc.data, ""))
			if tc.field != "" {
				fe, ok := provider.AsFieldError(err)
				if !ok || fe.Field != tc.field || fe.Reason == "" {
					t.Fatalf("err = %v, want a refusal naming %s", err, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r := b.Items[0].Record; r.Outcome != tc.outcome || r.Units != tc.units {
				t.Fatalf("outcome %s, %d units; want %s, %d", r.Outcome, r.Units, tc.outcome, tc.units)
			}
		})
	}
}

func TestReadCloudEventOtherTypesAreNotUsage(t *testing.T) {
	m := parseMappings(t, tokensMapping).For("meters")
	// Given an event of a type the mapping does not count, with no value
	b, err := readAs(t, m, tokenEvent("e2", "com.example.login", `"user":"u1"`, ""))
	// Then it is read, as not usage, under its key
	if err != nil {
		t.Fatal(err)
	}
	if r := b.Items[0].Record; r.Outcome != usagein.OutcomeNotUsage || r.Units != 0 || r.RecordID != usagein.CloudEventKey("meters", "/meter", "e2") {
		t.Fatalf("record %+v, want not usage", r)
	}
}

func TestReadCloudEventCountMeter(t *testing.T) {
	ms := parseMappings(t, `{"meters": {"format": "cloudevents", "usage_types": ["com.example.call"], "value_format": "count", "unit": "calls", "meter_name": "api_calls"}}`)
	b, err := readAs(t, ms.For("meters"), tokenEvent("e3", "com.example.call", `"path":"/v1"`, ""))
	if err != nil {
		t.Fatal(err)
	}
	if r := b.Items[0].Record; r.Units != 1 || r.Meter != "api_calls" || r.Unit != "calls" {
		t.Fatalf("record %+v, want one call on api_calls", r)
	}
}

func TestReadCloudEventTime(t *testing.T) {
	m := parseMappings(t, tokensMapping).For("meters")
	noTime := `{"specversion":"1.0","id":"e4","source":"/meter","type":"com.example.tokens","subject":"s","data":{"tokens":1}}`
	b, err := readAs(t, m, noTime)
	if err != nil || !b.Items[0].Record.OccurredAt.IsZero() {
		t.Fatalf("err %v, record %+v: an event without time happened when it was seen", err, b.Items)
	}
	at := func(d time.Duration) string {
		return strings.Replace(noTime, `"subject"`, `"time":"`+seen.Add(d).Format(time.RFC3339)+`","subject"`, 1)
	}
	// 20 days back is inside this source's 840 h
	if _, err := readAs(t, m, at(-20*24*time.Hour)); err != nil {
		t.Fatalf("20 days back refused: %v", err)
	}
	for _, d := range []time.Duration{-841 * time.Hour, 6 * time.Minute} {
		_, err := readAs(t, m, at(d))
		if fe, ok := provider.AsFieldError(err); !ok || fe.Field != "time" {
			t.Fatalf("%s: err = %v, want a refusal naming time", d, err)
		}
	}
	// and the same 20 days are outside the default rule
	def := parseMappings(t, `{"meters": {"format": "cloudevents", "usage_types": ["com.example.tokens"], "value": "/data/tokens", "unit": "u"}}`)
	if _, err := readAs(t, def.For("meters"), at(-20*24*time.Hour)); err == nil {
		t.Fatal("20 days back accepted under the default 72 h")
	}
}

func TestReadCloudEventBatch(t *testing.T) {
	m := parseMappings(t, tokensMapping).For("meters")
	batch := "[" + strings.Join([]string{
		tokenEvent("b1", "com.example.tokens", `"tokens":1`, ""),
		tokenEvent("b2", "com.example.tokens", `"tokens":"0.0001"`, ""),
		tokenEvent("b3", "com.example.other", `"x":1`, ""),
		`{"specversion":"1.0","id":"b4"}`,
	}, ",") + "]"
	// Given a batch with a good event, an out-of-scale one, another type
	// and a broken one
	b, err := m.Read([]byte(batch), usagein.Request{Source: "meters", ContentType: usagein.MediaCloudEventBatch, Seen: seen})
	if err != nil {
		t.Fatal(err)
	}
	// Then each is read on its own, each refusal naming its index
	if !b.Batch || len(b.Items) != 4 {
		t.Fatalf("batch %v with %d items", b.Batch, len(b.Items))
	}
	wantErr := map[int]string{1: "[1].data.tokens", 3: "[3].source"}
	for i, it := range b.Items {
		fe, _ := provider.AsFieldError(it.Err)
		switch {
		case wantErr[i] == "" && it.Err != nil:
			t.Errorf("item %d refused: %v", i, it.Err)
		case wantErr[i] != "" && (fe == nil || fe.Field != wantErr[i]):
			t.Errorf("item %d: err = %v, want a refusal naming %s", i, it.Err, wantErr[i])
		case it.Index != i:
			t.Errorf("item %d has index %d", i, it.Index)
		}
	}
	// A batch with no event left is refused as a whole, naming the first.
	_, err = m.Read([]byte(`[{"specversion":"1.0"}]`), usagein.Request{Source: "meters", Seen: seen})
	if fe, ok := provider.AsFieldError(err); !ok || fe.Field != "[0].id" {
		t.Fatalf("err = %v, want the first refusal", err)
	}
	// An empty batch reads as no events.
	if b, err := m.Read([]byte(`[]`), usagein.Request{Source: "meters", Seen: seen}); err != nil || len(b.Items) != 0 {
		t.Fatalf("empty batch: %+v, %v", b, err)
	}
}

func TestReadRefusesBinaryModeAndAContentTypeThatDisagrees(t *testing.T) {
	m := parseMappings(t, tokensMapping).For("meters")
	body := []byte(tokenEvent("e5", "com.example.tokens", `"tokens":1`, ""))
	_, err := m.Read(body, usagein.Request{Source: "meters", Headers: map[string]string{"ce-id": "x"}, Seen: seen})
	if fe, ok := provider.AsFieldError(err); !ok || fe.Field != "ce-id" {
		t.Fatalf("binary mode: err = %v", err)
	}
	_, err = m.Read(body, usagein.Request{Source: "meters", ContentType: usagein.MediaCloudEventBatch, Seen: seen})
	if fe, ok := provider.AsFieldError(err); !ok || fe.Field != "content-type" {
		t.Fatalf("batch content type on one event: err = %v", err)
	}
}

// hooklineBody is a usage.recorded body with the given type and data.
func hooklineBody(typ, data string) string {
	return fmt.Sprintf(`{"id":"evt_1","type":%q,"data":{%s}}`, typ, data)
}

func TestReadHooklineRefusesAsBefore(t *testing.T) {
	// usage.recorded stays one mapping: what the strict reader of the
	// earlier build refused, the door still refuses, naming the same
	// member; only zero units and other types changed (below).
	at := seen.Add(-time.Minute).Format(time.RFC3339)
	rec := `"record_id":"ur_1","workload_ref":"w1","occurred_at":"` + at + `"`
	bodies := []string{
		hooklineBody("usage.recorded", rec+`,"units":null`),
		hooklineBody("usage.recorded", rec),
		hooklineBody("usage.recorded", rec+`,"units":5,"units":500000`),
		hooklineBody("usage.recorded", rec+`,"units":-5`),
		hooklineBody("usage.recorded", rec+`,"units":99999999999999999999`),
		hooklineBody("usage.recorded", rec+`,"units":1.5`),
		hooklineBody("usage.recorded", rec+`,"units":10.0`),
		hooklineBody("usage.recorded", rec+`,"units":1e1`),
		hooklineBody("usage.recorded", rec+`,"units":"5"`),
		hooklineBody("usage.recorded", rec+`,"Units":5`),
		hooklineBody("usage.recorded", `"workload_ref":"w1","units":5,"occurred_at":"`+at+`"`),
		hooklineBody("usage.recorded", `"record_id":"ur 1","workload_ref":"w1","units":5,"occurred_at":"`+at+`"`),
		hooklineBody("usage.recorded", `"record_id":"ur_1","workload_ref":"w1","units":5,"occurred_at":"2099-01-01T00:00:00Z"`),
		hooklineBody("usage.recorded", `"record_id":"ur_1","workload_ref":"w1","units":5,"occurred_at":"1970-01-01T00:00:00Z"`),
		hooklineBody("usage.recorded", `"record_id":"ur_1","workload_ref":"w1","units":5,"occurred_at":"yesterday"`),
		`{"type":"usage.recorded","data":{` + rec + `,"units":5}}`,
		`{"id":"evt_1","type":"usage.recorded","data":[]}`,
		`{"id":"evt_1","data":{}}`,
		`[]`,
	}
	for _, body := range bodies {
		_, before := provider.ParseUsageEvent([]byte(body), seen)
		_, now := usagein.HooklineMapping.Read([]byte(body), usagein.Request{Source: "usage", Seen: seen})
		fb, ok1 := provider.AsFieldError(before)
		fn, ok2 := provider.AsFieldError(now)
		if !ok1 || !ok2 || fb.Field != fn.Field {
			t.Errorf("%s:\n before %v\n now    %v", body, before, now)
		}
	}
}

func TestReadHooklineZeroAndOtherTypes(t *testing.T) {
	at := seen.Add(-time.Minute).Format(time.RFC3339)
	read := func(body string) usagein.Record {
		t.Helper()
		b, err := usagein.HooklineMapping.Read([]byte(body), usagein.Request{Source: "usage", DeliveryID: "msg_z", Seen: seen})
		if err != nil {
			t.Fatal(err)
		}
		if b.Items[0].EventID != "msg_z" {
			t.Fatalf("event ID %q, want the delivery's", b.Items[0].EventID)
		}
		return b.Items[0].Record
	}
	if r := read(hooklineBody("usage.recorded", `"record_id":"ur_z","workload_ref":"w1","units":0,"occurred_at":"`+at+`"`)); r.Outcome != usagein.OutcomeZero || r.RecordID != "ur_z" {
		t.Fatalf("zero units: %+v, want zero usage", r)
	}
	if r := read(hooklineBody("usage.deleted", `"anything":true`)); r.Outcome != usagein.OutcomeNotUsage || r.Type != "usage.deleted" {
		t.Fatalf("usage.deleted: %+v, want not usage", r)
	}
	r := read(hooklineBody("usage.recorded", `"record_id":"ur_5","workload_ref":"w1","units":5,"occurred_at":"`+at+`"`))
	if r.RecordID != "ur_5" || r.Units != 5 || r.Meter != "units" || r.Unit != "units" || r.Outcome != usagein.OutcomeUsage {
		t.Fatalf("record %+v: the ledger key stays record_id", r)
	}
}
