package paymentworker_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// encoded is m as it travels when SQS would refuse its body: gzip, then
// base64, marked by the attribute body_encoding (docs/intake-ordering.md).
func encoded(t *testing.T, m events.SQSMessage) events.SQSMessage {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, err := w.Write([]byte(m.Body))
	must(t, err)
	must(t, w.Close())
	m.Body = base64.StdEncoding.EncodeToString(b.Bytes())
	enc := "gzip+base64"
	m.MessageAttributes["body_encoding"] = events.SQSMessageAttribute{DataType: "String", StringValue: &enc}
	return m
}

// TestAnUntrustedItemThatTravelsEncodedIsFetchedBeforeActing: the worker
// decodes a message before it looks for an item to fetch, so an
// untrusted item is fetched whatever form its message takes, and acted
// on only as its provider holds it.
func TestAnUntrustedItemThatTravelsEncodedIsFetchedBeforeActing(t *testing.T) {
	t.Parallel()
	r := newMollieRig(t)
	// Given a payment Mollie holds as open, pinged in an encoded message
	r.mollie.SetPayment(molliePaid("tr_enc1", "open"))
	ping := encoded(t, r.ping(t, "tr_enc1"))
	// when it is handled, then nothing is charged and it comes back
	if ok := r.handle(t, ping); ok || r.sim.Charges.TotalCharges() != 0 || r.queue.DeadLettered(ping.MessageId) != "" {
		t.Fatalf("open: acknowledged %v (dead-lettered %q), %d charges; want it back, uncharged", ok, r.queue.DeadLettered(ping.MessageId), r.sim.Charges.TotalCharges())
	}
	// and once Mollie holds it as paid, it is charged once
	r.mollie.SetPayment(molliePaid("tr_enc1", "paid"))
	if ok := r.handle(t, ping); !ok || r.sim.Charges.TotalCharges() != 1 {
		t.Fatalf("paid: acknowledged %v, %d charges; want once", ok, r.sim.Charges.TotalCharges())
	}
}
