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
// back to the queue. Messages are read with the receiver's strict usage
// schema ([provider.ParseUsageEvent]); one it refuses is dead-lettered
// with a reason naming the field ("invalid_usage: data.units: ...").
// After a batch, pages the ledger enqueued are flushed from the outbox
// (best effort: the outbox keeps them until they are sent).
//
// Latencies on the path that changes the cap are emitted as EMF metrics:
// usage time → durable intake, intake → attributed ledger, and (from the
// ledger) ledger → enforcement action.
package spendworker
