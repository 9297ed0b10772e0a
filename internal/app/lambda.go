package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/hookline/hookline/internal/awsenv"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/pkg/secrets"
)

// ErrNoSecretsManager is returned at cold start when a function's
// environment names a credential's secret but the function builds no
// Secrets Manager client ([Function.Clients]).
var ErrNoSecretsManager = errors.New("app: the function builds no Secrets Manager client")

// LambdaDeps builds the dependencies of fn running in Lambda (or under
// the runtime interface emulator): the clients fn uses, configured from
// the environment as Lambda sets it ([awsenv.Load]), JSON logs and EMF
// metrics on stdout, and the credentials its environment names read from
// Secrets Manager ([WithSecretVars]).
func LambdaDeps(ctx context.Context, fn Function) (Deps, error) {
	if fn.Clients == nil {
		return Deps{}, fmt.Errorf("app: function %s names no clients", fn.Name)
	}
	cfg, err := awsenv.Load()
	if err != nil {
		return Deps{}, err
	}
	d := Deps{
		Clients: fn.Clients(cfg),
		Lookup:  os.LookupEnv,
		Logger:  slog.New(slog.NewJSONHandler(os.Stderr, nil)),
		Metrics: os.Stdout,
	}
	return WithSecretVars(ctx, d, secretReader(d.Clients))
}

// secretReader reads a secret's current value through c's Secrets
// Manager client, or fails with [ErrNoSecretsManager] when c has none.
func secretReader(c Clients) config.ReadSecret {
	if c.SecretsManager == nil {
		return func(_ context.Context, id string) (string, error) {
			return "", fmt.Errorf("read secret %s: %w", id, ErrNoSecretsManager)
		}
	}
	sm := &secrets.SecretsManager{Client: c.SecretsManager}
	return sm.Current
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

// Main is the body of every Lambda main: it builds fn's clients once per
// execution environment, builds fn's handler from the function's
// environment, and starts the runtime. A configuration problem is logged in
// full (every variable at once) and exits before the first invocation.
func Main(fn Function) {
	deps, err := LambdaDeps(context.Background(), fn)
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
