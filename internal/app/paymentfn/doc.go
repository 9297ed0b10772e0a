// Package paymentfn wires the payment worker ([paymentworker.Worker])
// from its environment: its idempotency registry, the charger the
// configuration selects (hookline's provider API or Stripe) and the
// fetchers of the providers whose webhooks are fetched before acting. Its
// [Function] is what functions/payment-worker starts.
package paymentfn
