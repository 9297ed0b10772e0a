// Package stripecharge charges through Stripe: a [paymentworker.Charger] on the
// official stripe-go client that creates one PaymentIntent per provider
// key and finds earlier attempts by the key stored in the intent's
// metadata.
//
// Each charge is a PaymentIntent created with confirm=true and
// off_session=true against the customer's default payment method, with
// the worker's provider key as Stripe's Idempotency-Key and the metadata
// hookline_pkey (that key), hookline_ref (the attempt as people read it)
// and event_id. Stripe is the "honours keys"
// profile of docs/provider-contract.md.
//
// Stripe's answers map onto the worker's outcomes:
//
//	succeeded                                   -> provider.Succeeded
//	card_error (402), or an intent that failed  -> provider.Declined
//	idempotency_error                           -> provider.Rejected (provider.ErrKeyConflict)
//	429, rate_limit, a refused connection       -> provider.Retriable
//	idempotency_key_in_use, api_error, 5xx, 408,
//	409, timeouts, resets, unreadable bodies    -> provider.Unknown
//	requires_action, processing, other statuses -> provider.Unknown (pending, looked up later)
//	any other 4xx                               -> provider.Rejected
//
// [Client.LookupCharge] uses Stripe's Search API
// (metadata['hookline_pkey']:'key', see [SearchQuery]; a legacy key is
// searched in hookline_key, where intents carried it before), because the lookup has only the key
// and a list of PaymentIntents cannot be filtered by metadata. Search is
// eventually consistent (Stripe documents "under normal conditions, less
// than a minute"), so that lag belongs in the worker's settle horizon:
// PROVIDER_SETTLE_HORIZON defaults to 90s with PAYMENT_PROVIDER=stripe.
//
// A [Client] is the Provider of a payment worker; the package example
// builds one.
package stripecharge
