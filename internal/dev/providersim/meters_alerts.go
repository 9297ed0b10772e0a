package providersim

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"time"

	"github.com/hookline/hookline/pkg/webhook"
)

// StripeAPIVersion is the api_version of the events the face makes: the
// version that stripe-go v84 pins, so that its webhook.ConstructEvent
// takes them.
const StripeAPIVersion = "2026-02-25.clover"

// MaxAlertsPerMeterCustomer is Stripe's limit of alerts on one meter and
// customer.
const MaxAlertsPerMeterCustomer = 25

// StripeEvent is an event the face made, as Stripe posts it to a webhook
// endpoint.
type StripeEvent struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Created time.Time       `json:"created"`
	Body    json.RawMessage `json:"body"`
}

// meterAlert is a usage-threshold alert with recurrence one_time.
type meterAlert struct {
	id, meter string
	customer  string // empty: every customer
	gte       int64
	after     int64           // the seq of the last event before it
	fired     map[string]bool // customers it triggered for
}

// AddAlert adds a billing alert on meter: once a customer's usage
// reported after the alert's creation reaches gte, the face makes one
// billing.alert.triggered event for that customer, and never another
// (recurrence one_time). customer narrows it to one customer; empty
// watches every customer. It returns the alert's alrt_ ID.
//
// Alerts are evaluated when their events are asked for
// ([Sim.PendingAlerts], [Sim.AlertEvents], [Sim.SendAlerts]) on the usage
// shown then (the meter's lag applies, cancelled events do not count).
// An event is dated when its threshold was crossed: when the event that
// crossed it showed, whenever it is asked for.
func (v *Sim) AddAlert(meter, customer string, gte int64) (string, error) {
	b := &v.core.meters
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.meters[meter]; !ok {
		return "", fmt.Errorf("%w: no meter %s", ErrInvalidMeter, meter)
	}
	if gte <= 0 {
		return "", fmt.Errorf("%w: alert threshold %d is not positive", ErrInvalidMeter, gte)
	}
	n := 0
	for _, a := range b.alerts {
		if a.meter == meter && a.customer == customer {
			n++
		}
	}
	if n >= MaxAlertsPerMeterCustomer {
		return "", fmt.Errorf("%w: %d alerts on %s for %q already", ErrInvalidMeter, n, meter, customer)
	}
	a := &meterAlert{id: "alrt_" + b.randomLocked(24), meter: meter, customer: customer, gte: gte,
		after: b.seq, fired: map[string]bool{}}
	b.alerts = append(b.alerts, a)
	return a.id, nil
}

// PendingAlerts returns the alert events made and not taken before, and
// takes them: each is handed out once. Sign one with [StripeSigner] and
// post it, or let [Sim.SendAlerts] do both.
func (v *Sim) PendingAlerts() []StripeEvent {
	b := &v.core.meters
	b.mu.Lock()
	defer b.mu.Unlock()
	b.evaluateLocked(v.core.now())
	out := slices.Clone(b.fired[b.pending:])
	b.pending = len(b.fired)
	return out
}

// AlertEvents returns every alert event made so far, taken or not.
func (v *Sim) AlertEvents() []StripeEvent {
	b := &v.core.meters
	b.mu.Lock()
	defer b.mu.Unlock()
	b.evaluateLocked(v.core.now())
	return slices.Clone(b.fired)
}

// SendAlerts posts the pending alert events through snd, one at a time,
// and returns their deliveries. It stops early when ctx is done; the
// events not sent stay pending.
func (v *Sim) SendAlerts(ctx context.Context, snd *Sender) ([]Delivery, error) {
	evs := v.PendingAlerts()
	var out []Delivery
	for i, ev := range evs {
		if err := ctx.Err(); err != nil {
			v.requeueAlerts(len(evs) - i)
			return out, fmt.Errorf("providersim: send alerts: %w", err)
		}
		out = append(out, snd.Send(ctx, ev.ID, ev.Body))
	}
	return out, nil
}

// requeueAlerts makes the last n taken events pending again.
func (v *Sim) requeueAlerts(n int) {
	b := &v.core.meters
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = max(b.pending-n, 0)
}

// SetMeterAlertWebhooks makes POST /sim/meters/alerts/send post the
// pending alert events through snd (nil: it refuses).
func (v *Sim) SetMeterAlertWebhooks(snd *Sender) { v.core.meters.alertTo.Store(snd) }

// StripeSigner signs as Stripe does (Stripe-Signature: t=...,v1=...),
// with the endpoint's signing secret.
func StripeSigner(secret string) Signer {
	return func(id string, ts time.Time, body []byte) (http.Header, error) {
		return webhook.SignHeaders(webhook.SchemeStripe, []string{secret}, id, ts, body)
	}
}

// evaluateLocked makes the events of the alerts whose threshold the usage
// shown at now has reached.
func (b *meterBook) evaluateLocked(now time.Time) {
	var made []StripeEvent
	for _, a := range b.alerts {
		lag := b.faults.lagOf(a.meter)
		for _, customer := range b.customersLocked(a) {
			if a.fired[customer] {
				continue
			}
			at, value, ok := crossing(b.series[seriesKey{a.meter, customer}], a, now, lag)
			if !ok {
				continue
			}
			a.fired[customer] = true
			made = append(made, b.alertEventLocked(a, customer, at, value))
		}
	}
	slices.SortStableFunc(made, func(x, y StripeEvent) int { return x.Created.Compare(y.Created) })
	b.fired = append(b.fired, made...)
}

// customersLocked lists, in order, the customers alert a watches.
func (b *meterBook) customersLocked(a *meterAlert) []string {
	if a.customer != "" {
		return []string{a.customer}
	}
	var out []string
	for k := range b.series {
		if k.meter == a.meter {
			out = append(out, k.customer)
		}
	}
	slices.Sort(out)
	return out
}

// crossing finds when the usage reported after a's creation reached its
// threshold, and the usage then, rounded down.
func crossing(events []*meterEvent, a *meterAlert, now time.Time, lag time.Duration) (time.Time, int64, bool) {
	sum := new(big.Rat)
	gte := new(big.Rat).SetInt64(a.gte)
	for _, e := range events { // in arrival order, so in the order they show
		if e.revision || e.seq <= a.after || !e.counts(now, lag) {
			continue
		}
		if sum.Add(sum, e.value); sum.Cmp(gte) >= 0 {
			return e.received.Add(lag), new(big.Int).Quo(sum.Num(), sum.Denom()).Int64(), true
		}
	}
	return time.Time{}, 0, false
}

// alertEventLocked is the billing.alert.triggered event of a for
// customer.
func (b *meterBook) alertEventLocked(a *meterAlert, customer string, at time.Time, value int64) StripeEvent {
	var filters []map[string]string
	if a.customer != "" {
		filters = []map[string]string{{"customer": a.customer, "type": "customer"}}
	}
	alert := map[string]any{"id": a.id, "object": "billing.alert", "alert_type": "usage_threshold", "livemode": b.livemode,
		"status": "active", "title": "usage of " + a.meter,
		"usage_threshold": map[string]any{"filters": filters, "gte": a.gte, "meter": a.meter, "recurrence": "one_time"}}
	triggered := map[string]any{"object": "billing.alert_triggered", "alert": alert, "customer": customer,
		"value": value, "created": at.Unix(), "livemode": b.livemode}
	id := "evt_" + b.randomLocked(24)
	body, _ := json.Marshal(map[string]any{ // maps of strings, numbers and bools always marshal
		"id": id, "object": "event", "api_version": StripeAPIVersion, "created": at.Unix(),
		"data": map[string]any{"object": triggered}, "livemode": b.livemode, "pending_webhooks": 1,
		"request": map[string]any{"id": nil, "idempotency_key": nil}, "type": "billing.alert.triggered"})
	return StripeEvent{ID: id, Type: "billing.alert.triggered", Created: at.UTC(), Body: body}
}
