// Command spend-worker is the spend worker Lambda.
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
		slog.Error("spend-worker: aws config", "err", err)
		os.Exit(1)
	}
	h, err := app.NewSpendWorker(deps)
	if err != nil {
		deps.Logger.Error("spend-worker: config", "err", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}
