// Command reconciler is the scheduled reconciliation Lambda: it folds the
// provider's usage export into the spend ledger.
package main
