// Command payment-worker is the payment worker Lambda on the payments queue.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/hookline/hookline/pkg/app"
)

func main() {
	ctx := context.Background()
	deps, err := app.LambdaDeps(ctx)
	if err != nil {
		slog.Error("payment-worker: aws config", "err", err)
		os.Exit(1)
	}
	w, err := app.NewPaymentWorker(deps)
	if err != nil {
		deps.Logger.Error("payment-worker: config", "err", err)
		os.Exit(1)
	}
	lambda.Start(w.Handle)
}
