package localrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/testkit"
)

func postSigned(t *testing.T, sys *localrun.System, source, id string, body []byte) (int, string) {
	t.Helper()
	code, got, err := signedPost(sys, source, id, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, got
}

// signedPost posts body to a source's webhook signed with its dev secret
// at the run's time; it calls no test method, so goroutines may use it.
func signedPost(sys *localrun.System, source, id string, body []byte) (int, string, error) {
	return signedPostAt(sys, source, id, sys.Clock().Now(), body)
}

func TestPaymentWebhookSentTwiceChargesOnce(t *testing.T) {
	t.Parallel()
	sys := start(t, localrun.Config{})
	body := []byte(`{"id":"evt_e2e_1","type":"payment.requested","data":{"customer":"cus_1","amount":4500,"currency":"usd"}}`)
	for i, want := range []string{`{"status":"accepted"}`, `{"status":"duplicate"}`} {
		if code, got := postSigned(t, sys, "payments", "evt_e2e_1", body); code != 200 || got != want {
			t.Fatalf("delivery %d: %d %s", i, code, got)
		}
	}
	testkit.Eventually(t, 30*time.Second, "charged", func() bool { return sys.Sim.Charges.ChargeCount("evt_e2e_1") == 1 })
	time.Sleep(300 * time.Millisecond)
	if n := sys.Sim.Charges.TotalCharges(); n != 1 {
		t.Fatalf("%d charges, want 1", n)
	}
}

// recordUsage drives the provider simulator: it records usage in its
// export and sends the signed webhook to the local receiver.
func recordUsage(t *testing.T, sys *localrun.System, record, ref string, units int64, webhookMode string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"record_id": record, "workload_ref": ref, "units": units, "webhook": webhookMode})
	resp, err := http.Post(sys.Sim.URL()+"/sim/usage", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || (webhookMode == "send" && !strings.Contains(string(b), `"receiver_status":200`)) {
		t.Fatalf("record usage: %d %s", resp.StatusCode, b)
	}
}

func admission(t *testing.T, sys *localrun.System, id string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(sys.URL + "/workloads/" + id + "/admission")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestUsageCrossingTheCapPausesPagesAndDeniesAdmission(t *testing.T) {
	t.Parallel()
	// Given a running system whose workers start late (the worker is
	// delayed after intake),
	sys, ledger := startDrill(t, noWorkers(),
		workload(spend.NewWorkload{ID: "workload-7", Owner: "images-team", RoutingKey: "rk-images", Cap: 1000}, "img-resize"))
	ctx := context.Background()
	if code, got := admission(t, sys, "workload-7"); code != 200 || got["allowed"] != true {
		t.Fatalf("admission before: %d %v", code, got)
	}
	// and the pager endpoint down,
	sys.Sim.Pager.SetPagerDown(true)
	// when usage events are accepted (one delivered twice) and cross the cap,
	for i, units := range []int64{400, 400, 400} {
		recordUsage(t, sys, fmt.Sprintf("ur_%d", i), "img-resize", units, "send")
	}
	if code, _ := postSigned(t, sys, "usage", "evt_usage_ur_0", mustEvent(t, sys, "ur_0")); code != 200 {
		t.Fatalf("redelivery: %d", code)
	}
	if err := sys.StartWorkers(); err != nil {
		t.Fatal(err)
	}
	// then nothing is lost: the total is exactly the three records, and
	// the workload is paused (the cap is checked, and the workload paused,
	// in a write after the one that adds the record to the total),
	testkit.Eventually(t, 30*time.Second, "attributed and paused", func() bool {
		w, err := ledger.Spend.Workloads.Get(ctx, "workload-7")
		return err == nil && w.Total == 1200 && w.Status == spend.StatusPaused
	})
	// so producers are refused,
	code, got := admission(t, sys, "workload-7")
	if code != http.StatusLocked || got["allowed"] != false || got["reason"] != "spend_cap" || got["cap"] != float64(1000) {
		t.Fatalf("admission after: %d %v", code, got)
	}
	if len(sys.Sim.Pager.Pages()) != 0 {
		t.Fatal("paged while the pager was down")
	}
	// and once the pager is back the page is delivered exactly once.
	// (A failed send backs off 5 s before the outbox tries again.)
	sys.Sim.Pager.SetPagerDown(false)
	testkit.Eventually(t, 30*time.Second, "page delivered", func() bool {
		if _, err := ledger.Outbox.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return len(sys.Sim.Pager.Pages()) > 0
	})
	for range 3 {
		ledger.Outbox.Flush(ctx)
	}
	pages := sys.Sim.Pager.Pages()
	if len(pages) != 1 {
		t.Fatalf("%d pages, want 1", len(pages))
	}
	summary := pages[0].Payload.Summary
	// The tipping event is whichever of the three the worker applied last.
	if !pageLine.MatchString(summary) {
		t.Fatalf("page line %q", summary)
	}
}

var pageLine = regexp.MustCompile(`^spend cap action=pause workload=workload-7 attributed=1200 cap=1000 event=evt_usage_ur_[012] record=ur_[012] observed=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)

func mustEvent(t *testing.T, sys *localrun.System, record string) []byte {
	t.Helper()
	ev, ok := sys.Sim.Usage.UsageEvent(record)
	if !ok {
		t.Fatalf("no usage event for %s", record)
	}
	b, _ := json.Marshal(ev)
	return b
}
