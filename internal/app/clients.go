package app

import (
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/awsenv"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/pkg/secrets"
)

// Clients are the AWS clients a function may use, built once per
// execution environment. A function that does not use a client leaves it
// nil.
type Clients struct {
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	// SecretsManager is an interface, so that a function which builds no
	// Secrets Manager client links none of its code.
	SecretsManager secrets.SecretsManagerAPI
}

// QueueClients builds DynamoDB, SQS and Secrets Manager clients from cfg:
// those of the functions that read or send on queues and read
// credentials.
func QueueClients(cfg aws.Config) Clients {
	return Clients{DynamoDB: awsenv.DynamoDB(cfg, ""), SQS: awsenv.SQS(cfg, ""), SecretsManager: awsenv.SecretsManager(cfg)}
}

// Deps are the shared pieces every handler gets.
type Deps struct {
	Clients Clients
	Lookup  config.Lookup
	Logger  *slog.Logger
	// Now is the function's clock: the receiver's (replay window, intake
	// records and leases), the payment worker's (claims and leases), the
	// ledger's, its outbox's, the spend worker's, admission's (which
	// period it answers) and the reconciler's. Nil
	// is time.Now, as in Lambda; a local run moves it forward to pass
	// settle horizons and period ends.
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

// EMF is the EMF logger on [Deps.Metrics], or nil (which drops every
// metric) when there is none.
func (d Deps) EMF() *emf.Logger {
	if d.Metrics == nil {
		return nil
	}
	return emf.New(d.Metrics, "hookline")
}

// Log is [Deps.Logger], or a logger that discards when there is none.
func (d Deps) Log() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}
