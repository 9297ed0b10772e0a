package receiver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/receiver"
	"github.com/hookline/hookline/pkg/secrets"
	"github.com/hookline/hookline/pkg/webhook"
	"github.com/hookline/hookline/pkg/webhook/webhooktest"
)

// presetFixture is a receiver with one source per scheme, every source
// feeding the payments queue, and its metric lines.
type presetFixture struct {
	*fixture
	kits    map[string]webhooktest.Kit
	metrics *bytes.Buffer
}

const presetMaxBody = 8 << 10

func newPresetFixture(t *testing.T) *presetFixture {
	t.Helper()
	f := newFixture(t, nil, nil)
	pf := &presetFixture{fixture: f, kits: map[string]webhooktest.Kit{}, metrics: &bytes.Buffer{}}
	var sources []receiver.Source
	for _, k := range webhooktest.Kits(t) {
		name := "src-" + string(k.Scheme)
		pf.kits[name] = k
		env := ""
		if k.Scheme.NeedsSecret() {
			env = "SECRETS_" + strings.ToUpper(strings.ReplaceAll(string(k.Scheme), "-", "_"))
		}
		active := strings.Join(k.Secrets, ",")
		sources = append(sources, receiver.Source{
			Spec: webhook.SourceSpec{Name: name, Scheme: k.Scheme, SecretEnv: env, Queue: "payments", MaxBody: presetMaxBody,
				SignedURL: k.Options.SignedURL, WebhookID: k.Options.WebhookID, CertHosts: k.Options.CertHosts},
			QueueURL: f.env.QueueURL("payments"), Certs: k.Certs,
			Secrets: secrets.Env{Lookup: func(string) (string, bool) { return active, true }},
		})
	}
	// The kits' events carry fixed signed times (2026-11-30), which the
	// receiver's clock leaves behind; their age is not what these tests
	// are about (age_test.go is), so no age is too old here.
	h, err := receiver.New(receiver.Config{Intake: f.store, Sources: sources, Metrics: emf.New(pf.metrics, "hookline"),
		MaxEventAge: 100 * 365 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	f.handler = h
	return pf
}

// send posts one signed delivery to the source.
func (pf *presetFixture) send(t *testing.T, source string, h webhook.HeaderMap, body []byte) events.APIGatewayV2HTTPResponse {
	t.Helper()
	return pf.handle(t, request(source, string(body), map[string]string(h)))
}

// rejections returns the WebhookRejected and WebhookItemRejected lines'
// reasons for the source.
func (pf *presetFixture) rejections(t *testing.T, source, metric string) []string {
	t.Helper()
	var reasons []string
	for _, line := range strings.Split(strings.TrimSpace(pf.metrics.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if _, ok := m[metric]; ok && m["Source"] == source {
			reasons = append(reasons, fmt.Sprint(m["Reason"]))
		}
	}
	return reasons
}

// TestEveryPresetAtTheDoor runs the conformance cases through the
// receiver: each accepted delivery is one intake record and one queue
// message and is answered as its provider expects; each rejection has
// the receiver's status code and is counted with the source's name.
func TestEveryPresetAtTheDoor(t *testing.T) {
	t.Parallel()
	pf := newPresetFixture(t)
	now := time.Now().UTC().Truncate(time.Second)
	for source, k := range pf.kits {
		t.Run(string(k.Scheme), func(t *testing.T) {
			newest := ""
			if len(k.Secrets) > 0 {
				newest = k.Secrets[0]
			}
			deliver := func(secret, id string, at time.Time) (webhook.HeaderMap, []byte) {
				h, body, err := k.Delivery(secret, id, at)
				if err != nil {
					t.Fatal(err)
				}
				return h, body
			}
			// Given a valid delivery, when it is sent twice
			h, body := deliver(newest, "evtDoor1", now)
			first := pf.send(t, source, h, body)
			again := pf.send(t, source, h, body)
			// Then it is accepted once, answered as the provider expects,
			wantOK := `{"status":"accepted"}`
			if k.Scheme == webhook.SchemeAdyen {
				wantOK = "[accepted]"
			}
			if first.StatusCode != 200 || first.Body != wantOK {
				t.Fatalf("first: %d %s, want 200 %s", first.StatusCode, first.Body, wantOK)
			}
			// (a signed redelivery is a duplicate, sent again; Mollie's
			// unsigned ping is keyed by the second it came in),
			if again.StatusCode != 200 || (k.Scheme != webhook.SchemeAdyen && !k.Unsigned && again.Body != `{"status":"duplicate"}`) {
				t.Fatalf("again: %d %s, want 200 duplicate", again.StatusCode, again.Body)
			}
			// and queued once for each delivery.
			msgs := pf.drain(t, "payments")
			wantMsgs := 2
			if k.Unsigned {
				wantMsgs = -1 // one per second of pings: the worker's key (ID + fetched status) dedupes
			}
			if wantMsgs > 0 && len(msgs) != wantMsgs {
				t.Fatalf("%d queue messages, want %d", len(msgs), wantMsgs)
			}
			if !k.RawPayload {
				var env webhook.ItemEnvelope
				if err := json.Unmarshal([]byte(*msgs[0].Body), &env); err != nil || env.Provider != string(k.Scheme) || env.ID != k.WantID("evtDoor1") {
					t.Fatalf("queue message %s (err %v)", *msgs[0].Body, err)
				}
			}
			if k.Unsigned {
				return
			}
			// Given refused deliveries, then each has its status and is counted
			wantStatus := http.StatusUnauthorized
			if k.Scheme == webhook.SchemeGoCardless {
				wantStatus = webhook.StatusTokenInvalid
			}
			type refusal struct {
				name   string
				h      webhook.HeaderMap
				body   []byte
				status int
			}
			hw, bw := deliver(k.Wrong, "evtDoorWrong", now)
			hs, bs := k.Strip(deliver(newest, "evtDoorBare", now))
			hb, bb := deliver(newest, "evtDoorBig", now)
			cases := []refusal{
				{"tampered", h, k.Tamper(body), wantStatus},
				{"wrong key", hw, bw, wantStatus},
				{"missing header", hs, bs, wantStatus},
				{"oversized", hb, append(bb, bytes.Repeat([]byte(" "), presetMaxBody)...), http.StatusRequestEntityTooLarge},
			}
			if k.Stamped {
				hst, bst := deliver(newest, "evtDoorStale", now.Add(-time.Hour))
				cases = append(cases, refusal{"stale", hst, bst, wantStatus})
			}
			before := len(pf.rejections(t, source, receiver.MetricRejected))
			for _, c := range cases {
				if res := pf.send(t, source, c.h, c.body); res.StatusCode != c.status {
					t.Errorf("%s: %d %s, want %d", c.name, res.StatusCode, res.Body, c.status)
				}
			}
			if got := len(pf.rejections(t, source, receiver.MetricRejected)) - before; got != len(cases) {
				t.Errorf("%d rejections counted for %s, want %d", got, source, len(cases))
			}
			if n := len(pf.drain(t, "payments")); n != 0 {
				t.Fatalf("%d messages queued by refused deliveries", n)
			}
		})
	}
}

// TestBatchesAtTheDoor: an Adyen batch of three answers [accepted] and
// makes three queue messages, and its redelivery three more (the worker's
// idempotency absorbs them); a batch with one bad
// item queues the others and counts the bad one.
func TestBatchesAtTheDoor(t *testing.T) {
	t.Parallel()
	pf := newPresetFixture(t)
	now := time.Now().UTC()
	for _, source := range []string{"src-adyen", "src-gocardless"} {
		k := pf.kits[source]
		t.Run(string(k.Scheme), func(t *testing.T) {
			ids := []string{"evtBatch1", "evtBatch2", "evtBatch3"}
			h, body, err := k.Batch(k.Secrets[0], ids, -1, now)
			if err != nil {
				t.Fatal(err)
			}
			// Given a batch of three, when it is sent, then three messages
			res := pf.send(t, source, h, body)
			if k.Scheme == webhook.SchemeAdyen && (res.StatusCode != 200 || res.Body != "[accepted]") {
				t.Fatalf("%d %q, want 200 [accepted]", res.StatusCode, res.Body)
			}
			if res.StatusCode != 200 {
				t.Fatalf("%d %s", res.StatusCode, res.Body)
			}
			if n := len(pf.drain(t, "payments")); n != 3 {
				t.Fatalf("%d queue messages, want 3", n)
			}
			// When it is redelivered, then its items are sent again
			if res := pf.send(t, source, h, body); res.StatusCode != 200 {
				t.Fatalf("redelivery: %d %s", res.StatusCode, res.Body)
			}
			if n := len(pf.drain(t, "payments")); n != 3 {
				t.Fatalf("redelivery queued %d messages, want 3 again", n)
			}
			// Given a batch whose second item is bad, then the others are queued and it is counted
			h, body, err = k.Batch(k.Secrets[0], []string{"evtBad1", "evtBad2", "evtBad3"}, 1, now)
			if err != nil {
				t.Fatal(err)
			}
			if res := pf.send(t, source, h, body); res.StatusCode != 200 {
				t.Fatalf("batch with a bad item: %d %s", res.StatusCode, res.Body)
			}
			if n := len(pf.drain(t, "payments")); n != 2 {
				t.Fatalf("%d queue messages, want 2", n)
			}
			if r := pf.rejections(t, source, receiver.MetricItemRejected); len(r) != 1 {
				t.Fatalf("item rejections %v, want one", r)
			}
			rec, ok, err := pf.store.Get(context.Background(), source, k.WantID("evtBad3"))
			if err != nil || !ok || rec.Status != intake.StatusReceived {
				t.Fatalf("record of the third item: %+v %v %v", rec, ok, err)
			}
		})
	}
}

// TestPayPalCertificateHostDown: when PayPal's certificate cannot be
// fetched, the receiver answers 503 with Retry-After, so that PayPal
// retries, and counts it as a failure of the source.
func TestPayPalCertificateHostDown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil)
	certs, err := webhooktest.StartPayPalCerts()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { certs.Close() })
	var lines bytes.Buffer
	fetcher := webhook.NewCertFetcher(webhook.CertFetcherConfig{Hosts: []string{certs.Host()}, Roots: certs.Roots, Client: certs.Client(time.Second)})
	h, err := receiver.New(receiver.Config{Intake: f.store, Metrics: emf.New(&lines, "hookline"), Sources: []receiver.Source{{
		Spec: webhook.SourceSpec{Name: "paypal", Scheme: webhook.SchemePayPal, Queue: "payments",
			WebhookID: webhooktest.PayPalWebhookID, CertHosts: []string{certs.Host()}},
		QueueURL: f.env.QueueURL("payments"), Certs: fetcher,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"id":"WH-DOWN1","event_type":"PAYMENT.CAPTURE.COMPLETED","resource":{}}`
	signed, err := webhook.SignPayPal(certs.Key, certs.CertURL(), webhooktest.PayPalWebhookID, "tx-down-1", time.Now(), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	headers := map[string]string{}
	for k := range signed {
		headers[strings.ToLower(k)] = signed.Get(k)
	}
	// Given the certificate host down, when a delivery arrives, then 503
	certs.SetDown(true)
	res, err := h.Handle(context.Background(), request("paypal", body, headers))
	if err != nil || res.StatusCode != http.StatusServiceUnavailable || res.Headers["Retry-After"] == "" {
		t.Fatalf("%d %v %s (err %v), want 503 with Retry-After", res.StatusCode, res.Headers, res.Body, err)
	}
	if !strings.Contains(lines.String(), `"WebhookFailed":1`) || !strings.Contains(lines.String(), `"Source":"paypal"`) {
		t.Fatalf("not counted as a failure of the source:\n%s", lines.String())
	}
	// When it is back, then PayPal's retry is accepted
	certs.SetDown(false)
	if res, _ := h.Handle(context.Background(), request("paypal", body, headers)); res.StatusCode != 200 {
		t.Fatalf("after recovery: %d %s", res.StatusCode, res.Body)
	}
}
