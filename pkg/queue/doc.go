// Package queue gives SQS-fed workers what Lambda's event source mapping
// does not: shortening a failed record's visibility so it returns when it
// can succeed, and dead-lettering a record with the reason it failed.
//
// SQS's own redrive moves a message to its DLQ after maxReceiveCount
// receives but cannot say why. A worker that knows a record will never
// succeed (or is on its last receive) sends a copy to the DLQ itself with
// failure_reason, first_failure_reason, failed_at and receive_count
// attributes, then acknowledges the original. The copy is sent before the
// original is deleted, so a crash between the two duplicates and never
// loses; the workers' idempotency absorbs the duplicate. A failure reason
// is cut to [MaxReasonLen], so that the copy fits SQS's message limit.
//
// A payload that SQS would refuse as a message body (a character outside
// its set, such as U+FFFF) travels gzip-compressed and base64-encoded,
// marked by the message attribute [BodyEncodingAttribute]; every other
// payload is its own body ([EncodeBody]). A payload too large for a
// message either way travels by reference to the intake record that
// holds it ([BodyIntakeRecord]), which the worker reads first. Readers
// take a record's payload with [Payload].
package queue
