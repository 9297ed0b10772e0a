package paymentworker

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
)

// minCallBudget is the least time a charge call is started with. A claim
// whose lease leaves less is released untouched and retried.
const minCallBudget = 100 * time.Millisecond

// ProviderKeyPrefix starts every provider key of the current encoding.
const ProviderKeyPrefix = "hl1_"

// ProviderKeyLen is the length of every provider key: the prefix and the
// hex SHA-256, within the 255 characters Stripe allows.
const ProviderKeyLen = len(ProviderKeyPrefix) + 2*sha256.Size

// ProviderKey is the Idempotency-Key of one attempt at charging an event:
// "hl1_" and the hex SHA-256 of the source, the event ID and the attempt
// number, each prefixed with its length. Two different (source, event,
// attempt) never share a key (no ID can pose as another plus a suffix),
// every key is [ProviderKeyLen] characters of [0-9a-z_], and a search for
// it needs no escaping. Each attempt has its own key: a later attempt
// sends only after lookups proved that no earlier one committed, so a
// fresh key is safe; it also keeps a provider that saved an error for the
// first key (profile "honours keys") from answering every retry with that
// error for a day. [Reference] is the same attempt in a form people read.
func ProviderKey(source, eventID string, attempt int) string {
	h := sha256.New()
	for _, field := range []string{source, eventID, strconv.Itoa(max(attempt, 1))} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(field)))
		h.Write(n[:])
		h.Write([]byte(field))
	}
	return ProviderKeyPrefix + hex.EncodeToString(h.Sum(nil))
}

// Reference names one attempt for people ("payments:evt_1 attempt 2"). It
// is stored beside the charge and never used to find one.
func Reference(source, eventID string, attempt int) string {
	return fmt.Sprintf("%s:%s attempt %d", source, eventID, max(attempt, 1))
}

// LegacyProviderKey is the provider key of the encoding before
// [ProviderKey]: the claim key (source:event_id) for the first attempt and
// the claim key with "#<attempt>" after it for later ones. It can collide
// ("evt" attempt 2 and "evt#2" attempt 1) and exceed 255 characters, so
// nothing is sent under it any more; lookups of earlier attempts still try
// it, for claims that were started before the change.
func LegacyProviderKey(key string, attempt int) string {
	if attempt <= 1 {
		return key
	}
	return fmt.Sprintf("%s#%d", key, attempt)
}

// attempt is one claimed attempt at charging a payment: the charge state
// machine of docs/provider-contract.md.
type attempt struct {
	w        *Worker
	charger  Charger
	p        Payment
	claim    idempotency.Claim
	receives int
}

// run looks up what earlier attempts did, then charges if none did.
func (a *attempt) run(ctx context.Context) outcome {
	key, ch, err := earlierCharge(ctx, a.charger, a.p.Source, a.p.keyID(), a.p.Charge.EventID, a.claim.Attempt)
	switch {
	case err != nil:
		// Nothing was sent under this claim: the key may be claimed again
		// at once.
		a.release(ctx, a.w.cfg.Now())
		return outcome{name: "retry", reason: "provider_lookup_failed", retry: a.w.backoff(a.receives)}
	case ch == nil:
		return a.charge(ctx)
	}
	res := provider.Match(key, a.p.Charge, ch)
	if res.Outcome == provider.Unknown {
		// Found but still pending: nothing new was sent, look again later.
		a.release(ctx, a.w.cfg.Now())
		return outcome{name: "retry", reason: "provider_charge_pending", retry: a.w.backoff(a.receives)}
	}
	return a.settle(ctx, res)
}

// earlierCharge looks up the charge that attempts 1 to before-1 of the
// claim of source:keyID may have made, each under its key and then
// under its [LegacyProviderKey] (a claim started before the hashed keys
// sent its attempts under those). The claim was granted only after those
// attempts could no longer commit and the provider's lookup had caught
// up with them, so "not found" is an answer. Under a legacy key, a
// charge of an event other than eventID is not found: the legacy
// encoding let two events share a key, and the charge is the other
// event's. It returns the first charge found and the key it was found
// under, or a nil charge when no attempt charged.
func earlierCharge(ctx context.Context, c Charger, source, keyID, eventID string, before int) (string, *provider.Charge, error) {
	for n := 1; n < before; n++ {
		for _, legacy := range []bool{false, true} {
			key := ProviderKey(source, keyID, n)
			if legacy {
				key = LegacyProviderKey(source+":"+keyID, n)
			}
			ch, found, err := c.LookupCharge(ctx, key)
			switch {
			case err != nil:
				return key, nil, err
			case !found, legacy && strings.TrimSpace(ch.EventID) != strings.TrimSpace(eventID):
				continue
			}
			return key, ch, nil
		}
	}
	return "", nil, nil
}

// key is the provider key of attempt n of this payment.
func (a *attempt) key(n int) string { return ProviderKey(a.p.Source, a.p.keyID(), n) }

// request is the charge request of this attempt, with its reference.
func (a *attempt) request() provider.ChargeRequest {
	req := a.p.Charge
	req.Reference = Reference(a.p.Source, a.p.keyID(), a.claim.Attempt)
	return req
}

// charge sends this attempt's charge, with a deadline that ends the call
// early enough for the provider to settle it before the claim's lease ends.
func (a *attempt) charge(ctx context.Context) outcome {
	deadline := a.callDeadline(ctx)
	if time.Until(deadline) < minCallBudget {
		a.release(ctx, a.w.cfg.Now()) // nothing was sent
		return outcome{name: "retry", reason: "lease_too_short", retry: a.w.backoff(a.receives)}
	}
	cctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	key := a.key(a.claim.Attempt)
	res := a.charger.CreateCharge(cctx, key, a.request())
	if res.Outcome == provider.Unknown {
		return a.unknown(ctx, key, res)
	}
	return a.settle(ctx, res)
}

// callDeadline is when this attempt's provider call must end: the claim's
// lease less the provider's settle horizon and the clock skew, so that a
// takeover (after the lease) finds every effect of this call in a lookup;
// and, within the invocation, early enough to record the result.
func (a *attempt) callDeadline(ctx context.Context) time.Time {
	deadline := a.claim.HeldUntil.Add(-a.w.settleTime())
	if d, ok := ctx.Deadline(); ok {
		reserve := min(time.Until(d)/5, time.Second)
		deadline = minTime(deadline, d.Add(-reserve))
	}
	return deadline
}

// unknown handles a call whose effect is unknown. A lookup at once catches
// a commit whose answer was lost; otherwise the attempt is left to settle:
// the key may be claimed again only after the provider can no longer commit
// it and its lookup has caught up.
func (a *attempt) unknown(ctx context.Context, key string, res provider.Result) outcome {
	if ch, found, err := a.charger.LookupCharge(ctx, key); err == nil && found {
		if m := provider.Match(key, a.p.Charge, ch); m.Outcome != provider.Unknown {
			return a.settle(ctx, m)
		}
	}
	settled := a.w.cfg.Now().Add(a.w.settleTime())
	a.release(ctx, settled)
	reason := "provider_outcome_unknown"
	if res.Charge != nil {
		reason = "provider_charge_pending"
	}
	return outcome{name: "retry", reason: reason, retry: max(time.Until(settled), res.RetryAfter) + time.Second}
}

// settle records a final result, or decides what a definite failure means.
func (a *attempt) settle(ctx context.Context, res provider.Result) outcome {
	switch res.Outcome {
	case provider.Succeeded, provider.Declined:
		return a.complete(ctx, res)
	case provider.Retriable:
		// The provider proved it did not execute the request.
		a.release(ctx, a.w.cfg.Now())
		return outcome{name: "retry", reason: "provider_retriable", retry: max(res.RetryAfter, a.w.backoff(a.receives))}
	case provider.Rejected:
		a.release(ctx, a.w.cfg.Now())
		if errors.Is(res.Err, provider.ErrKeyConflict) {
			return outcome{name: "dead_lettered", reason: "provider_key_conflict"}
		}
		return outcome{name: "dead_lettered", reason: "provider_rejected"}
	}
	return outcome{name: "retry", reason: "provider_outcome_unknown", retry: time.Until(a.claim.HeldUntil) + time.Second}
}

// complete stores the charge result under the key.
func (a *attempt) complete(ctx context.Context, res provider.Result) outcome {
	result := resultOf(res, a.p.Charge)
	err := a.w.cfg.Registry.CompleteFor(ctx, a.p.Key(), a.claim.Token, encode(result), a.w.keep(a.p))
	switch {
	case idempotency.IsClaimLost(err):
		// Another holder took over; its lookup finds this charge.
		return outcome{name: "retry", reason: "claim_lost"}
	case err != nil:
		// The charge exists and the claim stays: after its lease the next
		// holder looks the charge up and completes it.
		return outcome{name: "retry", reason: "complete_failed", retry: time.Until(a.claim.HeldUntil) + time.Second}
	case res.Outcome == provider.Declined:
		return outcome{name: "declined", ok: true, reason: result.DeclineCode}
	default:
		return outcome{name: "charged", ok: true}
	}
}

// release ends the claim without a result; the key may be claimed again
// after at. A failed release leaves the claim's own lease, which is later.
func (a *attempt) release(ctx context.Context, at time.Time) {
	if err := a.w.cfg.Registry.Release(ctx, a.p.Key(), a.claim.Token, at); err != nil {
		a.w.cfg.Logger.WarnContext(ctx, "release claim", "event_id", a.p.EventID, "err", err)
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
