package main

import (
	"github.com/hookline/hookline/pkg/app"
	"github.com/hookline/hookline/pkg/reconcile"
)

func main() {
	app.Main("reconciler", app.NewReconciler, func(h *reconcile.Reconciler) any { return h.Handle })
}
