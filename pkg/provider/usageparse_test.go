package provider_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/provider"
)

var parseNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// usageBody builds a usage webhook body with data members spliced in.
func usageBody(data string) string {
	return `{"id":"evt_1","type":"usage.recorded","data":{` + data + `}}`
}

const goodData = `"record_id":"ur_1","workload_ref":"w1","occurred_at":"2026-12-01T11:59:00Z"`

func TestParseUsageEventRefusesWhatCannotBeCounted(t *testing.T) {
	tests := []struct {
		name, body, field, reason string
	}{
		{"units null", usageBody(goodData + `,"units":null`), "data.units", "got null"},
		{"units missing", usageBody(goodData), "data.units", "required"},
		{"units zero", usageBody(goodData + `,"units":0`), "data.units", "at least 1"},
		{"units negative", usageBody(goodData + `,"units":-5`), "data.units", "at least 1"},
		{"units beyond int64", usageBody(goodData + `,"units":99999999999999999999`), "data.units", "2^53"},
		{"units beyond 2^53", usageBody(goodData + `,"units":9007199254740993`), "data.units", "2^53"},
		{"units fraction", usageBody(goodData + `,"units":1.5`), "data.units", "integer literal"},
		{"units 10.0", usageBody(goodData + `,"units":10.0`), "data.units", "integer literal"},
		{"units exponent", usageBody(goodData + `,"units":1e1`), "data.units", "integer literal"},
		{"units string", usageBody(goodData + `,"units":"5"`), "data.units", "got a string"},
		{"units twice", usageBody(goodData + `,"units":5,"units":500000`), "data.units", "given twice"},
		{"units twice escaped", usageBody(goodData + `,"units":5,"\u0075nits":500000`), "data.units", "given twice"},
		{"units other case", usageBody(goodData + `,"units":5,"Units":500000`), "data.Units", "exact"},
		{"record id missing", usageBody(`"workload_ref":"w1","units":5,"occurred_at":"2026-12-01T11:59:00Z"`), "data.record_id", "required"},
		{"record id empty", usageBody(`"record_id":"","workload_ref":"w1","units":5,"occurred_at":"2026-12-01T11:59:00Z"`), "data.record_id", "empty"},
		{"workload ref number", usageBody(`"record_id":"ur_1","workload_ref":7,"units":5,"occurred_at":"2026-12-01T11:59:00Z"`), "data.workload_ref", "string"},
		{"type deleted", `{"id":"evt_1","type":"usage.deleted","data":{` + goodData + `,"units":5}}`, "type", "usage.recorded"},
		{"type missing", `{"id":"evt_1","data":{` + goodData + `,"units":5}}`, "type", "required"},
		{"type twice", `{"id":"evt_1","type":"usage.recorded","type":"usage.deleted","data":{` + goodData + `,"units":5}}`, "type", "given twice"},
		{"id other case", `{"id":"evt_1","ID":"evt_2","type":"usage.recorded","data":{` + goodData + `,"units":5}}`, "ID", "exact"},
		{"long s", `{"id":"evt_1","type":"usage.recorded","data":{"record_id":"ur_1","workload_ref":"w1","units":5,"occurred_at":"2026-12-01T11:59:00Z","unit` + "\u017f" + `":9}}`, "data.unit\u017f", "exact"},
		{"data missing", `{"id":"evt_1","type":"usage.recorded"}`, "data", "object"},
		{"occurred missing", usageBody(`"record_id":"ur_1","workload_ref":"w1","units":5`), "data.occurred_at", "required"},
		{"occurred in 2099", usageBody(`"record_id":"ur_1","workload_ref":"w1","units":5,"occurred_at":"2099-01-01T00:00:00Z"`), "data.occurred_at", "after"},
		{"occurred in 1970", usageBody(`"record_id":"ur_1","workload_ref":"w1","units":5,"occurred_at":"1970-01-01T00:00:00Z"`), "data.occurred_at", "before"},
		{"occurred not a time", usageBody(`"record_id":"ur_1","workload_ref":"w1","units":5,"occurred_at":"yesterday"`), "data.occurred_at", "RFC 3339"},
		{"not an object", `[1]`, "", "object"},
		{"text after", usageBody(goodData+`,"units":5`) + `{}`, "", "after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a signed body that cannot become a ledger record
			// When it is parsed
			_, err := provider.ParseUsageEvent([]byte(tt.body), parseNow)

			// Then the refusal names the field and why
			fe, ok := provider.AsFieldError(err)
			if !ok || !errors.Is(err, provider.ErrInvalidUsage) {
				t.Fatalf("err = %v, want a *FieldError", err)
			}
			if fe.Field != tt.field || !strings.Contains(fe.Reason, tt.reason) {
				t.Fatalf("field %q reason %q, want %q and %q", fe.Field, fe.Reason, tt.field, tt.reason)
			}
		})
	}
}

func TestParseUsageEventReadsAGoodRecord(t *testing.T) {
	// Given a usage body at the edges of the rules
	for _, tc := range []struct{ units, at string }{
		{"1", parseNow.Add(provider.MaxUsageSkew).Format(time.RFC3339)},
		{"9007199254740992", parseNow.Add(-provider.MaxUsageAge).Format(time.RFC3339)},
	} {
		body := usageBody(`"record_id":"ur_1","workload_ref":"w1","units":` + tc.units + `,"occurred_at":"` + tc.at + `","extra":{"a":[1,2]}`)
		// When it is parsed
		ev, err := provider.ParseUsageEvent([]byte(body), parseNow)
		// Then it is read as sent
		if err != nil {
			t.Fatalf("units %s at %s: %v", tc.units, tc.at, err)
		}
		if ev.ID != "evt_1" || ev.Data.RecordID != "ur_1" || ev.Data.WorkloadRef != "w1" || ev.Data.Units < 1 {
			t.Fatalf("event = %+v", ev)
		}
	}
}

func TestDecodeUsagePageMarksBadRecordsAndRefusesABadPage(t *testing.T) {
	// Given a page with a good record, a doubled unit and a record with no ID
	body := `{"records":[
		{"record_id":"ur_1","workload_ref":"w1","units":5,"occurred_at":"2026-12-01T11:00:00Z","published_at":"2026-12-01T11:01:00Z"},
		{"record_id":"ur_2","workload_ref":"w1","units":5,"units":500000,"occurred_at":"2026-12-01T11:00:00Z"},
		{"workload_ref":"w1","units":5,"occurred_at":"2026-12-01T11:00:00Z"}],"next_page_token":"t2"}`

	// When it is decoded
	pg, err := provider.DecodeUsagePage([]byte(body))

	// Then the good record is usable and the bad ones name their field
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Records) != 3 || pg.NextPageToken != "t2" {
		t.Fatalf("page = %+v", pg)
	}
	if pg.Records[0].Invalid != nil || pg.Records[0].Units != 5 {
		t.Fatalf("record 0 = %+v", pg.Records[0])
	}
	if r := pg.Records[1]; r.Invalid == nil || r.Invalid.Field != "units" || r.RecordID != "ur_2" {
		t.Fatalf("record 1 = %+v (%v)", r, r.Invalid)
	}
	r := pg.Records[2]
	if r.Invalid == nil || r.Invalid.Field != "record_id" || !strings.HasPrefix(r.RecordID, "invalid-") {
		t.Fatalf("record 2 = %+v (%v)", r, r.Invalid)
	}
	again, _ := provider.DecodeUsagePage([]byte(body))
	if again.Records[2].RecordID != r.RecordID {
		t.Fatalf("synthetic ID not stable: %s then %s", r.RecordID, again.Records[2].RecordID)
	}

	// And a page whose own members repeat is refused
	if _, err := provider.DecodeUsagePage([]byte(`{"records":[],"next_page_token":"a","next_page_token":""}`)); !errors.Is(err, provider.ErrBadResponse) {
		t.Fatalf("err = %v, want ErrBadResponse", err)
	}
}

func TestCheckExportRecordAppliesTheTimeRulesAgainstPublication(t *testing.T) {
	pub := parseNow.Add(-time.Hour)
	tests := []struct {
		name     string
		occurred time.Time
		ok       bool
	}{
		{"just published", pub.Add(-time.Minute), true},
		{"at the reach", pub.Add(-provider.MaxUsageAge), true},
		{"past the reach", pub.Add(-provider.MaxUsageAge - time.Second), false},
		{"in 1970", time.Unix(0, 0), false},
		{"in 2099", time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := provider.CheckExportRecord(provider.UsageRecord{OccurredAt: tt.occurred, PublishedAt: pub}, parseNow)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestParseUsageEventRefusesOtherShapes(t *testing.T) {
	deep := strings.Repeat("[", 70) + strings.Repeat("]", 70)
	tests := []struct {
		name, body, field, reason string
	}{
		{"syntax error", `{"id":`, "", "invalid JSON"},
		{"nested too deep", usageBody(goodData + `,"units":5,"extra":` + deep), "", "deeper"},
		{"duplicate inside an array", usageBody(goodData + `,"units":5,"extra":[{"a":1},{"b":1,"b":2}]`), "data.extra[1].b", "given twice"},
		{"duplicate in a nested array", usageBody(goodData + `,"units":5,"extra":[[{"a":1,"a":2}]]`), "data.extra[0][0].a", "given twice"},
		{"record id too long", usageBody(`"record_id":"` + strings.Repeat("r", 256) + `","workload_ref":"w1","units":5,"occurred_at":"2026-12-01T11:59:00Z"`), "data.record_id", "longer"},
		{"record id with a space", usageBody(`"record_id":"ur 1","workload_ref":"w1","units":5,"occurred_at":"2026-12-01T11:59:00Z"`), "data.record_id", "printable"},
		{"units true", usageBody(goodData + `,"units":true`), "data.units", "a boolean"},
		{"units huge literal", usageBody(goodData + `,"units":1.` + strings.Repeat("5", 40)), "data.units", "..."},
		{"units minus alone", usageBody(goodData + `,"units":-0`), "data.units", "negative"},
		{"occurred a number", usageBody(`"record_id":"ur_1","workload_ref":"w1","units":5,"occurred_at":1700000000`), "data.occurred_at", "a number"},
		{"created not a time", `{"id":"evt_1","type":"usage.recorded","created":"soon","data":{` + goodData + `,"units":5}}`, "created", "RFC 3339"},
		{"published not a time", usageBody(goodData + `,"units":5,"published_at":"later"`), "data.published_at", "RFC 3339"},
		{"id missing", `{"type":"usage.recorded","data":{` + goodData + `,"units":5}}`, "id", "required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := provider.ParseUsageEvent([]byte(tt.body), parseNow)
			fe, ok := provider.AsFieldError(err)
			if !ok || fe.Field != tt.field || !strings.Contains(fe.Reason, tt.reason) {
				t.Fatalf("err = %v, want field %q and a reason with %q", err, tt.field, tt.reason)
			}
			if !strings.Contains(fe.Error(), "provider: invalid usage") {
				t.Fatalf("Error() = %q", fe.Error())
			}
		})
	}
}

func TestDecodeUsagePageRefusesPagesOfAnotherShape(t *testing.T) {
	for _, body := range []string{
		`[]`, `{"records":`, `{"records":{}}`, `{"records":[],"next_page_token":7}`, `{"Records":[]}`,
	} {
		// Given a page body that is not a page, when it is decoded, then
		// it is a bad response
		if _, err := provider.DecodeUsagePage([]byte(body)); !errors.Is(err, provider.ErrBadResponse) {
			t.Fatalf("%s: err = %v, want ErrBadResponse", body, err)
		}
	}
	// And a record that is not an object is marked, under a stable ID
	pg, err := provider.DecodeUsagePage([]byte(`{"records":[7,[{"a":1}]],"next_page_token":null}`))
	if err != nil || len(pg.Records) != 2 || pg.Records[0].Invalid == nil || pg.Records[0].RecordID == pg.Records[1].RecordID {
		t.Fatalf("page = %+v, %v", pg, err)
	}
	// And an empty page is a last page
	if pg, err := provider.DecodeUsagePage([]byte(`{"records":null}`)); err != nil || len(pg.Records) != 0 || pg.NextPageToken != "" {
		t.Fatalf("page = %+v, %v", pg, err)
	}
}

func TestCheckExportRecordWithoutPublicationReadsTheClock(t *testing.T) {
	// Given a record with no published_at, the run's clock is ref
	rec := provider.UsageRecord{OccurredAt: parseNow.Add(-provider.MaxUsageAge - time.Minute)}
	if err := provider.CheckExportRecord(rec, parseNow); err == nil {
		t.Fatal("a record older than the reach was let through")
	}
	rec.OccurredAt = parseNow.Add(-time.Minute)
	if err := provider.CheckExportRecord(rec, parseNow); err != nil {
		t.Fatal(err)
	}
}
