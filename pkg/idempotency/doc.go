// Package idempotency is a registry of idempotency keys on DynamoDB: a worker
// claims a key before it acts, and records the result after, so that work
// delivered many times takes effect once.
//
// # Usage
//
// Build one [Registry] per process over a [Store] ([NewDynamoDB]). Per
// message, the key is the source and the event ID, and [Hash] covers the
// fields that must not change under that key. [Registry.Claim] says what to
// do: act only on [StatusClaimed], reply with the stored result on
// [StatusAlreadyCompleted], retry later on [StatusInProgress], and treat
// [StatusPayloadMismatch] as poison; an error means the store is
// unavailable. After acting, [Registry.Complete] stores the result; when
// the work provably had no effect, [Registry.Release] makes the key
// claimable at once. See the
// package example and those of [NewDynamoDB] and [Registry.Release].
//
// Operators read a key with [Registry.Status]; tests use [NewMemory] and the
// shared suite in package idempotencytest.
//
// # Claims
//
// [Registry.Claim] is one conditional PutItem for a new key (or one past
// its retention). When a record blocks it, the failure carries the
// existing record (ReturnValuesOnConditionCheckFailure=ALL_OLD); when it
// does not (some emulators omit it), one consistent GetItem reads it. An
// IN_PROGRESS claim for the same payload whose holder's window has passed
// is then taken over by a second PutItem conditioned on that record's
// token. That record decides the typed outcome: [StatusAlreadyCompleted]
// with the stored result, [StatusInProgress] with the holder's HeldUntil,
// or [StatusPayloadMismatch]. Errors are kept for infrastructure failures
// ([ErrUnavailable], in a [*StoreError]) and bad input.
//
// Each claim gets a random token. [Registry.Complete] and [Registry.Release]
// are conditioned on that token and on IN_PROGRESS, so a worker that stalled
// past its window and lost the key to another gets [ErrClaimLost] and can
// never overwrite or end the new holder's claim. A Complete repeated by the
// same holder with the same result (the first response was lost)
// succeeds.
//
// Claims are numbered: [Claim.Attempt] is 1 for the first claim of a key
// and one more for each claim after it, within the key's retention. A
// takeover carries the count forward with a write conditioned on the very
// record it replaces, so two workers cannot both become attempt 2. A record
// is never deleted while it counts: [Registry.Release] ends a claim without
// a result by setting when the key may be claimed again (now, when the
// work provably had no effect; later, when its effect is unknown until
// then). A caller whose claim has Attempt > 1 checks what earlier attempts
// did before it acts.
//
// # The in-progress window
//
// A claim is held for Config.InProgressTimeout (default 60 s), our own
// window, which must exceed the longest time the protected work can take,
// including the time its effects may take to appear. When ctx has a
// deadline, the claim is held only until the deadline plus
// Config.DeadlineMargin (default 35 s), if that is sooner. Lambda ends an
// invocation at its deadline, so after it the holder is provably gone; the
// margin covers clock skew between workers and what a request already in
// flight at the deadline may still do (a payment provider may commit after
// its client gave up). Without a deadline (a local run, a long batch) the
// window alone decides, so a claim never depends on the Lambda timeout
// alone. The worker of package paymentworker goes further: each provider call
// ends early enough before the lease that its effects are visible when the
// lease ends.
//
// A stale claim is taken over only for the same payload hash: its dead
// holder may already have acted on its payload under this key.
//
// # Retention
//
// A record counts for Config.Retention after it was claimed or completed
// (expires_at, also the table's TTL attribute). TTL deletion is lazy on AWS
// (items may linger for days) and absent from some emulators, so a record
// past expires_at is treated as absent by the claim condition itself, not
// left to TTL.
//
// Retention must outlast the longest path by which the same event can come
// back. The default is 35 days:
//
//	 3 days  the provider retries an unacknowledged webhook
//	14 days  the message lives in its queue and DLQ (SQS retention counts
//	         from the first enqueue, and the DLQ keeps up to 14 days)
//	14 days  a message redriven from the DLQ is a new message with a new
//	         retention period, and may be received again until it ends
//	 4 days  for an operator to notice and act (a long weekend)
//	-------
//	35 days
//
// A key forgotten earlier than that turns a late redelivery into a second
// charge.
//
// # Cache
//
// With Config.CacheSize > 0, each process keeps a bounded LRU of COMPLETED
// keys (hash and result). A redelivered completed key is answered from it
// without DynamoDB, payload mismatches included. Only completed records are
// cached, because only they cannot change; an entry is trusted for
// Config.CacheTTL and never past the record's retention.
//
// # Compared with Powertools for AWS Lambda's idempotency utility
//
//   - Fencing: Powertools records a success and deletes a failed record by
//     key alone, so a worker whose in-progress record expired and was taken
//     over can overwrite or delete the new holder's record. Here every
//     Complete and Release is conditioned on the holder's token.
//   - Typed outcomes: Powertools wraps a handler and signals duplicates and
//     in-progress keys with exceptions. Here Claim returns a value with the
//     stored result or the holder's HeldUntil, and errors mean only that the
//     store is unavailable, so the caller decides between retry and reply.
//   - One round trip: like recent Powertools releases, a failed claim reads
//     the existing record from ALL_OLD; here the consistent-read fallback is
//     built in, and a record that changed between write and read is retried.
//   - Our own expiry: Powertools' in-progress expiry comes from the Lambda's
//     remaining time, and without a registered Lambda context a crashed
//     holder blocks the key until the record expires. Here the window is our
//     own and the deadline only shortens it.
//   - Retention: Powertools keeps records for 1 hour by default, far less
//     than a DLQ redrive path; here 35 days, derived above.
//   - Keys: Powertools prefixes keys with the function name and the handler's
//     code name, so renaming either forgets every key. Here the prefix is a
//     stable, configured Namespace.
//   - Payload: the hash is required, stored as a SHA-256 (never the payload),
//     and a stale claim is never taken over for a different payload.
//   - Cache: both keep a local LRU of completed keys; here entries also
//     expire after CacheTTL and never outlive the record's retention.
//   - Failed work: Powertools deletes the record of a failed invocation, so
//     the next delivery runs the work as if it had never been tried. Here a
//     claim is never deleted: its attempt count survives, so the next holder
//     knows to check for an earlier effect.
package idempotency
