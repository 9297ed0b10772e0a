package queue_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/pkg/queue"
)

// SQS's set: #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD |
// #x10000 to #x10FFFF (SendMessage, MessageBody). A payload with any
// other character, or with bytes that are not UTF-8, is encoded; every
// other one is its own body.
func TestOnlyAPayloadSQSWouldRefuseIsEncoded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload string
		encoded bool
	}{
		{"JSON", `{"id":"evt_1","data":{"name":"Zoë 🚀"}}`, false},
		{"tab, newline, return", "a\tb\nc\rd", false},
		{"the edges of the set", "\u0020\ud7ff\ue000\ufffd\U00010000\U0010ffff", false},
		{"NUL", "a\x00b", true},
		{"a control character", "a\x1fb", true},
		{"U+FFFE", "a\ufffeb", true},
		{"U+FFFF", `{"name":"Ada ` + "\uffff" + `"}`, true},
		{"a byte that is not UTF-8", "caf\xe9", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Given the payload, when it is made a message body,
			body, enc := queue.EncodeBody(tc.payload)
			// then it is encoded exactly when SQS would refuse it,
			if (enc != "") != tc.encoded {
				t.Fatalf("encoding %q, want encoded %v", enc, tc.encoded)
			}
			if !tc.encoded && body != tc.payload {
				t.Fatalf("body %q, want the payload as it is", body)
			}
			if tc.encoded && (enc != queue.BodyGzipBase64 || queue.NeedsEncoding(body)) {
				t.Fatalf("encoded as %q to a body SQS refuses: %q", enc, body)
			}
			// and a reader gets the payload back, byte for byte.
			m := events.SQSMessage{Body: body, MessageAttributes: map[string]events.SQSMessageAttribute{}}
			if enc != "" {
				m.MessageAttributes[queue.BodyEncodingAttribute] = events.SQSMessageAttribute{DataType: "String", StringValue: &enc}
			}
			if got, err := queue.Payload(m); err != nil || got != tc.payload {
				t.Fatalf("Payload = %q, %v; want %q", got, err, tc.payload)
			}
		})
	}
}

func TestABodyThatDoesNotDecodeIsAnError(t *testing.T) {
	var bomb bytes.Buffer
	w := gzip.NewWriter(&bomb)
	w.Write(bytes.Repeat([]byte("a"), queue.MaxDecodedPayload+1))
	w.Close()
	for _, tc := range []struct{ name, body, encoding string }{
		{"unknown encoding", "abc", "rot13"},
		{"not base64", "%%%", queue.BodyGzipBase64},
		{"not gzip", base64.StdEncoding.EncodeToString([]byte("plain")), queue.BodyGzipBase64},
		{"inflates past the bound", base64.StdEncoding.EncodeToString(bomb.Bytes()), queue.BodyGzipBase64},
		// a reference, whose payload no worker read from its record
		{"a reference not read", queue.ReferenceBody("{}"), queue.BodyIntakeRecord},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p, err := queue.DecodeBody(tc.body, tc.encoding); !errors.Is(err, queue.ErrBodyEncoding) {
				t.Fatalf("DecodeBody = %d bytes, %v; want ErrBodyEncoding", len(p), err)
			}
		})
	}
}

func BenchmarkNeedsEncoding(b *testing.B) {
	payload := strings.Repeat(`{"id":"evt_1","data":{"name":"Zoë","amount":1200}},`, 100)
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if queue.NeedsEncoding(payload) {
			b.Fatalf("%q needs no encoding", payload[:20])
		}
	}
}
