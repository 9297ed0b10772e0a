// Package provider is the HTTP client for the payment and usage provider.
//
// # Charges
//
// [Client.CreateCharge] sends POST /v1/charges with an Idempotency-Key header
// and classifies every response into one [Outcome]:
//
//   - 2xx: [Succeeded] or [Declined], by the status in the body; a charge
//     still pending is [Unknown].
//   - 402: [Declined] (a decline is final). The body may be the charge or a
//     Stripe-style error object; either way the result carries a charge.
//   - 429, or a connection that could not be opened: [Retriable]. The
//     provider did not execute the request; Retry-After (seconds or an HTTP
//     date) is honoured.
//   - 408, 409, every 5xx, a timeout, a reset or EOF after the request was
//     written, or a 2xx body that cannot be read: [Unknown]. The charge may
//     exist: a proxy answers 502 or 504 after the backend committed, a 409
//     means another request with the key is still in flight.
//   - every other 3xx or 4xx (400, 401, 403, 404, 422, ...): [Rejected], a
//     refusal of the request itself; [ErrKeyConflict] when the key was used
//     with other parameters.
//
// CreateCharge sends again, with the same key, only after [Retriable]. It
// never re-sends after [Unknown]: whether an unknown charge exists is for
// [Client.LookupCharge] to say, and only once the provider can no longer
// commit it and its lookup has caught up (its settle horizon). [Match]
// compares a charge found that way with the request, in the canonical form
// of [ChargeRequest.Canonical]. The payment worker's state machine (package
// payments) puts these together; docs/provider-contract.md is the contract
// it assumes of a provider. See the examples of [Client.CreateCharge] and
// [Match].
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
