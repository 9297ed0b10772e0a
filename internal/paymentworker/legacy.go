package paymentworker

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
)

// StatusSuperseded is the result status of an earlier build's key that
// the worker settled and found had made no charge: the payment's effect
// is made under its own key, and the earlier key never acts again.
const StatusSuperseded = "superseded"

// legacyKey is one key an earlier build may have claimed a payment
// under, with how its record is read.
type legacyKey struct {
	key string
	// unsigned: read from an unsigned header, it may name another
	// payment, so only a record with the same payload counts.
	unsigned bool
	// shared: every money movement of the payment had this key, so a
	// record under it is the first movement's, and the charge it sent
	// tells which ([Payment.LegacySharedKeys]).
	shared bool
}

// legacy lists p's legacy keys in the order they are read.
func (p Payment) legacy() []legacyKey {
	var out []legacyKey
	for _, k := range p.LegacyKeys {
		out = append(out, legacyKey{key: k})
	}
	for _, k := range p.UnsignedLegacyKeys {
		out = append(out, legacyKey{key: k, unsigned: true})
	}
	for _, k := range p.LegacySharedKeys {
		out = append(out, legacyKey{key: k, shared: true})
	}
	return out
}

// legacyOutcome reads the keys earlier builds may have claimed this
// payment under ([Payment.LegacyKeys], [Payment.UnsignedLegacyKeys],
// [Payment.LegacySharedKeys]) in every state they can have been left in,
// before anything is charged under the payment's own key. done is false
// when none decides, and the payment's own key is claimed.
func (w *Worker) legacyOutcome(ctx context.Context, p Payment, charger Charger, receives int) (outcome, bool) {
	for _, k := range p.legacy() {
		rec, found, err := w.cfg.Registry.Status(ctx, k.key)
		switch {
		case err != nil:
			return outcome{name: "retry", reason: "registry_unavailable"}, true
		case !found, k.unsigned && rec.PayloadHash != p.Hash():
			continue
		}
		if out, done := w.earlierState(ctx, p, charger, k, rec, receives); done {
			return out, true
		}
	}
	return outcome{}, false
}

// earlierState decides what an earlier build's record under k means for
// p: a completed one is read by [Payment.earlierResult] (under a shared
// key, after looking up the charge it sent), one held is waited for, and
// a lapsed one is unknown until it is settled.
func (w *Worker) earlierState(ctx context.Context, p Payment, charger Charger, k legacyKey, rec idempotency.Record, receives int) (outcome, bool) {
	now := w.cfg.Now()
	switch {
	case rec.State == idempotency.StateCompleted && superseded(rec.Result):
		return outcome{}, false
	case rec.State == idempotency.StateCompleted && !k.shared:
		return p.earlierResult(k, rec.PayloadHash, nil)
	case rec.State == idempotency.StateCompleted:
		_, ch, err := earlierCharge(ctx, charger, p.Source, strings.TrimPrefix(k.key, p.Source+":"), "", max(rec.Attempt, 1)+1)
		switch {
		case err != nil:
			return outcome{name: "retry", reason: "provider_lookup_failed", retry: w.backoff(receives)}, true
		case ch == nil:
			return outcome{name: "dead_lettered", reason: "legacy_movement_unknown: " + k.key + " was completed by an earlier build for every movement of the payment, and no charge under it says which"}, true
		}
		return p.earlierResult(k, rec.PayloadHash, ch)
	case !rec.Stale(now):
		return heldUnderLegacyKey(rec.HeldUntil.Sub(now)), true
	}
	return w.settleEarlier(ctx, p, charger, k, rec, receives)
}

// earlierResult is what an earlier build's completed record under k,
// for the payload whose hash is hash, means for p. Under a shared key
// ch is the charge the record made, and a charge of another movement of
// the payment (an event that is neither p's nor one of p's
// [Payment.LegacyKeys]) is not p's: done is false. Otherwise it is p's
// own effect when the payloads are the same, and else an effect of the
// same payment with another payload, which stops p for a person.
func (p Payment) earlierResult(k legacyKey, hash string, ch *provider.Charge) (outcome, bool) {
	if k.shared {
		event := strings.TrimSpace(ch.EventID)
		if event != strings.TrimSpace(p.Charge.EventID) && !slices.Contains(p.LegacyKeys, p.Source+":"+event) {
			return outcome{}, false
		}
	}
	if hash == p.Hash() {
		return outcome{name: "replayed", ok: true, reason: "completed_under_legacy_key"}, true
	}
	return outcome{name: "dead_lettered", reason: "legacy_payload_mismatch: " + k.key + " was completed by an earlier build for another customer, amount or currency"}, true
}

// heldUnderLegacyKey waits for an earlier build's claim held for wait
// more.
func heldUnderLegacyKey(wait time.Duration) outcome {
	return outcome{name: "in_progress", reason: "held_under_legacy_key", retry: max(wait+time.Second, time.Second)}
}

// settleEarlier settles an earlier build's lapsed claim under k as that
// build would have: it takes the claim over, fenced like any takeover,
// and looks up the provider keys of each of its attempts. A charge found
// completes the record with it ([Payment.earlierResult] then decides);
// none found completes it as [StatusSuperseded], and p goes on to its
// own key; a lookup that fails or finds a charge still pending charges
// nothing, and the message comes back.
func (w *Worker) settleEarlier(ctx context.Context, p Payment, charger Charger, k legacyKey, rec idempotency.Record, receives int) (outcome, bool) {
	claim, err := w.cfg.Registry.Claim(ctx, k.key, rec.PayloadHash)
	switch {
	case err != nil:
		return outcome{name: "retry", reason: "registry_unavailable"}, true
	case claim.Status == idempotency.StatusInProgress:
		return heldUnderLegacyKey(claim.HeldUntil.Sub(w.cfg.Now())), true
	case claim.Status != idempotency.StatusClaimed:
		// Completed, or changed, since it was read: read it again.
		return outcome{name: "retry", reason: "legacy_key_changed", retry: w.backoff(receives)}, true
	}
	// The earlier build sent each attempt's charge under the ID it
	// claimed source:id for; before effect keys, that ID was the event's.
	id := strings.TrimPrefix(k.key, p.Source+":")
	eventID := id
	if k.shared {
		eventID = "" // the event is not known; no charge was sent under the keys before the hash
	}
	release := func() {
		if err := w.cfg.Registry.Release(ctx, k.key, claim.Token, w.cfg.Now()); err != nil {
			w.cfg.Logger.WarnContext(ctx, "release legacy claim", "key", k.key, "err", err)
		}
	}
	found, ch, err := earlierCharge(ctx, charger, p.Source, id, eventID, claim.Attempt)
	if err != nil {
		release()
		return outcome{name: "retry", reason: "provider_lookup_failed", retry: w.backoff(receives)}, true
	}
	result := encode(Result{Status: StatusSuperseded})
	if ch != nil {
		res := provider.Match(found, provider.ChargeRequest{EventID: ch.EventID, Customer: ch.Customer, Amount: ch.Amount, Currency: ch.Currency}, ch)
		if res.Outcome == provider.Unknown {
			release()
			return outcome{name: "retry", reason: "provider_charge_pending", retry: w.backoff(receives)}, true
		}
		result = encode(resultOf(res, provider.ChargeRequest{}))
	}
	if err := w.cfg.Registry.CompleteFor(ctx, k.key, claim.Token, result, w.keep(p)); err != nil {
		// The claim stays; after its lease the next delivery settles it.
		return outcome{name: "retry", reason: "complete_failed", retry: time.Until(claim.HeldUntil) + time.Second}, true
	}
	if ch == nil {
		return outcome{}, false
	}
	return p.earlierResult(k, rec.PayloadHash, ch)
}

// superseded reports whether a stored result is [StatusSuperseded].
func superseded(result []byte) bool {
	var r Result
	return json.Unmarshal(result, &r) == nil && r.Status == StatusSuperseded
}
