package localaws

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// duplicateDelaySeconds is how long after a receive the fault layer
// delivers a duplicate of a message (sqs-duplicate): the duplicate is sent
// at once with this DelaySeconds, which also gives the proxy time to
// record its original MessageId before anyone can receive it.
const duplicateDelaySeconds = 1

// sqsFaults is a reverse proxy in front of the SQS emulator that injects
// the SQS faults.
type sqsFaults struct {
	l      *faultLayer
	target string
	proxy  *httputil.ReverseProxy
	client *http.Client
	ctx    context.Context // cancelled at close: pending duplicates are dropped
	// originals maps a duplicate's MessageId to the original's, which the
	// proxy shows in its place, as SQS keeps a duplicate's MessageId.
	originals sync.Map
}

// sqsOn reports whether l injects any SQS fault.
func (l *faultLayer) sqsOn() bool {
	return l != nil && (l.cfg.Rates[FaultSQSSendAmbiguous] > 0 || l.cfg.Rates[FaultSQSDuplicate] > 0 || l.cfg.Rates[FaultSQSDeleteLost] > 0)
}

// sqsProxy serves the SQS fault proxy to target on a free loopback port.
func (l *faultLayer) sqsProxy(target string) (string, func() error, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", nil, fmt.Errorf("localaws: fault proxy target: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("localaws: fault proxy listen: %w", err)
	}
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}
	ctx, cancel := context.WithCancel(context.Background())
	f := &sqsFaults{l: l, target: target, proxy: httputil.NewSingleHostReverseProxy(u), client: &http.Client{Transport: tr, Timeout: 10 * time.Second}, ctx: ctx}
	f.proxy.Transport = tr
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	closeFn := func() error {
		cancel()
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer scancel()
		return srv.Shutdown(sctx)
	}
	return "http://" + ln.Addr().String(), closeFn, nil
}

func (f *sqsFaults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
	switch op {
	case "SendMessage", "SendMessageBatch", "ReceiveMessage", "DeleteMessage", "DeleteMessageBatch":
	default:
		f.proxy.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "unreadable request body", http.StatusBadRequest)
		return
	}
	setBody(r, body)
	var in sqsRequest
	json.Unmarshal(body, &in)
	req := FaultRequest{Operation: op, Queue: in.QueueURL, Attempt: attemptOf(r.Header)}
	switch op {
	case "SendMessage", "SendMessageBatch":
		f.send(w, r, req, digest(body))
	case "ReceiveMessage":
		f.receive(w, r, req)
	case "DeleteMessage":
		if f.l.fire(FaultSQSDeleteLost, req, in.ReceiptHandle) {
			writeJSON(w, http.StatusOK, []byte("{}"))
			return
		}
		f.proxy.ServeHTTP(w, r)
	default:
		f.deleteBatch(w, r, req, in)
	}
}

// sqsRequest holds the fields of an SQS request the proxy reads.
type sqsRequest struct {
	QueueURL      string `json:"QueueUrl"`
	ReceiptHandle string
	Entries       []json.RawMessage
}

// send forwards a send and, for sqs-send-ambiguous, answers 500 once the
// emulator has enqueued it.
func (f *sqsFaults) send(w http.ResponseWriter, r *http.Request, req FaultRequest, id string) {
	if !f.l.fire(FaultSQSSendAmbiguous, req, id) {
		f.proxy.ServeHTTP(w, r)
		return
	}
	rec := f.capture(r)
	if rec.status != http.StatusOK {
		rec.writeTo(w)
		return
	}
	w.Header().Set("x-amzn-query-error", "InternalError;Receiver")
	writeJSON(w, http.StatusInternalServerError, []byte(`{"__type":"com.amazonaws.sqs#InternalError","message":"We encountered an internal error. Please try again."}`))
}

// capture forwards r to the emulator and keeps the answer.
func (f *sqsFaults) capture(r *http.Request) *recorder {
	rec := &recorder{header: http.Header{}}
	f.proxy.ServeHTTP(rec, r)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec
}

func (w *recorder) writeTo(dst http.ResponseWriter) {
	for k, v := range w.header {
		dst.Header()[k] = v
	}
	dst.WriteHeader(w.status)
	dst.Write(w.body.Bytes())
}

// receivedMessage holds the fields of a received message that a duplicate
// carries.
type receivedMessage struct {
	// deliveryID is the emulator's ID of this copy; MessageID is the
	// original's, which a duplicate keeps.
	deliveryID        string
	MessageID         string `json:"MessageId"`
	Body              string
	Attributes        map[string]string
	MessageAttributes json.RawMessage
}

// receive forwards a receive, shows each duplicate under its original's
// MessageId, and sends a duplicate of each message that sqs-duplicate
// picks. The decision's attempt is the message's receive count, so each
// receive is decided afresh.
func (f *sqsFaults) receive(w http.ResponseWriter, r *http.Request, req FaultRequest) {
	if f.l.cfg.Rates[FaultSQSDuplicate] <= 0 {
		f.proxy.ServeHTTP(w, r)
		return
	}
	rec := f.capture(r)
	if rec.status != http.StatusOK {
		rec.writeTo(w)
		return
	}
	var out struct{ Messages []map[string]json.RawMessage }
	if json.Unmarshal(rec.body.Bytes(), &out) != nil {
		rec.writeTo(w)
		return
	}
	for _, raw := range out.Messages {
		m := f.original(raw)
		req.Attempt = 1
		if n, err := strconv.Atoi(m.Attributes["ApproximateReceiveCount"]); err == nil && n > 0 {
			req.Attempt = n
		}
		// Each copy draws on its own ID, so a duplicate is duplicated
		// again only at the rate's odds, not always.
		if f.l.fire(FaultSQSDuplicate, req, m.deliveryID) {
			go f.resend(req.Queue, m)
		}
	}
	body, err := json.Marshal(out)
	if err != nil {
		rec.writeTo(w)
		return
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	writeJSON(w, http.StatusOK, body)
}

// original decodes a received message and, for a duplicate, puts its
// original's MessageId in raw.
func (f *sqsFaults) original(raw map[string]json.RawMessage) receivedMessage {
	var m receivedMessage
	json.Unmarshal(raw["MessageId"], &m.MessageID)
	json.Unmarshal(raw["Body"], &m.Body)
	json.Unmarshal(raw["Attributes"], &m.Attributes)
	m.MessageAttributes = raw["MessageAttributes"]
	m.deliveryID = m.MessageID
	if orig, ok := f.originals.Load(m.MessageID); ok {
		m.MessageID = orig.(string)
		raw["MessageId"], _ = json.Marshal(m.MessageID)
	}
	return m
}

// resend enqueues m again on queue, with its body and message attributes:
// what a consumer sees of a duplicate delivery. The emulator gives it a
// new MessageId, which the proxy maps back to m's.
func (f *sqsFaults) resend(queue string, m receivedMessage) {
	in := map[string]any{"QueueUrl": queue, "MessageBody": m.Body, "DelaySeconds": duplicateDelaySeconds}
	if len(m.MessageAttributes) > 0 && string(m.MessageAttributes) != "null" {
		in["MessageAttributes"] = m.MessageAttributes
	}
	body, _ := json.Marshal(in)
	r, err := http.NewRequestWithContext(f.ctx, http.MethodPost, f.target+"/", bytes.NewReader(body))
	if err != nil {
		return
	}
	r.Header.Set("Content-Type", "application/x-amz-json-1.0")
	r.Header.Set("X-Amz-Target", "AmazonSQS.SendMessage")
	resp, err := f.client.Do(r)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var out struct {
		MessageID string `json:"MessageId"`
	}
	if json.NewDecoder(resp.Body).Decode(&out) == nil && out.MessageID != "" {
		f.originals.Store(out.MessageID, m.MessageID)
	}
}

// deleteBatch answers success for the entries sqs-delete-lost picks
// without forwarding them, and forwards the rest.
func (f *sqsFaults) deleteBatch(w http.ResponseWriter, r *http.Request, req FaultRequest, in sqsRequest) {
	var kept []json.RawMessage
	var lost []map[string]string
	for _, raw := range in.Entries {
		var e struct {
			ID            string `json:"Id"`
			ReceiptHandle string
		}
		json.Unmarshal(raw, &e)
		if f.l.fire(FaultSQSDeleteLost, req, e.ReceiptHandle) {
			lost = append(lost, map[string]string{"Id": e.ID})
			continue
		}
		kept = append(kept, raw)
	}
	if len(lost) == 0 {
		f.proxy.ServeHTTP(w, r)
		return
	}
	out := struct {
		Successful []json.RawMessage
		Failed     []json.RawMessage
	}{Successful: []json.RawMessage{}, Failed: []json.RawMessage{}}
	if len(kept) > 0 {
		body, _ := json.Marshal(map[string]any{"QueueUrl": in.QueueURL, "Entries": kept})
		setBody(r, body)
		rec := f.capture(r)
		if rec.status != http.StatusOK || json.Unmarshal(rec.body.Bytes(), &out) != nil {
			rec.writeTo(w)
			return
		}
	}
	for _, e := range lost {
		b, _ := json.Marshal(e)
		out.Successful = append(out.Successful, b)
	}
	b, _ := json.Marshal(out)
	writeJSON(w, http.StatusOK, b)
}

func setBody(r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}
