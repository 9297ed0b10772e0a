package localrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/testkit"
)

func TestBadUsageGetsA400AndChangesNoTotal(t *testing.T) {
	t.Parallel()
	// Given the running system and a workload with cap 1,000
	sys, ledger := startDrill(t, workload(spend.NewWorkload{ID: "wl-edge", Cap: 1000}))
	ctx := context.Background()
	at := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	body := func(id, typ, data string) []byte {
		return fmt.Appendf(nil, `{"id":%q,"type":%q,"data":{"workload_ref":"wl-edge",%s}}`, id, typ, data)
	}
	rec := func(n int, rest string) string {
		return fmt.Sprintf(`"record_id":"ur_edge_%d","occurred_at":%q%s`, n, at, rest)
	}
	bad := []struct {
		body  []byte
		field string
	}{
		{body("evt_e1", "usage.recorded", rec(1, `,"units":null`)), "data.units"},
		{body("evt_e2", "usage.recorded", rec(2, ``)), "data.units"},
		{body("evt_e4", "usage.recorded", rec(4, `,"units":5,"units":500000`)), "data.units"},
		{body("evt_e5", "usage.recorded", rec(5, `,"units":{"n":5}`)), "data.units"},
		{body("evt_e6", "usage.recorded", `"record_id":"ur_edge_6","units":5,"occurred_at":"2099-01-01T00:00:00Z"`), "data.occurred_at"},
		{body("evt_e7", "usage.recorded", `"record_id":"ur_edge_7","units":5,"occurred_at":"1970-01-01T00:00:00Z"`), "data.occurred_at"},
		{body("evt_e8", "usage.recorded", rec(8, `,"units":-5`)), "data.units"},
		{body("evt_e9", "usage.recorded", rec(9, `,"units":99999999999999999999`)), "data.units"},
		{body("evt_e10", "usage.recorded", rec(10, `,"units":1.5`)), "data.units"},
		{body("evt_e11", "usage.recorded", rec(11, `,"units":10.0`)), "data.units"},
		{body("evt_e12", "usage.recorded", rec(12, `,"units":"5"`)), "data.units"},
		{body("evt_e13", "usage.recorded", `"units":5,"occurred_at":"`+at+`"`), "data.record_id"},
	}
	// When each bad body is sent, signed, twice
	for i, b := range bad {
		for range 2 {
			code, got := postSigned(t, sys, "usage", fmt.Sprintf("evt_e%d", i+1), b.body)
			// Then each answer is a 400 naming the field
			var ans struct{ Error, Field, Reason string }
			if err := json.Unmarshal([]byte(got), &ans); err != nil || code != 400 || ans.Error != "invalid_usage" || ans.Field != b.field {
				t.Fatalf("%s: %d %s, want 400 invalid_usage naming %s", b.body, code, got, b.field)
			}
		}
	}
	// And a good record sent after them is the only one counted
	if code, got := postSigned(t, sys, "usage", "evt_e_ok", body("evt_e_ok", "usage.recorded", rec(99, `,"units":5`))); code != 200 {
		t.Fatalf("good usage: %d %s", code, got)
	}
	testkit.Eventually(t, 30*time.Second, "good record counted", func() bool {
		w, err := ledger.Spend.Workloads.Get(ctx, "wl-edge")
		return err == nil && w.Total == 5
	})
	w, err := ledger.Spend.Workloads.Get(ctx, "wl-edge")
	if err != nil || w.Total != 5 || w.Status != spend.StatusActive {
		t.Fatalf("workload = %+v, %v; want total 5, active", w, err)
	}
}
