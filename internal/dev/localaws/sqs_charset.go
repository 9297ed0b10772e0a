package localaws

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"unicode/utf8"
)

// SQS takes in a message body only the characters of XML 1.0's Char
// production: #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD |
// #x10000 to #x10FFFF, and answers any other with InvalidMessageContents
// (SQS API reference, SendMessage, MessageBody:
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html).
// local-aws-sqs takes any text, so the harness checks the bodies of
// SendMessage and SendMessageBatch itself, in a proxy before the emulator.

// sqsCharRanges are the inclusive ranges of SQS's characters.
var sqsCharRanges = [...][2]rune{{0x9, 0xA}, {0xD, 0xD}, {0x20, 0xD7FF}, {0xE000, 0xFFFD}, {0x10000, 0x10FFFF}}

// outsideSQSChars returns the first character of s that SQS refuses, and
// false when it refuses none. A byte that is not UTF-8 is refused as
// U+FFFD would not be: it is reported as utf8.RuneError.
func outsideSQSChars(s string) (rune, bool) {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return r, true
			}
		}
		in := false
		for _, rg := range sqsCharRanges {
			if r >= rg[0] && r <= rg[1] {
				in = true
				break
			}
		}
		if !in {
			return r, true
		}
	}
	return 0, false
}

// invalidContents is SQS's message for a body with r in it.
func invalidContents(r rune) string {
	return fmt.Sprintf("Invalid binary character '#x%X' was found in the message body, the set of allowed characters is "+
		"#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF", r)
}

// sqsCharset refuses, before next sees them, the SendMessage requests and
// the SendMessageBatch entries whose body SQS would refuse. Only requests
// in the JSON protocol, which every SDK client here speaks, are read;
// the query protocol of older AWS CLIs passes unchecked.
func sqsCharset(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
		if op != "SendMessage" && op != "SendMessageBatch" {
			next.ServeHTTP(w, r)
			return
		}
		body, err := bufferBody(r)
		if err != nil {
			http.Error(w, "unreadable request body", http.StatusBadRequest)
			return
		}
		if op == "SendMessage" {
			var in struct{ MessageBody string }
			json.Unmarshal(body, &in)
			if c, bad := outsideSQSChars(in.MessageBody); bad {
				w.Header().Set("x-amzn-query-error", "InvalidMessageContents;Sender")
				msg, _ := json.Marshal(invalidContents(c))
				writeJSON(w, http.StatusBadRequest, []byte(`{"__type":"com.amazonaws.sqs#InvalidMessageContents","message":`+string(msg)+`}`))
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		sendCheckedBatch(next, w, r, body)
	})
}

// quietWhenGone answers a request the emulator could not serve with 502,
// as the proxy's default does, but logs nothing when the caller has gone
// (a long poll cut short when a run ends).
func quietWhenGone(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() == nil {
		log.Printf("localaws: sqs proxy: %v", err)
	}
	w.WriteHeader(http.StatusBadGateway)
}

// bufferBody reads r's body and puts it back for the next handler.
func bufferBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		setBody(r, body)
	}
	return body, err
}

// batchFailure is one failed entry of a SendMessageBatch answer.
type batchFailure struct {
	ID          string `json:"Id"`
	SenderFault bool
	Code        string
	Message     string
}

// sendCheckedBatch answers a SendMessageBatch as SQS does when some of
// its entries hold refused characters: those entries fail on their own,
// with InvalidMessageContents, and the rest are sent.
func sendCheckedBatch(next http.Handler, w http.ResponseWriter, r *http.Request, body []byte) {
	var in map[string]json.RawMessage
	var entries []json.RawMessage
	if json.Unmarshal(body, &in) != nil || json.Unmarshal(in["Entries"], &entries) != nil {
		next.ServeHTTP(w, r) // the emulator answers a malformed batch
		return
	}
	var good []json.RawMessage
	var failed []batchFailure
	for _, raw := range entries {
		var e struct {
			ID          string `json:"Id"`
			MessageBody string
		}
		json.Unmarshal(raw, &e)
		if c, bad := outsideSQSChars(e.MessageBody); bad {
			failed = append(failed, batchFailure{ID: e.ID, SenderFault: true, Code: "InvalidMessageContents", Message: invalidContents(c)})
			continue
		}
		good = append(good, raw)
	}
	if len(failed) == 0 {
		next.ServeHTTP(w, r)
		return
	}
	out := map[string]json.RawMessage{}
	if len(good) > 0 {
		in["Entries"], _ = json.Marshal(good)
		rewritten, _ := json.Marshal(in)
		setBody(r, rewritten)
		rec := &recorder{header: http.Header{}}
		next.ServeHTTP(rec, r)
		if rec.status != 0 && rec.status != http.StatusOK {
			rec.writeTo(w)
			return
		}
		json.Unmarshal(bytes.TrimSpace(rec.body.Bytes()), &out)
	}
	var sent []batchFailure
	json.Unmarshal(out["Failed"], &sent)
	out["Failed"], _ = json.Marshal(append(sent, failed...))
	if out["Successful"] == nil {
		out["Successful"] = json.RawMessage("[]")
	}
	b, _ := json.Marshal(out)
	writeJSON(w, http.StatusOK, b)
}
