package queue

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// SQS takes in a message body only the characters #x9 | #xA | #xD | #x20
// to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF (SendMessage,
// MessageBody), and refuses the message otherwise. A webhook body may be
// valid UTF-8, valid JSON and signed, and still hold one (U+FFFF in a
// customer's name), so a payload is sent as its own body when SQS takes
// it, readable as it came, and otherwise encoded: gzip-compressed, then
// base64, with the message attribute [BodyEncodingAttribute] set to
// [BodyGzipBase64]. Every reader of a message's payload decodes it
// ([Payload], [DecodeBody]).
//
// Encoded, a payload of varied text grows by a third (gzip saves little
// of it, and base64 adds 4 bytes for 3), past what one message holds. A
// payload whose body, as it is or encoded, would be longer than a message
// holds travels by reference instead ([BodyIntakeRecord]): the message
// names the intake record that holds it, and the worker reads it from
// there before it handles the message.

// BodyEncodingAttribute names the message attribute that says how a body
// is encoded; a message without it carries its payload as its body.
const BodyEncodingAttribute = "body_encoding"

// BodyGzipBase64 is the encoding of a payload SQS would refuse as a body:
// gzip, then standard base64 with padding.
const BodyGzipBase64 = "gzip+base64"

// BodyIntakeRecord is the encoding of a message that carries its
// payload by reference: the payload is the one of the intake record that
// the message's source and event_id attributes name, and the body is
// that payload's SHA-256, in lowercase hex, which the record's payload
// must match. [DecodeBody] cannot read it; a worker reads the record
// first and hands on the message marked [BodyIntakeRecordRead].
const BodyIntakeRecord = "intake-record"

// BodyIntakeRecordRead marks, inside a worker, a message of
// [BodyIntakeRecord] whose body is now the payload read from its
// record. It is never sent: [Queue.DeadLetter] sends such a message by
// reference again.
const BodyIntakeRecordRead = "intake-record;read"

// ReferenceBody is the body of a message that carries payload by
// reference ([BodyIntakeRecord]): its SHA-256, in lowercase hex.
func ReferenceBody(payload string) string {
	sum := sha256.Sum256([]byte(payload))
	return hex.EncodeToString(sum[:])
}

// MaxDecodedPayload bounds what [DecodeBody] inflates, so that a small
// message cannot expand without limit: 1 MiB, above any payload the
// intake keeps.
const MaxDecodedPayload = 1 << 20

// ErrBodyEncoding means a message body cannot be decoded as its
// attribute says.
var ErrBodyEncoding = errors.New("queue: message body does not decode")

// NeedsEncoding reports whether payload cannot be sent as a message body
// as it is: it holds a character SQS refuses, or bytes that are not
// UTF-8 (which an SDK would send as U+FFFD).
func NeedsEncoding(payload string) bool {
	for i := 0; i < len(payload); {
		c := payload[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(payload[i:])
		// U+FFFD itself is allowed; a one-byte RuneError is an invalid
		// byte. Surrogates never decode from UTF-8.
		if (r == utf8.RuneError && n == 1) || r == 0xFFFE || r == 0xFFFF {
			return true
		}
		i += n
	}
	return false
}

// EncodeBody returns the message body that carries payload and its
// encoding: payload itself and "" when SQS takes it as it is, else its
// [BodyGzipBase64] form.
func EncodeBody(payload string) (body, encoding string) {
	if !NeedsEncoding(payload) {
		return payload, ""
	}
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression) // a valid level
	io.WriteString(w, payload)                            // a bytes.Buffer does not fail
	w.Close()
	return base64.StdEncoding.EncodeToString(b.Bytes()), BodyGzipBase64
}

// DecodeBody returns the payload that body carries under encoding, as
// [EncodeBody] made it, or as a worker read it from its intake record
// ([BodyIntakeRecordRead]). An unknown encoding, a reference not read
// ([BodyIntakeRecord]), a body that does not decode, or a payload over
// [MaxDecodedPayload] is an error wrapping [ErrBodyEncoding].
func DecodeBody(body, encoding string) (string, error) {
	switch encoding {
	case "", BodyIntakeRecordRead:
		return body, nil
	case BodyGzipBase64:
	case BodyIntakeRecord:
		return "", fmt.Errorf("%w: the payload is in its intake record, which was not read", ErrBodyEncoding)
	default:
		return "", fmt.Errorf("%w: unknown %s %q", ErrBodyEncoding, BodyEncodingAttribute, encoding)
	}
	gz, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return "", fmt.Errorf("%w: base64: %w", ErrBodyEncoding, err)
	}
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return "", fmt.Errorf("%w: gzip: %w", ErrBodyEncoding, err)
	}
	p, err := io.ReadAll(io.LimitReader(r, MaxDecodedPayload+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: gzip: %w", ErrBodyEncoding, err)
	case len(p) > MaxDecodedPayload:
		return "", fmt.Errorf("%w: inflates past %d bytes", ErrBodyEncoding, MaxDecodedPayload)
	}
	return string(p), nil
}

// Payload returns the payload of a received record: its body, decoded
// as its [BodyEncodingAttribute] says.
func Payload(m events.SQSMessage) (string, error) {
	var encoding string
	if a, ok := m.MessageAttributes[BodyEncodingAttribute]; ok && a.StringValue != nil {
		encoding = *a.StringValue
	}
	return DecodeBody(m.Body, encoding)
}
