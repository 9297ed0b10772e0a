package registry

import (
	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/admissionfn"
	"github.com/hookline/hookline/internal/app/paymentfn"
	"github.com/hookline/hookline/internal/app/receiverfn"
	"github.com/hookline/hookline/internal/app/reconcilerfn"
	"github.com/hookline/hookline/internal/app/spendfn"
)

// Functions lists every function of the template.
func Functions() []app.Function {
	return []app.Function{receiverfn.Function, admissionfn.Function, paymentfn.Function, spendfn.Function, reconcilerfn.Function}
}

// Named returns the function called name.
func Named(name string) (app.Function, bool) {
	for _, f := range Functions() {
		if f.Name == name {
			return f, true
		}
	}
	return app.Function{}, false
}
