// Package webhooktest signs deliveries as each provider of package
// [webhook] would, for tests and local senders: one [Kit] per scheme,
// with the provider's headers, its batches, a tampered body, a missing
// header and the identity the verifier should find. The conformance
// suites of packages webhook and receiver run every kit.
//
// A PayPal kit needs a certificate host: [Kits] starts the local double
// of package providersim and pins it.
package webhooktest
