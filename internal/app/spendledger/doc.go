// Package spendledger builds the spend ledger and the outbox its pages go
// through, for the functions that write to the ledger (the spend worker,
// internal/app/spendfn, and the reconciler, internal/app/reconcilerfn),
// the CLI and the local run.
package spendledger
