package receiverfn

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/receiver"
	"github.com/hookline/hookline/pkg/secrets"
	"github.com/hookline/hookline/pkg/webhook"
)

// Function is the receiver, invoked by the HTTP API with every webhook
// and usage event.
var Function = app.Function{Name: "receiver", Clients: func(cfg aws.Config) app.Clients {
	return app.QueueClients(cfg, sqs.NewFromConfig(cfg))
}, Build: func(d app.Deps) (app.Handler, error) {
	return app.Built(d, New, func(h *receiver.Handler) app.Handler { return app.Handler{HTTP: h.Handle} })
}}

// New builds the webhook receiver from its environment.
func New(d app.Deps) (*receiver.Handler, error) {
	cfg, err := config.ReceiverFromEnv(d.Lookup)
	if err != nil {
		return nil, err
	}
	api, err := app.SQS[intake.SQSAPI](d.Clients)
	if err != nil {
		return nil, err
	}
	store, err := intake.New(intake.Config{
		DynamoDB: d.Clients.DynamoDB, SQS: api, Table: cfg.IntakeTable,
		Retention: cfg.Retention, Logger: d.Log(), Now: d.Now,
	})
	if err != nil {
		return nil, err
	}
	envSecrets := secrets.Env{Lookup: d.Lookup}
	var smSecrets *secrets.SecretsManager
	var sources []receiver.Source
	for _, s := range cfg.Sources {
		src := receiver.Source{Spec: s.Spec, QueueURL: s.QueueURL, Secrets: envSecrets, Certs: paypalCerts(d, s.Spec)}
		if s.Spec.SecretID != "" {
			if d.Clients.SecretsManager == nil {
				return nil, fmt.Errorf("receiverfn: source %q reads Secrets Manager but no client was built", s.Spec.Name)
			}
			if smSecrets == nil {
				smSecrets = &secrets.SecretsManager{Client: d.Clients.SecretsManager, TTL: cfg.SecretTTL, PreviousGrace: cfg.SecretPreviousGrace}
			}
			src.Secrets = smSecrets
		}
		sources = append(sources, src)
	}
	return receiver.New(receiver.Config{Sources: sources, Intake: store, Metrics: d.EMF(), Logger: d.Log(), MaxEventAge: cfg.MaxEventAge,
		Usage: cfg.Usage.Mappings, Now: d.Now})
}

// paypalCerts is the certificate fetcher of a paypal source when
// [app.Deps.PayPal] names a stand-in for PayPal's host; nil lets the
// receiver build one on the system roots.
func paypalCerts(d app.Deps, spec webhook.SourceSpec) *webhook.CertFetcher {
	if d.PayPal == nil || spec.Scheme != webhook.SchemePayPal {
		return nil
	}
	return webhook.NewCertFetcher(webhook.CertFetcherConfig{Hosts: spec.CertHosts, Roots: d.PayPal.Roots, Client: d.PayPal.Client})
}
