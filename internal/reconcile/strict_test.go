package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestExportRecordsOutsideTheSchemaAreQuarantinedNeverCounted(t *testing.T) {
	t.Parallel()
	// Given a workload and an export that serves, besides one good
	// record, the records the door refuses
	f := newFixture(t, options{})
	f.workload(t, "w1", 1000)
	occurred := t0.Add(-8 * time.Minute)
	at := occurred.Format(time.RFC3339)
	f.usage(t, "ok-1", "w1", 10, occurred, published)
	bad := []struct {
		id, json, field string
	}{
		{"dup-1", `{"record_id":"dup-1","workload_ref":"w1","units":5,"units":500000,"occurred_at":"` + at + `"}`, "units"},
		{"frac-1", `{"record_id":"frac-1","workload_ref":"w1","units":1.5,"occurred_at":"` + at + `"}`, "units"},
		{"ten-1", `{"record_id":"ten-1","workload_ref":"w1","units":10.0,"occurred_at":"` + at + `"}`, "units"},
		{"str-1", `{"record_id":"str-1","workload_ref":"w1","units":"5","occurred_at":"` + at + `"}`, "units"},
		{"null-1", `{"record_id":"null-1","workload_ref":"w1","units":null,"occurred_at":"` + at + `"}`, "units"},
		{"zero-1", `{"record_id":"zero-1","workload_ref":"w1","units":0,"occurred_at":"` + at + `"}`, "units"},
		{"case-1", `{"record_id":"case-1","workload_ref":"w1","units":5,"Units":500000,"occurred_at":"` + at + `"}`, "Units"},
		{"old-1", `{"record_id":"old-1","workload_ref":"w1","units":5,"occurred_at":"1970-01-01T00:00:00Z"}`, "occurred_at"},
		{"future-1", `{"record_id":"future-1","workload_ref":"w1","units":5,"occurred_at":"2099-01-01T00:00:00Z"}`, "occurred_at"},
	}
	for i, b := range bad {
		opts := published
		opts.ExportJSON = b.json
		f.usage(t, b.id, "w1", 5, occurred.Add(time.Duration(i+1)*time.Second), opts)
	}

	// When the reconciler runs, and again over the overlap
	first, err := f.rec.Run(context.Background(), "")
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	f.clock.Advance(5 * time.Minute)
	second := f.run(t)

	// Then only the good record is counted
	if got := f.total(t, "w1"); got != 10 {
		t.Fatalf("total = %d, want 10", got)
	}
	if first.Quarantined != int64(len(bad)) || second.Quarantined != int64(len(bad)) {
		t.Fatalf("quarantined = %d then %d, want %d", first.Quarantined, second.Quarantined, len(bad))
	}
	// And each refused record is quarantined with its field named
	for _, b := range bad {
		q, err := f.spend.Ledger.Quarantined(context.Background(), b.id)
		if err != nil {
			t.Fatalf("%s: %v", b.id, err)
		}
		if !strings.Contains(q.Reason, b.field+":") || q.Path != "poll" {
			t.Fatalf("%s quarantined = %+v, want the reason to name %s", b.id, q, b.field)
		}
	}
	// And paged once each, never as spend unseen, and no cap fired
	if pages := f.delivered("spend_quarantine"); len(pages) != len(bad) {
		t.Fatalf("quarantine pages = %d, want %d", len(pages), len(bad))
	}
	if unseen := f.delivered("spend_unseen"); len(unseen) != 0 {
		t.Fatalf("unseen pages = %+v, want none", unseen)
	}
	if caps := f.delivered("spend_cap"); len(caps) != 0 {
		t.Fatalf("cap pages = %d, want 0", len(caps))
	}
}

func TestExportRecordWithoutRecordIDIsQuarantinedUnderAStableID(t *testing.T) {
	t.Parallel()
	// Given an export record with no record_id
	f := newFixture(t, options{})
	f.workload(t, "w1", 1000)
	occurred := t0.Add(-8 * time.Minute)
	opts := published
	opts.ExportJSON = `{"workload_ref":"w1","units":700,"occurred_at":"` + occurred.Format(time.RFC3339) + `"}`
	f.usage(t, "placeholder", "w1", 700, occurred, opts)

	// When two runs read it
	first := f.run(t)
	f.clock.Advance(5 * time.Minute)
	second := f.run(t)

	// Then it is quarantined in both, paged once, and counts nothing
	if first.Quarantined != 1 || second.Quarantined != 1 || f.total(t, "w1") != 0 {
		t.Fatalf("quarantined %d then %d, total %d", first.Quarantined, second.Quarantined, f.total(t, "w1"))
	}
	pages := f.delivered("spend_quarantine")
	if len(pages) != 1 || !strings.Contains(pages[0].Payload.Summary, "record_id:") {
		t.Fatalf("quarantine pages = %+v, want one naming record_id", pages)
	}
}
