package app

import (
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/emf"
)

// Clients are the AWS clients a function may use, built once per
// execution environment.
type Clients struct {
	DynamoDB       *dynamodb.Client
	SQS            *sqs.Client
	SecretsManager *secretsmanager.Client // nil when no source uses it
}

// Deps are the shared pieces every handler gets.
type Deps struct {
	Clients Clients
	Lookup  config.Lookup
	Logger  *slog.Logger
	// Now is the spend side's clock: the ledger's, its outbox's, the spend
	// worker's and the reconciler's. Nil is time.Now; a local run's drills
	// move it forward to pass settle horizons.
	Now func() time.Time
	// Metrics receives EMF lines (stdout in Lambda).
	Metrics io.Writer
	// PayPal, when set, is whom paypal sources trust for PayPal's
	// certificates instead of the system roots: a local double. Nil in
	// Lambda.
	PayPal *PayPalTrust
}

// PayPalTrust is a stand-in for PayPal's certificate host: the roots its
// signing certificates chain to, and a client that reaches it.
type PayPalTrust struct {
	Roots  *x509.CertPool
	Client *http.Client
}

func (d Deps) metrics() *emf.Logger {
	if d.Metrics == nil {
		return nil
	}
	return emf.New(d.Metrics, "hookline")
}

func (d Deps) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}
