package app

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

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
	// SQS is an *sqs.Client, or nil. It is typed any so that package app
	// does not import the SQS SDK: an AWS service package builds its
	// schemas at start once it is linked, used or not, which costs a
	// bootstrap about 0.2 MB, and the admission function and the
	// reconciler use no queue. The functions that do take it with [SQS].
	SQS any
	// SecretsManager is an interface, so that a function which builds no
	// Secrets Manager client links none of its code.
	SecretsManager secrets.SecretsManagerAPI
}

// QueueClients builds DynamoDB and Secrets Manager clients from cfg, with
// sqs as the SQS client: the clients of the functions that read or send on
// queues and read credentials. The caller builds sqs
// (sqs.NewFromConfig(cfg)), since package app does not import the SQS SDK.
func QueueClients(cfg aws.Config, sqs any) Clients {
	return Clients{DynamoDB: awsenv.DynamoDB(cfg, ""), SQS: sqs, SecretsManager: awsenv.SecretsManager(cfg)}
}

// ErrNoSQS is returned at cold start when a function sends or receives on
// a queue but its [Clients.SQS] is nil or lacks a method it calls.
var ErrNoSQS = errors.New("app: the function builds no SQS client")

// SQS is c's SQS client as T, the interface of the methods its caller
// calls (queue.SQSAPI, intake.SQSAPI), or [ErrNoSQS].
func SQS[T any](c Clients) (T, error) {
	api, ok := c.SQS.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("%w with the methods of %T", ErrNoSQS, &zero)
	}
	return api, nil
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
