// Package worker holds the wiring the queue workers share, the payment
// worker's (internal/app/paymentfn) and the spend worker's
// (internal/app/spendfn): their queue, and the reader of the payloads
// their messages carry by reference.
package worker
