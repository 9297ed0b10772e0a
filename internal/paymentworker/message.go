package paymentworker

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/queue"
)

// ErrMalformed means a message cannot be turned into a charge.
var ErrMalformed = errors.New("paymentworker: malformed payment message")

// Payment is one payment event as the worker reads it.
type Payment struct {
	Source string
	// EventID is the event's identity at the intake.
	EventID string
	// EffectKey is the key of the one effect per money movement (the
	// mapping's effect_key); empty means EventID.
	EffectKey string
	// Effect names the effect that acts ([Mapping.Effect]); empty is the
	// worker's own.
	Effect string
	Charge provider.ChargeRequest
	// NotAnEffect, when set, says why the event is acknowledged with no
	// effect: its source's rule does not act on it.
	NotAnEffect string
	// LegacyKeys are keys an earlier build may have claimed this payment
	// under, each read from what the provider signs. Each is read in
	// every state the earlier build can have left it in before the
	// payment's own key is claimed: completed with the same payload, it
	// is this payment's effect; completed with another, it stops this
	// one (dead-lettered as legacy_payload_mismatch); held, it is waited
	// for; lapsed, it is settled as the earlier build would have settled
	// it, by looking up the provider keys of its attempts.
	LegacyKeys []string
	// UnsignedLegacyKeys are keys an earlier build claimed a delivery
	// under that were read from an unsigned header (the delivery ID of
	// GitHub, Shopify and Razorpay). Anyone may send a genuine body with
	// another delivery's header, so such a key counts only with this
	// payment's payload.
	UnsignedLegacyKeys []string
	// LegacySharedKeys are keys an earlier build gave a whole payment,
	// which more than one money movement of it meets (Adyen's
	// authorisation pspReference keyed the AUTHORISATION under immediate
	// capture and every CAPTURE of it under delayed capture). A record
	// under one is of the whole payment or of whichever movement came
	// first: the event its charge names tells which. This event, or one
	// of LegacyKeys, and it counts as a LegacyKeys record does; another
	// event, and it is another movement's, which does not stop this one.
	LegacySharedKeys []string
	// Unstamped means the provider signs no time the receiver could
	// bound a replay by, so the effect's key is kept for
	// [Config.EffectRetention].
	Unstamped bool
}

// Key is the idempotency key: the source and the effect key.
func (p Payment) Key() string { return p.Source + ":" + p.keyID() }

// keyID is what the payment is keyed by: its effect key, else its event.
func (p Payment) keyID() string { return cmp.Or(p.EffectKey, p.EventID) }

// Hash covers the fields that decide the charge, in canonical form (see
// [provider.ChargeRequest.Canonical]), so a reused event ID with another
// amount, currency or customer is a mismatch, not a duplicate, while a
// change of currency case is not.
func (p Payment) Hash() string {
	c := p.Charge.Canonical()
	return idempotency.Hash(c.Customer, fmt.Sprint(c.Amount), c.Currency)
}

// ParseMessage reads a payment from an SQS record with hookline's own
// body shape ([HooklineMapping]); see [ParseMessageWith].
func ParseMessage(m events.SQSMessage) (Payment, error) {
	return ParseMessageWith(m, nil)
}

// ParseMessageWith reads a payment from an SQS record: the intake
// attributes name the source and event ID, the body carries the payload
// (decoded when it is encoded, [queue.Payload]), and the source's mapping in ms
// (nil: [HooklineMapping] for every source) says where the body keeps the
// charge. An error wraps [ErrMalformed] and names the source and each
// missing or bad field; [MalformedReason] turns it into a dead-letter
// reason.
func ParseMessageWith(m events.SQSMessage, ms *Mappings) (Payment, error) {
	p := Payment{Source: attr(m, "source"), EventID: attr(m, "event_id")}
	if p.Source == "" {
		p.Source = "payments"
	}
	mp := ms.For(p.Source)
	body, err := queue.Payload(m)
	if err == nil {
		p, err = mp.decide([]byte(body), p)
	}
	if err != nil {
		return Payment{}, fmt.Errorf("%w: source %q: %w", ErrMalformed, p.Source, err)
	}
	return p, nil
}

// MalformedReason is the dead-letter reason of a message that does not
// map: "malformed_message: " and what is wrong, on one line.
func MalformedReason(err error) string {
	detail := strings.TrimPrefix(err.Error(), ErrMalformed.Error())
	detail = strings.TrimPrefix(detail, ": ")
	return "malformed_message: " + strings.ReplaceAll(detail, "\n", "; ")
}

func attr(m events.SQSMessage, name string) string {
	if a, ok := m.MessageAttributes[name]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

// Result is what a completed key stores and what a replay returns.
type Result struct {
	ChargeID    string `json:"charge_id"`
	Status      string `json:"status"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	DeclineCode string `json:"decline_code,omitempty"`
}

// resultOf is the stored result of a final charge result for req. A
// provider result always carries a charge for a final outcome; should one
// not, the request and the outcome stand in for it rather than the worker
// failing.
func resultOf(res provider.Result, req provider.ChargeRequest) Result {
	ch := res.Charge
	if ch == nil {
		status := provider.StatusDeclined
		if res.Outcome == provider.Succeeded {
			status = provider.StatusSucceeded
		}
		return Result{Status: status, Amount: req.Amount, Currency: req.Currency}
	}
	return Result{ChargeID: ch.ID, Status: ch.Status, Amount: ch.Amount, Currency: ch.Currency, DeclineCode: ch.DeclineCode}
}

func encode(r Result) []byte {
	b, _ := json.Marshal(r) // a struct of strings and numbers always encodes
	return b
}
