// Command reconciler is the scheduled reconciliation Lambda: it folds the
// provider's usage export into the spend ledger.
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
		slog.Error("reconciler: aws config", "err", err)
		os.Exit(1)
	}
	r, err := app.NewReconciler(deps)
	if err != nil {
		deps.Logger.Error("reconciler: config", "err", err)
		os.Exit(1)
	}
	lambda.Start(r.Handle)
}
