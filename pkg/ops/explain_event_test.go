package ops_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/ops"
	"github.com/hookline/hookline/pkg/spend"
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
	if err != nil || !strings.Contains(string(data), `"Quarantined":{`) || strings.Contains(string(data), `"entry"`) {
		t.Fatalf("JSON %s (err %v)", data, err)
	}
}
