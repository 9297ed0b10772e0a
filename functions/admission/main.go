package main

import (
	"github.com/hookline/hookline/pkg/admission"
	"github.com/hookline/hookline/pkg/app"
)

func main() {
	app.Main("admission", app.NewAdmission, func(h *admission.Handler) any { return h.Handle })
}
