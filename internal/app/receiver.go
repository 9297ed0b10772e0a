package app

import (
	"fmt"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/receiver"
	"github.com/hookline/hookline/pkg/secrets"
	"github.com/hookline/hookline/pkg/webhook"
)

// NewReceiver builds the webhook receiver from its environment.
func NewReceiver(d Deps) (*receiver.Handler, error) {
	cfg, err := config.ReceiverFromEnv(d.Lookup)
	if err != nil {
		return nil, err
	}
	store, err := intake.New(intake.Config{
		DynamoDB: d.Clients.DynamoDB, SQS: d.Clients.SQS, Table: cfg.IntakeTable,
		Retention: cfg.Retention, Logger: d.logger(),
	})
	if err != nil {
		return nil, err
	}
	envSecrets := secrets.Env{Lookup: d.Lookup}
	var smSecrets *secrets.SecretsManager
	var sources []receiver.Source
	for _, s := range cfg.Sources {
		src := receiver.Source{Spec: s.Spec, QueueURL: s.QueueURL, Secrets: envSecrets, Certs: d.paypalCerts(s.Spec)}
		if s.Spec.SecretID != "" {
			if d.Clients.SecretsManager == nil {
				return nil, fmt.Errorf("app: source %q reads Secrets Manager but no client was built", s.Spec.Name)
			}
			if smSecrets == nil {
				smSecrets = &secrets.SecretsManager{Client: d.Clients.SecretsManager, TTL: cfg.SecretTTL, PreviousGrace: cfg.SecretPreviousGrace}
			}
			src.Secrets = smSecrets
		}
		sources = append(sources, src)
	}
	return receiver.New(receiver.Config{Sources: sources, Intake: store, Metrics: d.metrics(), Logger: d.logger(), MaxEventAge: cfg.MaxEventAge,
		Usage: cfg.Usage.Mappings})
}

// paypalCerts is the certificate fetcher of a paypal source when
// [Deps.PayPal] names a stand-in for PayPal's host; nil lets the
// receiver build one on the system roots.
func (d Deps) paypalCerts(spec webhook.SourceSpec) *webhook.CertFetcher {
	if d.PayPal == nil || spec.Scheme != webhook.SchemePayPal {
		return nil
	}
	return webhook.NewCertFetcher(webhook.CertFetcherConfig{Hosts: spec.CertHosts, Roots: d.PayPal.Roots, Client: d.PayPal.Client})
}
