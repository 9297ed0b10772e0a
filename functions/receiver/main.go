package main

import (
	"github.com/hookline/hookline/pkg/app"
	"github.com/hookline/hookline/pkg/receiver"
)

func main() {
	app.Main("receiver", app.NewReceiver, func(h *receiver.Handler) any { return h.Handle })
}
