// Package webhook verifies signed inbound webhooks and parses their envelopes.
//
// Two generic signature schemes are supported, chosen per source by
// configuration:
//
//   - [SchemeStandard], the Standard Webhooks specification: the headers
//     webhook-id, webhook-timestamp and webhook-signature, an HMAC-SHA256 over
//     "{id}.{timestamp}.{body}" keyed by the base64 part of a "whsec_" secret.
//     Svix's names for the same headers (svix-id, svix-timestamp,
//     svix-signature) are taken too; a header given under both names with
//     different values is refused.
//   - [SchemeStripe], the Stripe-Signature header "t=<unix>,v1=<hex>", an
//     HMAC-SHA256 over "{t}.{body}" keyed by the secret string itself.
//
// Beside them, a named preset per provider knows exactly what that
// provider signs, where its event identity lives, how it batches and what
// acknowledgement it expects: [SchemeAdyen], [SchemePayPal],
// [SchemeSquare], [SchemeCheckout], [SchemeBraintree], [SchemeGoCardless],
// [SchemePaddle], [SchemeRazorpay], [SchemeMollie], [SchemeGitHub] and
// [SchemeShopify]. [Verifier.VerifyDelivery] verifies a request of any
// scheme and splits it into [Item] values, one per event, each with the
// provider's identity and a queue message ([ItemEnvelope] for a preset).
// A preset that needs more than a secret (Square's signed URL, PayPal's
// webhook ID and pinned certificate hosts) is refused at start, naming
// the field. Package webhooktest signs deliveries as each provider would.
//
// A [Verifier] checks the signature over the raw body bytes in constant time,
// checks the signed timestamp against a replay window, and only then parses the
// body. Several secrets may be active at once so that they can rotate without
// downtime. See the example of [Verifier.Verify].
//
// Errors are the sentinels below, wrapped with context. They never contain a
// secret or a signature value, so they may be logged; they should still not be
// echoed to the caller, and [KindOf] and [Reason] give what a response or a
// metric needs.
//
// Sources are configuration, not code: [ParseSources] reads the JSON list of
// [SourceSpec] values (without secrets) and [SourceSpec.Source] joins one with
// its secrets into a validated [Source]. See the example of [ParseSources].
package webhook
