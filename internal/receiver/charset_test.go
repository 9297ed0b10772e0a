package receiver_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/pkg/queue"
)

// TestABodyWithACharacterSQSRefusesIsAcceptedAndCarriedAsSigned: SQS
// refuses a message body with a character outside its set (U+FFFF, a
// control character). Such a body can be valid UTF-8 and valid JSON, and
// signed: sent as it is, every retry would be answered 503. It is
// accepted, and its message carries the signed bytes, encoded.
func TestABodyWithACharacterSQSRefusesIsAcceptedAndCarriedAsSigned(t *testing.T) {
	// Given a correctly signed body with U+FFFF in a customer's name
	f := newFixture(t, nil, nil)
	body := `{"type":"payment.succeeded","data":{"customer":{"name":"Ada ` + "\uffff" + ` Lovelace"}}}`
	// When the receiver handles it
	resp := f.handle(t, standardRequest(t, "msg_ffff", body, time.Now()))
	// Then it is accepted
	if resp.StatusCode != 200 || resp.Body != `{"status":"accepted"}` {
		t.Fatalf("got %d %s; want 200 accepted", resp.StatusCode, resp.Body)
	}
	// and its message, marked encoded, carries the signed bytes
	msgs := f.drain(t, "payments")
	if len(msgs) != 1 {
		t.Fatalf("enqueued %d messages, want 1", len(msgs))
	}
	enc := aws.ToString(msgs[0].MessageAttributes[queue.BodyEncodingAttribute].StringValue)
	if got, err := queue.DecodeBody(aws.ToString(msgs[0].Body), enc); err != nil || got != body || enc != queue.BodyGzipBase64 {
		t.Fatalf("message decodes (%q) to %q, %v; want the signed body", enc, got, err)
	}
}

// TestAnOrdinaryBodyIsItsOwnMessage: a body SQS takes is sent as it came,
// readable, with no encoding attribute.
func TestAnOrdinaryBodyIsItsOwnMessage(t *testing.T) {
	f := newFixture(t, nil, nil)
	body := `{"type":"payment.succeeded","data":{"customer":{"name":"Zoë 🚀"}}}`
	if resp := f.handle(t, standardRequest(t, "msg_plain", body, time.Now())); resp.StatusCode != 200 {
		t.Fatalf("got %d %s; want 200", resp.StatusCode, resp.Body)
	}
	msgs := f.drain(t, "payments")
	if _, marked := msgs[0].MessageAttributes[queue.BodyEncodingAttribute]; len(msgs) != 1 || aws.ToString(msgs[0].Body) != body || marked {
		t.Fatalf("message %q, attributes %v; want the body as it came", aws.ToString(msgs[0].Body), msgs[0].MessageAttributes)
	}
}
