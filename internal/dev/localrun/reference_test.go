package localrun_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/dev/localrun"
)

// TestAPaymentNoMessageHoldsIsChargedOnceWithItsGrants: a signed
// payment of the payments source's whole max_body (258,048 bytes) in
// varied text with U+FFFF in it is, encoded, a third larger than one SQS
// message holds. Through the running system it is accepted, carried by
// reference to its intake record, read from there by the payment worker
// with only what the template grants it, and charged once.
func TestAPaymentNoMessageHoldsIsChargedOnceWithItsGrants(t *testing.T) {
	t.Parallel()
	sys := start(t, localrun.Config{})
	// Given a payment body of max_body bytes of varied text with U+FFFF
	const maxBody = 258048
	head := `{"id":"evt_pay_ref","type":"payment.requested","data":{"customer":"cus_1","amount":4500,"currency":"usd","note":"`
	tail := `"}}`
	r := rand.New(rand.NewPCG(5, 5))
	var b strings.Builder
	b.WriteString(head)
	for b.Len() < maxBody-len(tail)-3 {
		b.WriteByte(byte('#' + r.IntN('~'-'#'))) // printable, no quote and no backslash
	}
	b.WriteString("\uffff" + tail)
	body := strings.ReplaceAll(b.String(), `\`, "/")
	if len(body) != maxBody {
		t.Fatalf("a %d-byte body, want %d", len(body), maxBody)
	}
	// when it is delivered, it is accepted,
	if code, got := postSigned(t, sys, "payments", "evt_pay_ref", []byte(body)); code != 200 || got != `{"status":"accepted"}` {
		t.Fatalf("%d %s; want 200 accepted", code, got)
	}
	// and charged once, with no call the template does not grant.
	granted(t, sys, "charged", func() bool { return sys.Sim.Charges.ChargeCount("evt_pay_ref") == 1 })
}
