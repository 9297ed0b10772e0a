package ops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/testkit"
)

func TestPeekOfAUsageMessageNamesTheRefusedField(t *testing.T) {
	t.Parallel()
	// Given usage messages dead-lettered for a doubled unit and a
	// missing record ID (received at 2026-01-02T03:04:05Z)
	h := newHarness(t, harnessOptions{})
	data := `"workload_ref":"w1","occurred_at":"2026-01-02T03:00:00Z"`
	h.deadLetter(t, "usage-dlq", "usage", "evt_twice", `{"id":"evt_twice","type":"usage.recorded","data":{"record_id":"ur_t",`+data+`,"units":5,"units":500000}}`)
	h.deadLetter(t, "usage-dlq", "usage", "evt_noid", `{"id":"evt_noid","type":"usage.recorded","data":{`+data+`,"units":5}}`)
	testkit.Eventually(t, 30*time.Second, "two messages counted", func() bool { vis, _ := h.counts(t, "usage-dlq"); return vis == 2 })

	// When the operator peeks
	msgs, err := h.ops.Peek(context.Background(), "usage-dlq", 10)
	must(t, err)

	// Then each status names the field and why
	got := statesByEvent(msgs, func(m ops.Message) (string, string) { return m.EventID, m.Status.State + " " + m.Status.Error })
	for id, want := range map[string]string{
		"evt_twice": ops.StateUnknown + " malformed usage message: data.units: member given twice",
		"evt_noid":  ops.StateUnknown + " malformed usage message: data.record_id: required",
	} {
		if !strings.HasPrefix(got[id], want) {
			t.Fatalf("%s: %q, want %q", id, got[id], want)
		}
	}
}
