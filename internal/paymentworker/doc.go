// Package paymentworker is the payment worker: it turns payment events from the
// payments queue into at most one charge each, under at-least-once
// delivery and a hostile provider (docs/provider-contract.md).
//
// For every record of an SQS batch (processed concurrently up to a bound):
//
//  0. apply its source's effect rule ([Mapping]; docs/providers.md
//     "Which events act"): an event its rule does not act on (a refund, a
//     refused authorisation, an authorisation awaiting capture, a
//     provider-side ID the provider does not know) is acknowledged,
//     recorded as not an effect with its reason and counted
//     ([MetricNotAnEffect]); every other event is keyed by its effect
//     key, one per money movement (one capture, one partial capture, one
//     sale), read from signed fields only (for a fetched provider, from
//     the object fetched from its API only), so that the several events
//     a provider sends for one movement make one effect;
//  1. read the keys earlier builds claimed the payment under
//     ([Payment.LegacyKeys]) in whatever state they were left: completed
//     with the same payload is this payment's effect (replayed), with
//     another it stops the payment (dead-lettered as
//     legacy_payload_mismatch), held is waited for, and lapsed is
//     settled first as the earlier build would have, by taking its claim
//     over and looking up the provider keys of its attempts (a charge
//     found completes it; none completes it as [StatusSuperseded]; an
//     ambiguous lookup charges nothing and the message comes back);
//  2. claim the idempotency key source:effect_key with one conditional write
//     ([idempotency.Registry.Claim]); claims are
//     numbered, and attempt n sends under the provider key
//     [ProviderKey](source, effect_key, n), a
//     hash that no two attempts share, with [Reference] beside it for
//     people;
//  3. if earlier attempts exist, look each one's key up at the provider
//     (and its [LegacyProviderKey], for claims started before the hash):
//     the claim was granted only after they could no longer commit and the
//     provider's lookup had caught up, so "not found" is an answer;
//  4. otherwise charge once, with a deadline that ends the call
//     Config.Horizon + Config.ClockSkew before the claim's lease does;
//  5. complete the key with the result, which later duplicates get back
//     without calling the provider.
//
// Every ambiguous answer (a timeout, a dropped connection, a 408, 409 or
// 5xx, a body that cannot be read) is unknown: after one immediate lookup
// the claim is released only for after the provider's horizon, and the
// record comes back then. A claim that was attempted is never deleted.
//
// A key held by another worker fails the record back to the queue with its
// visibility shortened to just past the holder's window. A payload that
// differs under a used key never charges and goes to the dead-letter queue
// with its reason, as does a malformed message, a request the provider
// rejects, and a message on its last receive; every dead-lettered copy
// carries failure_reason (and first_failure_reason) attributes for the ops
// CLI.
package paymentworker
