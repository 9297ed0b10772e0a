// Package paymentworkertest holds test helpers for code that drives the payment
// worker of package paymentworker: a queue that records what the worker asks of
// it, so drills can obey it the way SQS would.
package paymentworkertest
