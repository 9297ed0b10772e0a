package app

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/hookline/hookline/pkg/awsconf"
)

// LambdaDeps builds the dependencies of a function running in Lambda (or
// under the runtime interface emulator): clients from the standard chain and
// AWS_ENDPOINT_URL*, JSON logs and EMF metrics on stdout.
func LambdaDeps(ctx context.Context) (Deps, error) {
	cfg, err := awsconf.Load(ctx)
	if err != nil {
		return Deps{}, err
	}
	return Deps{
		Clients: Clients{
			DynamoDB:       awsconf.DynamoDB(cfg, ""),
			SQS:            awsconf.SQS(cfg, ""),
			SecretsManager: secretsmanager.NewFromConfig(cfg),
		},
		Lookup:  os.LookupEnv,
		Logger:  slog.New(slog.NewJSONHandler(os.Stderr, nil)),
		Metrics: os.Stdout,
	}, nil
}
