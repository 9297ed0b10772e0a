// Package usagein reads usage at the door: the shapes real producers send,
// turned into one normalised [Record] per event by a per-source [Mapping].
//
// Three formats are read. [FormatHookline] is hookline's own usage.recorded
// body, whose ledger key stays its record_id, byte for byte, so that
// entries written before this package still deduplicate. [FormatCloudEvents]
// is CloudEvents 1.0 in JSON, structured mode (one event) or batch mode (an
// array, each event read and refused on its own); binary mode is refused,
// since it would take an event's identity from unsigned headers. A
// CloudEvent's identity is its source and id, scoped by the hookline
// source and hashed to a bounded key ([CloudEventKey]).
// [FormatStripeAlerts] is one Stripe event per request, signed with
// Stripe-Signature: billing.alert.triggered is an alert ([OutcomeAlert]),
// keyed by its event ID, whose event travels to the spend worker as the
// door verified it (less pending_webhooks, which differs between
// deliveries); the worker reads it, knowing the sums sources. Every other
// Stripe event is not usage.
//
// A mapping says where, in an event, the workload reference, the meter,
// the value and the time are (JSON pointers, RFC 6901, with defaults per
// format), which event types are usage, the value's unit and the integer
// scale it is counted at, and the source's time rule ([TimeRule]). A value
// is read exactly ([ScaleDecimal]): 12.5 at scale 1000 is 12500, and a value
// with more precision than the scale is refused, never rounded. Every
// refusal is a [*provider.FieldError] naming the member, so the receiver
// answers it as it answers hookline's own bodies.
//
// What the door reads travels in the queue message ([Envelope]), so that the
// spend worker never reads a producer's shape: [DecodeMessage] reads an
// envelope, and, for messages queued by builds before it, the
// usage.recorded body itself.
package usagein
