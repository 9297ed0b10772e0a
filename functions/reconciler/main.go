// Command reconciler is the scheduled reconciliation Lambda: it folds the
// provider's usage export into the spend ledger.
package main

import (
	"github.com/hookline/hookline/pkg/app"
	"github.com/hookline/hookline/pkg/reconcile"
)

func main() {
	app.Main("reconciler", app.NewReconciler, func(h *reconcile.Reconciler) any { return h.Handle })
}
