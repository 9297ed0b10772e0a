// Package payments is the payment worker: it turns payment events from the
// payments queue into exactly one charge each, under at-least-once delivery.
//
// For every record of an SQS batch (processed concurrently up to a bound):
//
//  1. claim the idempotency key source:event_id with one conditional write
//     ([idempotency.Registry.Claim]);
//  2. charge through the provider with the same key as Idempotency-Key; a
//     takeover or a redelivery looks the charge up first, and an unknown
//     outcome (timeout, reset) is looked up before any second attempt;
//  3. complete the key with the charge result, which later duplicates get
//     back without calling the provider.
//
// A key held by another worker fails the record back to the queue with its
// visibility shortened to just past the holder's window. A payload that
// differs under a used key never charges and goes to the dead-letter queue
// with its reason, as does a malformed message, a request the provider
// rejects, and a message on its last receive; every dead-lettered copy
// carries failure_reason (and first_failure_reason) attributes for the ops
// CLI. Retriable failures release the claim and back off.
package payments
