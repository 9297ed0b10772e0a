package ops_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/spend"
)

// TestEventRunbookShowsAQuarantinedRecord: a record the ledger refused is
// explained as quarantined, with its reason and page, in text and JSON.
func TestEventRunbookShowsAQuarantinedRecord(t *testing.T) {
	at := time.Date(2026, 11, 30, 3, 17, 0, 0, time.UTC)
	q := &spend.QuarantineRecord{RecordID: "ur_9", Units: -5, WorkloadRef: "rk-images", Path: "poll", QuarantinedAt: at,
		Reason: "negative units", DedupKey: "quarantine-ur_9", Owner: "spend-oncall"}
	r := ops.NewEventRunbook("ur_9", spend.EventExplanation{Quarantined: q}, at)
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := "event -: record ur_9, -5 units for ref rk-images via poll QUARANTINED at 2026-11-30T03:17:00Z: the ledger refused it, no total changed\n" +
		"reason\tnegative units\n" +
		"paged\tquarantine-ur_9 (reconciliation owner spend-oncall), once; a corrected record needs a new record ID\n"
	if text.String() != want {
		t.Fatalf("text:\n%s\nwant:\n%s", text.String(), want)
	}
	data, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(data), `"quarantined":{`) || strings.Contains(string(data), `"entry"`) {
		t.Fatalf("JSON %s (err %v)", data, err)
	}
}

var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// keysOf collects every object member name in a decoded JSON value.
func keysOf(v any, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			into[k] = true
			keysOf(e, into)
		}
	case []any:
		for _, e := range x {
			keysOf(e, into)
		}
	}
}

// TestEventRunbookJSONIsSnakeCase: every member name of event explain
// --json, nested ones included, is lower snake_case.
func TestEventRunbookJSONIsSnakeCase(t *testing.T) {
	at := time.Date(2026, 11, 30, 3, 17, 0, 0, time.UTC)
	d := &spend.DeferredRecord{RecordID: "ur_5", EventID: "evt_usage_ur_5", Units: 5, Status: "open", Deadline: at}
	x := spend.EventExplanation{
		Entry:         &spend.Entry{RecordID: "ur_5", EventID: "evt_usage_ur_5", WorkloadID: "workload-7", Paths: []string{"webhook"}},
		Deferred:      d,
		DeferredState: &spend.DeferredState{Record: *d, PagedKey: "spend-unresolved:o:x", PagedAt: at},
		Quarantined:   &spend.QuarantineRecord{RecordID: "ur_5", Units: 5},
		Decisions:     []spend.Decision{{WorkloadID: "workload-7", Action: "pause", RecordID: "ur_5"}},
		Workload: &spend.Explanation{Workload: spend.Workload{ID: "workload-7", Cap: 1000},
			Decisions:     []spend.Decision{{WorkloadID: "workload-7"}},
			Cause:         &spend.Entry{RecordID: "ur_5"},
			Disagreements: []spend.DisagreementRecord{{RecordID: "ur_5"}},
			Deferred:      []spend.DeferredRecord{*d},
			ReconRuns:     []spend.ReconRun{{WorkloadID: "workload-7", StartedAt: at}}},
	}
	data, err := json.Marshal(ops.NewEventRunbook("evt_usage_ur_5", x, at))
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	keysOf(v, keys)
	var bad []string
	for k := range keys {
		if !snakeKey.MatchString(k) {
			bad = append(bad, k)
		}
	}
	for _, want := range []string{"quarantined", "deferred", "deferred_state", "record_id", "event_id", "paged_key"} {
		if !keys[want] {
			bad = append(bad, "missing "+want)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("member names not lower snake_case (or missing): %v\n%s", bad, data)
	}
}

// TestEventRunbookSaysWhatHappenedPastTheDeadline: a deferral past its
// deadline says it paged or held, and when, not "status open".
func TestEventRunbookSaysWhatHappenedPastTheDeadline(t *testing.T) {
	deadline := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	now := deadline.Add(10 * time.Minute)
	d := spend.DeferredRecord{RecordID: "ur_7", EventID: "evt_usage_ur_7", Units: 5, Reason: "unknown_workload", Status: "open", Deadline: deadline}
	tests := []struct {
		name  string
		state spend.DeferredState
		want  string
	}{
		{name: "paged", state: spend.DeferredState{Record: d, PagedKey: "spend-unresolved:o:x", PagedAt: deadline.Add(time.Minute)},
			want: "status paged at 2026-11-30T03:01:00Z (spend-unresolved:o:x)"},
		{name: "held", state: spend.DeferredState{Record: d, HeldAt: deadline.Add(2 * time.Minute), HoldReason: "workload holds"},
			want: "status held at 2026-11-30T03:02:00Z (workload holds)"},
		{name: "overdue", state: spend.DeferredState{Record: d},
			want: "status overdue since 2026-11-30T03:00:00Z: the next reconciliation run pages or holds it"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ops.NewEventRunbook("evt_usage_ur_7", spend.EventExplanation{Deferred: &d, DeferredState: &tc.state}, now)
			var text bytes.Buffer
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), tc.want) || strings.Contains(text.String(), "status open") {
				t.Fatalf("text:\n%s\nwant %q", text.String(), tc.want)
			}
		})
	}
}
