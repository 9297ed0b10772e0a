package receiver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/receiver"
	"github.com/hookline/hookline/pkg/secrets"
	"github.com/hookline/hookline/pkg/webhook"
)

// A provider that signs the event's time in the body, but holds it to no
// replay window, lets anyone who captured a delivery send it again at
// any time. Once its intake record and the worker's idempotency key have
// expired (35 days), nothing would remember it: such a delivery is
// acknowledged and dropped, never refused (a 4xx makes a provider retry
// for days, and Adyen holds the merchant's queue behind it).

// ageFixture is a receiver whose clock stands at now, with one source
// of scheme feeding the payments queue, and its metric and log lines.
type ageFixture struct {
	*fixture
	metrics, logs bytes.Buffer
}

const ageSecret = "age-secret"

func newAgeFixture(t *testing.T, scheme webhook.Scheme, now time.Time) *ageFixture {
	t.Helper()
	af := &ageFixture{fixture: newFixture(t, nil, nil)}
	h, err := receiver.New(receiver.Config{Intake: af.store, Now: func() time.Time { return now },
		Metrics: emf.New(&af.metrics, "hookline"), Logger: slog.New(slog.NewJSONHandler(&af.logs, nil)),
		Sources: []receiver.Source{{
			Spec:     webhook.SourceSpec{Name: string(scheme), Scheme: scheme, SecretEnv: "AGE", Queue: "payments"},
			QueueURL: af.env.QueueURL("payments"), Secrets: secrets.Env{Lookup: func(string) (string, bool) { return ageSecret, true }},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	af.handler = h
	return af
}

// deliver signs body as the scheme's provider does and handles it.
func (af *ageFixture) deliver(t *testing.T, scheme webhook.Scheme, body string) string {
	t.Helper()
	signed, err := webhook.SignPreset(scheme, ageSecret, webhook.PresetOptions{}, "", time.Now(), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	headers := map[string]string{"content-type": "application/json"}
	for k := range signed {
		headers[strings.ToLower(k)] = signed.Get(k)
	}
	res := af.handle(t, request(string(scheme), body, headers))
	return fmt.Sprint(res.StatusCode, " ", res.Body)
}

// tooOld counts the WebhookTooOld metric of source.
func (af *ageFixture) tooOld(t *testing.T, source string) float64 {
	t.Helper()
	var n float64
	for _, line := range strings.Split(strings.TrimSpace(af.metrics.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["Source"] == source {
			v, _ := m[receiver.MetricTooOld].(float64)
			n += v
		}
	}
	return n
}

func TestACheckoutDeliveryOlderThanTheIntakeRemembersIsAcknowledgedAndDropped(t *testing.T) {
	t.Parallel()
	// Given a receiver whose clock is 36 days after a captured
	// Checkout.com payment_captured was created (its intake record and
	// idempotency key expired after 35),
	createdOn := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)
	af := newAgeFixture(t, webhook.SchemeCheckout, createdOn.Add(36*24*time.Hour))
	old := `{"id":"evt_replayed_36d","type":"payment_captured","created_on":"2026-10-01T09:00:00Z","data":{"amount":1000,"reference":"ORD-5023"}}`
	// when its signed bytes are sent again,
	got := af.deliver(t, webhook.SchemeCheckout, old)
	// then it is acknowledged, with no effect: 200, nothing recorded or
	// queued, counted, and logged without the payload.
	if got != `200 {"status":"too_old"}` {
		t.Fatalf("replay after 36 days: %s, want 200 too_old", got)
	}
	if _, ok, err := af.store.Get(context.Background(), "checkout", "evt_replayed_36d"); ok || err != nil {
		t.Fatalf("intake record of the replay: found %v, %v", ok, err)
	}
	if msgs := af.drain(t, "payments"); len(msgs) != 0 {
		t.Fatalf("queued %d messages (%s), want none", len(msgs), aws.ToString(msgs[0].Body))
	}
	if n := af.tooOld(t, "checkout"); n != 1 {
		t.Fatalf("WebhookTooOld = %v, want 1:\n%s", n, af.metrics.String())
	}
	if logs := af.logs.String(); !strings.Contains(logs, "evt_replayed_36d") || strings.Contains(logs, "ORD-5023") {
		t.Fatalf("log names the event %v and leaks the payload %v:\n%s", strings.Contains(logs, "evt_replayed_36d"), strings.Contains(logs, "ORD-5023"), logs)
	}
	// Given one created 33 days before the clock, within what the intake
	// remembers, then it is accepted.
	recent := `{"id":"evt_33d","type":"payment_captured","created_on":"2026-10-04T09:00:00Z","data":{"amount":1000}}`
	if got := af.deliver(t, webhook.SchemeCheckout, recent); got != `200 {"status":"accepted"}` {
		t.Fatalf("delivery after 33 days: %s, want accepted", got)
	}
}

func TestOnlyTheOldEventsOfAGoCardlessBatchAreDropped(t *testing.T) {
	t.Parallel()
	// Given a receiver whose clock is 40 days after 2026-10-01,
	af := newAgeFixture(t, webhook.SchemeGoCardless, time.Date(2026, 11, 10, 9, 0, 0, 0, time.UTC))
	event := func(id, createdAt string) string {
		return `{"id":"` + id + `","created_at":"` + createdAt + `","resource_type":"payments","action":"confirmed","links":{"payment":"PM1"}}`
	}
	// when a batch comes with one event created then and two this week,
	batch := `{"events":[` + event("EV_fresh_1", "2026-11-09T09:00:00.000Z") + `,` + event("EV_stale", "2026-10-01T09:00:00.000Z") +
		`,` + event("EV_fresh_2", "2026-11-10T08:00:00.000Z") + `]}`
	got := af.deliver(t, webhook.SchemeGoCardless, batch)
	// then the two are accepted and queued, and the old one is counted
	// and dropped, in a 200.
	if got != `200 {"status":"accepted","accepted":2,"duplicate":0,"refused":0,"too_old":1}` {
		t.Fatalf("batch: %s", got)
	}
	if n := len(af.drain(t, "payments")); n != 2 {
		t.Fatalf("queued %d messages, want 2", n)
	}
	if _, ok, err := af.store.Get(context.Background(), "gocardless", "EV_stale"); ok || err != nil {
		t.Fatalf("intake record of the old event: found %v, %v", ok, err)
	}
	if n := af.tooOld(t, "gocardless"); n != 1 {
		t.Fatalf("WebhookTooOld = %v, want 1", n)
	}
}

// TestANegativeMaxEventAgeIsRefused: a negative bound is refused at
// start (config.ReceiverFromEnv refuses one that is not below the
// intake's retention).
func TestANegativeMaxEventAgeIsRefused(t *testing.T) {
	t.Parallel()
	_, err := receiver.New(receiver.Config{Intake: newFixture(t, nil, nil).store, MaxEventAge: -time.Hour, Sources: []receiver.Source{{
		Spec: webhook.SourceSpec{Name: "mollie", Scheme: webhook.SchemeMollie, Queue: "payments"}, QueueURL: "q"}}})
	if err == nil || !strings.Contains(err.Error(), "max event age") {
		t.Fatalf("New with a negative max event age: %v", err)
	}
}
