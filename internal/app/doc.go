// Package app holds what every function's wiring shares: the AWS clients
// and [Deps] a handler is built from, the [Function] and [Handler] values,
// and [Main], the body of every Lambda main.
//
// Each function's wiring is a package of its own, which builds its handler
// from its configuration and clients: receiverfn, admissionfn, paymentfn,
// spendfn and reconcilerfn, with worker (the queue workers' shared pieces)
// and spendledger (the spend ledger of the spend worker, the reconciler and
// the CLI) beside them. A main imports its function's package only, so its
// bootstrap links no other function's handler, adapters or provider SDKs;
// registry lists every function for the template tests and the local run.
// The Lambda mains in functions/ and the local runner use the same
// constructors, so what runs locally is what is deployed.
package app
