// Package intake is the receiver's durable, append-only record of every
// verified webhook, and the ordering that makes "200 only after durable
// state" safe without a cross-service transaction.
//
// For each event, keyed by source + provider event ID (never the request
// ID), [Store.Accept] does at most three AWS calls:
//
//  1. a conditional PutItem that creates the record in status "received"
//     with a short send lease;
//  2. SQS SendMessage with attributes source, event_id and received_at;
//  3. a conditional UpdateItem to status "enqueued" with the message ID.
//
// A redelivery whose record is already enqueued costs one call (the failed
// put returns the old item through ReturnValuesOnConditionCheckFailure) and
// answers "duplicate". A redelivery that finds the record "received" with
// an expired lease (an earlier attempt died between steps 1 and 2) takes the
// lease and sends now. A concurrent redelivery that finds a live lease waits
// briefly for the holder to finish and otherwise asks the provider to retry
// (503), so an event is enqueued once. The same event ID with a different
// payload hash is a conflict and is never enqueued.
//
// See docs/intake-ordering.md for why each crash point is safe.
package intake
