// Package spendworker is the spend worker Lambda's logic: it reads usage
// webhooks from the usage queue and attributes each to exactly one
// workload exactly once through the spend ledger ([spend.Ledger.Apply],
// path "webhook").
//
// Every record ends in one of the intake states of contract 6: accepted
// (applied, or a duplicate counted once), deferred (unknown or retired
// workload, recorded with a deadline, reason and owner by the ledger), or
// disagreement (paged by the ledger). Rejected events never reach this
// queue; the receiver counts them. Infrastructure failures fail the record
// back to the queue. A message holds the record the receiver read under
// its source's usage mapping ([usagein.DecodeMessage]), so the worker never
// reads a producer's shape; messages queued before envelopes, the
// usage.recorded body itself, are still read. A zero reading and an event
// of a type that is not usage are acknowledged and marked on their intake
// record (zero, not_usage), never counted. A message that cannot be read,
// or whose record lies outside the time rule the door applied (counted
// from the intake time), is dead-lettered with a reason naming the field
// ("invalid_usage: data.units: ...").
//
// A provider's threshold alert (Stripe's billing.alert.triggered, from a
// stripe-alerts usage source) is no record: it is recorded once by its
// event ID with the ledger's count of its meter since the alert's creation
// ([spend.Buckets.RecordAlert]), paged once when the ledger is below, and
// marks the workload to be read on the reconciler's next run. Its sums
// source is the one of its mode that lists the alert, or else has its
// meter; an alert that matches none, only a source of the other mode, or
// no workload's alias is dead-lettered with its reason (alert.go).
//
// After a batch, pages the ledger enqueued are flushed from the outbox
// (best effort: the outbox keeps them until they are sent).
//
// Latencies on the path that changes the cap are emitted as EMF metrics:
// usage time → durable intake, intake → attributed ledger, and (from the
// ledger) ledger → enforcement action.
package spendworker
