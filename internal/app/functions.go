package app

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
)

// Function is one function of the template: its name (its directory under
// functions/ and its FunctionName's suffix), the AWS clients it uses and
// how its handler is built from [Deps]. Each function's value lives in its
// own wiring package (internal/app/receiverfn and its siblings), so that
// a main which refers to its own links no other function's handler,
// adapters or provider SDKs; internal/app/registry lists them all.
type Function struct {
	Name string
	// Clients builds the AWS clients the function uses, and no other, in
	// Lambda ([LambdaDeps]).
	Clients func(aws.Config) Clients
	Build   func(Deps) (Handler, error)
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

// Built builds a handler with its constructor and wraps its method: the
// body of each [Function.Build].
func Built[T any](d Deps, build func(Deps) (T, error), handler func(T) Handler) (Handler, error) {
	h, err := build(d)
	if err != nil {
		return Handler{}, err
	}
	return handler(h), nil
}
