package localrun_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/testkit"
)

// TestBodiesWithACharacterSQSRefusesReachTheWorkers: SQS refuses a
// message body with a character outside its set, such as U+FFFF, which
// a signed JSON body may hold in any string. Through the receiver, the
// queues and both workers of the running system, such a payment is
// charged once and such a usage record is read and attributed.
func TestBodiesWithACharacterSQSRefusesReachTheWorkers(t *testing.T) {
	t.Parallel()
	sys := start(t, localrun.Config{})
	// When a payment and a usage event, each with U+FFFF in a name, are
	// delivered
	payment := []byte(`{"id":"evt_pay_ffff","type":"payment.requested","data":{"customer":"cus_1","amount":4500,"currency":"usd",` +
		`"name":"Ada ` + "\uffff" + ` Lovelace"}}`)
	at := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	usage := fmt.Appendf(nil, `{"id":"evt_use_ffff","type":"usage.recorded","data":{"record_id":"ur_ffff","workload_ref":"wl-nobody",`+
		`"units":7,"occurred_at":%q,"name":"Ada `+"\uffff"+` Lovelace"}}`, at)
	for _, d := range []struct {
		source, id string
		body       []byte
	}{{"payments", "evt_pay_ffff", payment}, {"usage", "evt_use_ffff", usage}} {
		// then each is accepted,
		if code, got := postSigned(t, sys, d.source, d.id, d.body); code != 200 || got != `{"status":"accepted"}` {
			t.Fatalf("%s: %d %s; want 200 accepted", d.id, code, got)
		}
	}
	// the payment is charged once,
	testkit.Eventually(t, 30*time.Second, "charged", func() bool { return sys.Sim.Charges.ChargeCount("evt_pay_ffff") == 1 })
	// and the spend worker reads the usage record: its workload is
	// unknown, so it is deferred, as its intake record says
	var got [3]string
	testkit.Eventually(t, 30*time.Second, "attributed", func() bool {
		got = intakeAttribution(t, sys, "usage", "evt_use_ffff")
		return got[0] != ""
	})
	if want := [3]string{"deferred", "", spend.ReasonUnknownWorkload}; got != want {
		t.Fatalf("attribution, workload, reason = %q, want %q", got, want)
	}
}
