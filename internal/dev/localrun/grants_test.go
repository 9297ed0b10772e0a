package localrun_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/testkit"
)

// Each function of a local run calls AWS with its own credentials, and
// the local AWS allows it only what infra/template.yaml grants it, as IAM
// would. These tests fail on a grant the template is missing, naming the
// action and resource AWS would refuse.

// noDenials fails the test with every call the local AWS refused.
func noDenials(t *testing.T, sys *localrun.System) {
	t.Helper()
	if d := sys.AWS.Denials(); len(d) > 0 {
		t.Fatalf("the local AWS refused, as AWS would:\n%s", strings.Join(d, "\n"))
	}
}

func TestSpendWorkerFoldsUsageWithItsGrants(t *testing.T) {
	t.Parallel()
	// Given a running system and a workload,
	sys, ledger := startDrill(t, workload(spend.NewWorkload{ID: "wl-grants", Cap: 1000}))
	ctx := context.Background()
	// when usage for it is received and the spend worker folds it,
	recordUsage(t, sys, "ur_grants_1", "wl-grants", 7, "send")
	// then it is counted, with no call the template does not grant.
	granted(t, sys, "usage counted", func() bool {
		w, err := ledger.Spend.Workloads.Get(ctx, "wl-grants")
		return err == nil && w.Total == 7
	})
}

// granted waits until cond holds or the local AWS refuses a call, and
// fails the test on a refusal.
func granted(t *testing.T, sys *localrun.System, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, what+" or a call refused", func() bool { return len(sys.AWS.Denials()) > 0 || cond() })
	noDenials(t, sys)
}

func TestEveryFunctionCallsOnlyWhatItIsGranted(t *testing.T) {
	t.Parallel()
	// Given a running system with a sums source and a workload,
	hour := time.Now().UTC().Truncate(time.Hour)
	d := startSumsDrill(t, hour.Add(-2*time.Hour))
	d.workload("wl-granted", "cus_granted", 1_000_000)
	ctx := context.Background()
	// when usage is counted in its bucket (receiver, spend worker),
	d.door("g1", "cus_granted", "3", hour.Add(-30*time.Minute))
	granted(t, d.sys, "the usage in its bucket", func() bool {
		bs, err := d.ledger.Spend.Explainer.Buckets(ctx, "wl-granted", 0)
		return err == nil && len(bs) == 1 && bs[0].W == 3
	})
	// a payment is charged (receiver, payment worker),
	body := []byte(`{"id":"evt_granted","type":"payment.requested","data":{"customer":"cus_1","amount":4500,"currency":"usd"}}`)
	if code, got := postSigned(t, d.sys, "payments", "evt_granted", body); code != 200 {
		t.Fatalf("payment: %d %s", code, got)
	}
	granted(t, d.sys, "the payment charged", func() bool { return d.sys.Sim.Charges.ChargeCount("evt_granted") == 1 })
	// admission is asked for (admission),
	if code, got := admission(t, d.sys, "wl-granted"); code != 200 || got["allowed"] != true {
		t.Fatalf("admission: %d %v", code, got)
	}
	// and the reconciler reads the workload's sums twice (reconciler),
	var calls providersim.MeterCallCounts
	d.sim(http.MethodGet, "/calls", nil, &calls)
	from := calls.Summaries
	granted(t, d.sys, "two reconciler runs", func() bool {
		d.sim(http.MethodGet, "/calls", nil, &calls)
		return calls.Summaries >= from+2
	})
	// then no function made a call the template does not grant it.
	noDenials(t, d.sys)
}
