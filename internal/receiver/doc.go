// Package receiver is the webhook receiver Lambda's logic, behind an API
// Gateway HTTP API route `ANY /webhooks/{source}`.
//
// For every request it checks, in order: the source is configured (404),
// the method is POST (405), the body is within the source's limit (413,
// before decoding), the signature over the raw bytes in constant time and
// the timestamp window (401), and only then parses the body (400). A
// verified event is recorded and enqueued through [intake.Store] before the
// 200 (409 for a reused event ID with another payload, 503 with
// Retry-After when DynamoDB or SQS fails, so the provider retries and
// nothing is lost). Response bodies are small JSON: {"status":"accepted"},
// {"status":"duplicate"} or {"error":"<code>"} (with "field" and "reason"
// when a member of the caller's body was refused); no internals leak.
//
// A source's body limit is bounded at start by what one queue message
// holds ([MaxBody]): no body within it is refused for its size.
//
// A source's scheme may be a provider preset (see package [webhook]). A
// delivery then becomes one intake record and one queue message per item:
// a batch (Adyen, GoCardless) is answered only once every item is durable,
// with the body the provider expects (Adyen: "[accepted]"), and an item
// refused on its own is counted as WebhookItemRejected without holding the
// rest back. GoCardless gets 498 for a bad signature, as it asks, and a
// PayPal certificate that cannot be fetched in time is a 503. An item
// whose time is signed but held to no replay window (Checkout.com,
// Square, GoCardless, Braintree, Razorpay), and older than
// [Config.MaxEventAge] (the intake's retention less a day), is
// acknowledged and dropped: {"status":"too_old"} for a single event, a
// "too_old" count in a batch's answer, and the WebhookTooOld metric.
//
// A usage source (queue "usage") reads each verified body under its usage
// mapping (package [usagein]): hookline's usage.recorded, or CloudEvents in
// structured or batch mode. A body that cannot become a ledger record is a
// 400 naming the field, before anything is recorded; in a batch, an event
// refused on its own is listed, with its field, under "refused_items" of
// the 200. Each event's queue message is the record the door read. A
// usage event whose ID comes again with another payload (a producer's
// revised value) is answered 200 {"status":"conflict"}, not 409, which
// its sender would retry for days: the first value stays counted,
// nothing is enqueued, the conflict is noted on the intake record
// ([intake.Store.NoteConflict]) before the answer, and it is counted as
// UsageConflict, which the template alarms on.
//
// Every outcome is counted as an EMF metric, and the latency from the
// provider's event time to durable intake is recorded.
package receiver
