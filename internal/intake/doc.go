// Package intake is the receiver's durable, append-only record of every
// verified webhook, and the ordering that makes "200 only after durable
// state" safe without a cross-service transaction.
//
// For each event, keyed by source + provider event ID (never the request
// ID; a digest of the signed body where the provider's ID is unsigned),
// [Store.Accept] makes two AWS calls:
//
//  1. a conditional PutItem that creates the record in status "received"
//     with a short send lease;
//  2. SQS SendMessage with attributes source, event_id and received_at,
//     the payload as its body, or encoded (gzip, base64, and the attribute
//     body_encoding) when SQS would refuse those bytes, or, when neither
//     body fits one 256 KiB message ([MaxMessageBody]), by reference to
//     the record just written ([SendInput]). A worker reads such a
//     payload from the record before it handles the message ([Payloads]).
//
// A payload that one record cannot hold ([MaxPayload]) is refused before
// either call ([ErrTooLarge]); no payload a record holds is refused for
// the size of its message, whatever its characters.
//
// Nothing marks the record once the message is sent: that write would
// cost a call and the payload's units on every event, to save a second
// message on the rare redelivery of an event already sent. A redelivery
// waits for the send lease to run out, takes it, sends again and answers
// "duplicate": an event whose first delivery died before its send is sent
// now, and one that was sent is sent twice, which the workers'
// idempotency absorbs. Of concurrent redeliveries one takes the lease and
// the others ask the provider to retry (503). The same event ID with a
// different payload hash is a conflict and is never enqueued; a caller
// that acknowledges it anyway (the receiver does, for usage) records it
// on the event's record with [Store.NoteConflict].
//
// See docs/intake-ordering.md for why each crash point is safe.
package intake
