package main

import (
	"github.com/hookline/hookline/pkg/app"
	"github.com/hookline/hookline/pkg/spendworker"
)

func main() {
	app.Main("spend-worker", app.NewSpendWorker, func(h *spendworker.Worker) any { return h.Handle })
}
