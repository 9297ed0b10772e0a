// Command receiver is the webhook receiver Lambda behind the HTTP API.
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
		slog.Error("receiver: aws config", "err", err)
		os.Exit(1)
	}
	h, err := app.NewReceiver(deps)
	if err != nil {
		deps.Logger.Error("receiver: config", "err", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}
