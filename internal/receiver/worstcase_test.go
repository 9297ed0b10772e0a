package receiver_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/receiver"
	"github.com/hookline/hookline/pkg/queue"
	"github.com/hookline/hookline/pkg/secrets"
	"github.com/hookline/hookline/pkg/webhook"
	"github.com/hookline/hookline/pkg/webhook/webhooktest"
)

// The worst body for a message's size is one of max_body bytes that SQS
// takes only encoded (it holds U+FFFF) and that gzip cannot shrink
// (varied text): encoded, its message is a third larger than the body.
// Such a body is signed, within its source's limit, and must be taken.

// padChars are the printable ASCII characters that every kit's body
// carries as they are: none is escaped in JSON, XML or a form.
const padChars = " !#$'()*,-./0123456789:;?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`abcdefghijklmnopqrstuvwxyz{|}~"

// pad is n bytes of seeded varied printable text, with U+FFFF in its
// middle when ffff is set; the first bytes of a longer pad are a shorter
// one's.
func pad(seed uint64, n int, ffff bool) string {
	r := rand.New(rand.NewPCG(seed, seed))
	var b strings.Builder
	for range n {
		b.WriteByte(padChars[r.IntN(len(padChars))])
	}
	s := b.String()
	if !ffff || n < 3 {
		return s
	}
	return s[:n/2] + "\uffff" + s[n/2+3:]
}

// padAt is where each kit's event takes a pad inside the item its
// message carries (a JSON member, or an XML element); the default is as
// the first member of the body.
var padAt = map[webhook.Scheme]struct{ anchor, open, close string }{
	webhook.SchemeAdyen:      {`"additionalData":{`, `"pad":"`, `"`},
	webhook.SchemeGoCardless: {`[{`, `"pad":"`, `",`},
	webhook.SchemeBraintree:  {`<notification>`, `<pad>`, `</pad>`},
}

// Two schemes cannot carry U+FFFF at all. Braintree's body is XML, in
// which U+FFFF is no character (XML 1.0, Char): such a body is refused
// as malformed whatever its size, and its worst case is the ASCII one.
// Mollie's body is one form field, id=tr_..., and its item is built
// from that ID alone: its message is small whatever is sent.
var noFFFF = map[webhook.Scheme]bool{webhook.SchemeBraintree: true, webhook.SchemeMollie: true}

// worstDelivery is a signed delivery of the kit's event with a pad
// inside its item, of n bytes sent (Braintree's base64 form: at most 3
// under).
func worstDelivery(t *testing.T, k webhooktest.Kit, id string, n int, ffff bool) (webhook.HeaderMap, []byte) {
	t.Helper()
	at, ok := padAt[k.Scheme]
	if !ok {
		at.anchor, at.open, at.close = `{`, `"pad":"`, `",`
	}
	event := k.Event(id)
	secret := ""
	if len(k.Secrets) > 0 {
		secret = k.Secrets[0]
	}
	if k.Scheme == webhook.SchemeMollie {
		h, sent, err := k.Sign(secret, id, time.Now(), event)
		if err != nil {
			t.Fatal(err)
		}
		return h, sent
	}
	size := n - len(event)
	for range 64 {
		i := bytes.Index(event, []byte(at.anchor)) + len(at.anchor)
		body := append(append(bytes.Clone(event[:i]), at.open+pad(97, size, ffff)+at.close...), event[i:]...)
		h, sent, err := k.Sign(secret, id, time.Now(), body)
		if err != nil {
			t.Fatal(err)
		}
		switch over := len(sent) - n; {
		case over == 0, over < 0 && over >= -3 && k.Scheme == webhook.SchemeBraintree:
			return h, sent
		case over > 0 && k.Scheme == webhook.SchemeBraintree:
			size -= max(over*3/4, 1)
		default:
			size -= over
		}
	}
	t.Fatalf("%s: no body of %d bytes", k.Scheme, n)
	return nil, nil
}

// TestTheWorstBodyOfEachSchemeIsAcceptedAndReachesTheWorkerWhole: for
// every scheme, with max_body left at its default and a queue whose
// messages hold 256 KiB, a signed body of the limit made of varied text
// with U+FFFF in it is accepted, and the worker reads the payload the
// intake recorded, whole. So is a body of the limit all in ASCII, which
// travels as its own message.
func TestTheWorstBodyOfEachSchemeIsAcceptedAndReachesTheWorkerWhole(t *testing.T) {
	f := newFixture(t, nil, nil)
	messageLimit256KiB(t, f)
	for _, k := range webhooktest.Kits(t) {
		for _, tc := range []struct {
			name string
			ffff bool
		}{{"varied text with U+FFFF", true}, {"ASCII", false}} {
			if tc.ffff && noFFFF[k.Scheme] {
				continue
			}
			t.Run(string(k.Scheme)+"/"+tc.name, func(t *testing.T) {
				// Given a source of the scheme with max_body unset
				spec := webhook.SourceSpec{Name: "payments", Scheme: k.Scheme, Queue: "payments",
					SignedURL: k.Options.SignedURL, WebhookID: k.Options.WebhookID, CertHosts: k.Options.CertHosts}
				spec.SecretEnv = "SIZED"
				active := strings.Join(k.Secrets, ",")
				h, err := receiver.New(receiver.Config{Intake: f.store, MaxEventAge: 100 * 365 * 24 * time.Hour, Sources: []receiver.Source{{
					Spec: spec, QueueURL: f.env.QueueURL("payments"), Certs: k.Certs,
					Secrets: secrets.Env{Lookup: func(string) (string, bool) { return active, true }},
				}}})
				if err != nil {
					t.Fatal(err)
				}
				f.handler = h
				limit := int(receiver.MaxBody(spec))
				// when a signed body of the limit is delivered,
				hdr, body := worstDelivery(t, k, "evtWorst"+string(k.Scheme)+strings.ReplaceAll(tc.name, " ", ""), limit, tc.ffff)
				resp := f.handle(t, request("payments", string(body), map[string]string(hdr)))
				// then it is accepted,
				if resp.StatusCode/100 != 2 {
					t.Fatalf("a %d-byte body, limit %d: %d %s", len(body), limit, resp.StatusCode, resp.Body)
				}
				// one message is queued,
				msgs := f.drain(t, "payments")
				if len(msgs) != 1 {
					t.Fatalf("queued %d messages, want 1", len(msgs))
				}
				// and the worker reads from it the payload the intake
				// recorded, whole.
				m := lambdaMessage(msgs[0])
				rec, found, err := f.store.Get(context.Background(), attrOf(m, "source"), attrOf(m, "event_id"))
				if err != nil || !found {
					t.Fatalf("intake record of %s: found %v, %v", attrOf(m, "event_id"), found, err)
				}
				got := workerPayload(t, f, m)
				if got != rec.Payload {
					t.Fatalf("the worker reads %d bytes, not the %d-byte payload recorded", len(got), len(rec.Payload))
				}
				if k.Scheme == webhook.SchemeMollie {
					return
				}
				if k.RawPayload && got != string(body) {
					t.Fatalf("the worker reads %d bytes, not the %d-byte body signed", len(got), len(body))
				}
				if !strings.Contains(got, pad(97, 64, false)) {
					t.Fatalf("the payload lacks the body's text")
				}
				if tc.ffff != strings.Contains(got, "\uffff") {
					t.Fatalf("U+FFFF in the payload: %v, want %v", !tc.ffff, tc.ffff)
				}
				// The ASCII payload is its own message body; the other,
				// which no body holds encoded, is carried by reference.
				want := ""
				if tc.ffff {
					want = queue.BodyIntakeRecord
				}
				if enc := attrOf(m, queue.BodyEncodingAttribute); enc != want {
					t.Fatalf("the message is encoded %q, want %q", enc, want)
				}
			})
		}
	}
}

// lambdaMessage is a received message as Lambda hands it to a worker.
func lambdaMessage(sm sqstypes.Message) events.SQSMessage {
	m := events.SQSMessage{MessageId: aws.ToString(sm.MessageId), Body: aws.ToString(sm.Body), MessageAttributes: map[string]events.SQSMessageAttribute{}}
	for k, v := range sm.MessageAttributes {
		m.MessageAttributes[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue}
	}
	return m
}

func attrOf(m events.SQSMessage, name string) string {
	return aws.ToString(m.MessageAttributes[name].StringValue)
}

// workerPayload is the payload a worker reads from m: behind the
// intake's reader, as every worker of a queue the intake sends to runs
// (internal/app), it takes the payload with [queue.Payload].
func workerPayload(t *testing.T, f *fixture, m events.SQSMessage) string {
	t.Helper()
	payloads, err := intake.NewPayloads(f.env.DynamoDB, f.env.TableName("IntakeTable"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	worker := payloads.Handler(func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		if len(ev.Records) != 1 {
			t.Fatalf("the worker is handed %d messages, want 1", len(ev.Records))
		}
		p, err := queue.Payload(ev.Records[0])
		if err != nil {
			t.Fatalf("the worker cannot read the message: %v", err)
		}
		got = p
		return events.SQSEventResponse{}, nil
	})
	resp, err := worker(context.Background(), events.SQSEvent{Records: []events.SQSMessage{m}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the worker's batch: %+v, %v", resp, err)
	}
	return got
}
