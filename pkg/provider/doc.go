// Package provider is the HTTP client for the payment and usage provider.
//
// # Charges
//
// [Client.CreateCharge] sends POST /v1/charges with an Idempotency-Key header
// and classifies every response into one [Outcome]:
//
//   - 2xx: [Succeeded] or [Declined], by the status in the body.
//   - 402: [Declined] (the card was declined; a decline is final).
//   - 408, 409, 429 and 5xx: [Retriable]. The provider either did not complete
//     the request or asked us to come back; Retry-After (seconds or an HTTP
//     date) is honoured.
//   - every other 3xx or 4xx (400, 401, 403, 404, 422, ...): [Rejected], a
//     permanent failure of the request itself. Sending it again cannot help.
//   - a timeout, connection reset or EOF after the request may have been
//     written: [Unknown]. The charge may or may not exist.
//
// CreateCharge retries [Retriable] results with exponential backoff and
// jitter, always with the same Idempotency-Key. Treating a 5xx as "did not
// happen" relies on that key: a provider that answers 5xx after charging is
// only safe to retry because it will recognise the key. It never re-sends after an
// [Unknown] result: a provider that does not honour keys would charge twice.
// A caller that gets [Unknown] must call [Client.LookupCharge] with the same
// key before it sends the charge again. [Client.ChargeOnce] does exactly that:
//
//	res := c.ChargeOnce(ctx, key, provider.ChargeRequest{
//		EventID: "evt_123", Customer: "cus_1", Amount: 1999, Currency: "eur",
//	})
//	switch res.Outcome {
//	case provider.Succeeded, provider.Declined: // final: store it with the key
//	case provider.Retriable, provider.Unknown:  // retry the message later
//	case provider.Rejected:                     // poison: send to the DLQ
//	}
//
// The client turns off net/http's own silent replay of requests that carry an
// Idempotency-Key, so every attempt that reaches the wire is one this package
// counted and classified.
//
// # Usage export
//
// [Client.ListUsage] pages through GET /v1/usage. The export filters on
// published_at, the time a record became visible in the export, not on
// occurred_at. The provider's export is eventually consistent: a record that
// occurred at 10:00 may only appear at 10:07. Filtering by occurred_at would
// make an already read window grow later and a cursor would skip records.
// Filtering by published_at makes every window whose end lies in the
// provider's past a fixed set, so a cursor over published_at misses nothing;
// the caller's overlap window only has to cover skew between its clock and
// the provider's. Records are
// ordered by (published_at, record_id) and the page token is opaque.
//
// Pages do not go through this package: package pager sends them
// (PagerDuty Events API v2, with a durable outbox), and the simulator's
// pager sink accepts the same wire format.
package provider
