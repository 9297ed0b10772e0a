package localrun_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/testkit"
)

// stripeRunFaults are the provider faults of the local Stripe drill: the
// hostile ones of the provider contract, with commits at most 1 s late:
// a local run's horizon is the simulator's lag plus 3 s.
var stripeRunFaults = []providersim.Fault{
	{Kind: providersim.FaultCommitThenError, Status: 502, Body: "<html><body>502 Bad Gateway</body></html>"},
	{Kind: providersim.FaultCommitThenError, Status: 500},
	{Kind: providersim.FaultDropAfterCharge},
	{Kind: providersim.FaultSlowCommit, Delay: time.Second},
	{Kind: providersim.FaultKeyInUse, Delay: time.Second},
	{Kind: providersim.FaultServerError, Status: 503},
	{Kind: providersim.FaultReset},
	{Kind: providersim.FaultRateLimit, RetryAfter: "0"},
	{},
}

// settleBound is how long the Stripe drill may take to settle: a bound
// for liveness, never a measure of speed.
const settleBound = 2 * time.Minute

// hashOf draws a number from parts alone, never from arrival order.
func hashOf(parts ...string) uint64 {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return binary.BigEndian.Uint64(sum[:8])
}

// queueEmpty reports whether a queue holds no message, visible or in
// flight.
func queueEmpty(t *testing.T, sys *localrun.System, name string) bool {
	t.Helper()
	out, err := sys.AWS.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(sys.AWS.QueueURL(name)),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes["ApproximateNumberOfMessages"] == "0" && out.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
}

// TestStripeLocalRunChargesOnce runs the local system as `hookline run
// --provider stripe --payment-mappings testdata/payments/stripe-mappings.json`
// does: Stripe invoice.finalized webhooks, each sent twice, go through the
// HTTP API, the receiver, SQS and the payment worker with the Stripe
// adapter to the simulator's Stripe face, which misbehaves on first
// requests while a tenth of the acknowledgements are lost. Every invoice
// is charged exactly once, the declined one never.
func TestStripeLocalRunChargesOnce(t *testing.T) {
	t.Parallel()
	mappings, err := os.ReadFile("../../../testdata/payments/stripe-mappings.json")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	dropped, seen := map[string]bool{}, map[string]bool{}
	sys := start(t, localrun.Config{
		PaymentProvider: config.ProviderStripe, PaymentMappings: string(mappings),
		Sim: providersim.Config{Profile: providersim.ProfileHonoursKeys, APIKey: "sk_test_drill", NormaliseCurrency: true,
			LookupLag: 300 * time.Millisecond},
		// The first acknowledgement of every tenth message is lost: message
		// IDs are random, so counting them keeps the number of losses
		// fixed (at least 3 of the 30 messages).
		DropAck: func(id string) bool {
			mu.Lock()
			defer mu.Unlock()
			if seen[id] {
				return false
			}
			seen[id] = true
			if len(seen)%10 != 0 {
				return false
			}
			dropped[id] = true
			return true
		},
	})
	_, err = sys.AWS.SQS.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{
		QueueUrl: aws.String(sys.AWS.QueueURL("payments")), Attributes: map[string]string{"VisibilityTimeout": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	sys.Sim.Faults.SetFaultFunc(func(key string, n int) providersim.Fault {
		if n > 1 {
			return providersim.Fault{}
		}
		return stripeRunFaults[hashOf("fault", key)%uint64(len(stripeRunFaults))]
	})

	const events = 30
	ids, bodies := make([]string, events), make([][]byte, events)
	for i := range events {
		ids[i] = fmt.Sprintf("evt_inv_%02d", i)
		customer := fmt.Sprintf("cus_%02d", i)
		if i == 7 {
			customer = providersim.DeclineCustomer
		}
		bodies[i] = fmt.Appendf(nil, `{"id":%q,"object":"event","type":"invoice.finalized","data":{"object":{"id":"in_%02d","object":"invoice","customer":%q,"amount_due":%d,"currency":"USD","number":"N-%02d"}}}`,
			ids[i], i, customer, 1000+i*10, i)
		if code, got := postSigned(t, sys, "payments", ids[i], bodies[i]); code != 200 {
			t.Fatalf("%s: %d %s", ids[i], code, got)
		}
	}
	// The second copy of each waits out the first's send lease (2 s)
	// before the receiver sends it again, so the copies go at once.
	answers := make([]string, events)
	var sent sync.WaitGroup
	for i := range events {
		sent.Go(func() {
			code, got, err := signedPost(sys, "payments", ids[i], bodies[i])
			if err != nil || code != 200 {
				answers[i] = fmt.Sprintf("%s, second copy: %d %s %v", ids[i], code, got, err)
			}
		})
	}
	sent.Wait()
	if failed := strings.Join(slices.DeleteFunc(answers, func(a string) bool { return a == "" }), "\n"); failed != "" {
		t.Fatal(failed)
	}
	// The slowest invoice waits out a settle horizon (3.3 s), an
	// in-progress lease and a 2 s visibility timeout or two: about 11 s on
	// an idle machine. The bound is for liveness only, with room for a
	// loaded 2-core machine running other packages beside this one.
	testkit.Eventually(t, settleBound, "every invoice charged or declined", func() bool { return sys.Sim.Charges.TotalCharges() >= events })
	testkit.Eventually(t, settleBound, "every message acknowledged", func() bool { return queueEmpty(t, sys, "payments") })
	sys.Sim.Charges.WaitCommits()
	for i, id := range ids {
		want := 1
		if i == 7 {
			want = 0
		}
		if n := sys.Sim.Charges.SucceededCount(id); n != want {
			t.Errorf("%s charged %d times, want %d", id, n, want)
		}
	}
	if d := sys.Sim.Charges.DuplicateCharges(); d != 0 || len(sys.Sim.Faults.FaultsInjected()) == 0 || len(dropped) == 0 {
		t.Fatalf("%d duplicate charges; faults %v, %d acknowledgements lost", d, sys.Sim.Faults.FaultsInjected(), len(dropped))
	}
	t.Logf("faults %v, %d acknowledgements lost, %d creates", sys.Sim.Faults.FaultsInjected(), len(dropped), sys.Sim.Charges.Creates())
	for _, ch := range sys.Sim.Charges.All() {
		if ch.Currency != "usd" || ch.Amount < 1000 {
			t.Errorf("charge %+v: not the invoice's amount and currency", ch)
		}
	}
}
