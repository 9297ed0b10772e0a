package app

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/hookline/hookline/internal/awsconf"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/pkg/secrets"
)

// LambdaDeps builds the dependencies of a function running in Lambda (or
// under the runtime interface emulator): clients from the standard chain and
// AWS_ENDPOINT_URL*, JSON logs and EMF metrics on stdout.
func LambdaDeps(ctx context.Context) (Deps, error) {
	cfg, err := awsconf.Load(ctx)
	if err != nil {
		return Deps{}, err
	}
	d := Deps{
		Clients: Clients{
			DynamoDB:       awsconf.DynamoDB(cfg, ""),
			SQS:            awsconf.SQS(cfg, ""),
			SecretsManager: secretsmanager.NewFromConfig(cfg),
		},
		Lookup:  os.LookupEnv,
		Logger:  slog.New(slog.NewJSONHandler(os.Stderr, nil)),
		Metrics: os.Stdout,
	}
	sm := &secrets.SecretsManager{Client: d.Clients.SecretsManager}
	return WithSecretVars(ctx, d, sm.Current)
}

// WithSecretVars resolves the credentials of [config.SecretVars] (the
// provider API key, the PagerDuty routing key) from Secrets Manager through
// read, wherever the environment names their secret with a
// [config.SecretIDSuffix] variable, once, at cold start.
func WithSecretVars(ctx context.Context, d Deps, read config.ReadSecret) (Deps, error) {
	lookup := d.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	resolved, err := config.WithSecrets(ctx, lookup, read, config.SecretVars...)
	if err != nil {
		return Deps{}, err
	}
	d.Lookup = resolved
	return d, nil
}

// Main is the body of every Lambda main: it builds the clients once per
// execution environment, builds fn's handler from the function's
// environment, and starts the runtime. A configuration problem is logged in
// full (every variable at once) and exits before the first invocation.
func Main(fn Function) {
	deps, err := LambdaDeps(context.Background())
	if err != nil {
		slog.Error(fn.Name+": aws config", "err", err)
		os.Exit(1)
	}
	h, err := fn.Build(deps)
	if err != nil {
		deps.Logger.Error(fn.Name+": config", "err", err)
		os.Exit(1)
	}
	lambda.Start(h.Lambda())
}
