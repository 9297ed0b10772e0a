package main

import (
	"github.com/hookline/hookline/pkg/app"
	"github.com/hookline/hookline/pkg/payments"
)

func main() {
	app.Main("payment-worker", app.NewPaymentWorker, func(h *payments.Worker) any { return h.Handle })
}
