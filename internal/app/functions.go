package app

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/admission"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/receiver"
	"github.com/hookline/hookline/internal/reconcile"
)

// Function is one function of the template: its name (its directory under
// functions/ and its FunctionName's suffix) and how its handler is built
// from [Deps]. The mains, the template test and the local run all build
// functions through these values.
type Function struct {
	Name  string
	Build func(Deps) (Handler, error)
}

// Handler is a built function. Exactly one field is set: the one for the
// event source that invokes it.
type Handler struct {
	HTTP     func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
	SQS      func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	Schedule func(context.Context, events.EventBridgeEvent) error
}

// Lambda returns the handler function to pass to lambda.Start.
func (h Handler) Lambda() any {
	switch {
	case h.HTTP != nil:
		return h.HTTP
	case h.SQS != nil:
		return h.SQS
	default:
		return h.Schedule
	}
}

// The template's functions. Each Build is a function literal that
// captures nothing, so the variables are static data: a main's binary
// links only the handler it refers to.
var (
	Receiver = Function{Name: "receiver", Build: func(d Deps) (Handler, error) {
		return built(d, NewReceiver, func(h *receiver.Handler) Handler { return Handler{HTTP: h.Handle} })
	}}
	Admission = Function{Name: "admission", Build: func(d Deps) (Handler, error) {
		return built(d, NewAdmission, func(h *admission.Handler) Handler { return Handler{HTTP: h.Handle} })
	}}
	PaymentWorker = Function{Name: "payment-worker", Build: func(d Deps) (Handler, error) {
		return built(d, NewPaymentWorker, func(h intake.SQSHandler) Handler { return Handler{SQS: h} })
	}}
	SpendWorker = Function{Name: "spend-worker", Build: func(d Deps) (Handler, error) {
		return built(d, NewSpendWorker, func(h intake.SQSHandler) Handler { return Handler{SQS: h} })
	}}
	Reconciler = Function{Name: "reconciler", Build: func(d Deps) (Handler, error) {
		return built(d, NewReconciler, func(r *reconcile.Reconciler) Handler { return Handler{Schedule: r.Handle} })
	}}
)

// Functions lists every function of the template. A main refers to its
// own [Function] only, so that its binary links only its own handler.
func Functions() []Function {
	return []Function{Receiver, Admission, PaymentWorker, SpendWorker, Reconciler}
}

// FunctionNamed returns the function called name.
func FunctionNamed(name string) (Function, bool) {
	for _, f := range Functions() {
		if f.Name == name {
			return f, true
		}
	}
	return Function{}, false
}

// built builds a handler with its constructor and wraps its method.
func built[T any](d Deps, build func(Deps) (T, error), handler func(T) Handler) (Handler, error) {
	h, err := build(d)
	if err != nil {
		return Handler{}, err
	}
	return handler(h), nil
}
