package paymentfn

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/worker"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/stripecharge"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/webhook"
)

// Function is the payment worker, invoked by its queue's event source.
var Function = app.Function{Name: "payment-worker", Clients: func(cfg aws.Config) app.Clients {
	return app.QueueClients(cfg, sqs.NewFromConfig(cfg))
}, Build: func(d app.Deps) (app.Handler, error) {
	return app.Built(d, New, func(h intake.SQSHandler) app.Handler { return app.Handler{SQS: h} })
}}

// New builds the payment worker from its environment, behind the reader
// of the payloads its messages carry by reference
// ([worker.ReadingPayloads]).
func New(d app.Deps) (intake.SQSHandler, error) {
	mappings := paymentworker.DefaultMappings()
	cfg, err := config.PaymentWorkerFromEnv(d.Lookup, func(raw []byte, sources []webhook.SourceSpec) error {
		ms, err := paymentworker.ParseMappingsFor(raw, sources)
		if err == nil {
			mappings = ms
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	store, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: d.Clients.DynamoDB, Table: cfg.IdempotencyTable})
	if err != nil {
		return nil, err
	}
	// A claim made near the invocation's deadline is held until the
	// deadline plus the provider's horizon and the skew: by then its charge
	// call has ended and settled (paymentworker.Config.Horizon).
	reg, err := idempotency.New(idempotency.Config{
		Store: store, Namespace: cfg.Namespace, InProgressTimeout: cfg.InProgressTimeout,
		DeadlineMargin: cfg.ProviderHorizon + cfg.ClockSkew,
		Retention:      cfg.Retention, CacheSize: cfg.CacheSize, Logger: d.Log(), Now: d.Now,
	})
	if err != nil {
		return nil, err
	}
	client, err := newCharger(d, cfg)
	if err != nil {
		return nil, err
	}
	effects, err := newEffects(d, cfg, client)
	if err != nil {
		return nil, err
	}
	q, err := worker.Queue(d, cfg.Worker)
	if err != nil {
		return nil, err
	}
	w, err := paymentworker.New(paymentworker.Config{
		Registry: reg, Provider: client, Effects: effects, Queue: q, Mappings: mappings, Concurrency: cfg.Concurrency,
		Horizon: cfg.ProviderHorizon, ClockSkew: cfg.ClockSkew, EffectRetention: cfg.EffectRetention, Fetchers: newFetchers(cfg),
		Metrics: d.EMF(), Logger: d.Log(), Now: d.Now,
	})
	if err != nil {
		return nil, err
	}
	return worker.ReadingPayloads(d, cfg.IntakeTable, w.Handle)
}

// newFetchers builds the clients of the providers whose webhooks are
// fetched before acting: Mollie's, PayPal's and GoCardless's, each when
// its credentials are configured.
func newFetchers(cfg config.PaymentWorker) map[string]paymentworker.Fetcher {
	fetchers := map[string]paymentworker.Fetcher{}
	if cfg.Mollie.APIKey != "" {
		fetchers[string(webhook.SchemeMollie)] = &paymentworker.MollieClient{
			BaseURL: cfg.Mollie.URL, APIKey: cfg.Mollie.APIKey, Timeout: cfg.ProviderTimeout,
		}
	}
	if cfg.PayPal.ClientID != "" {
		fetchers[string(webhook.SchemePayPal)] = &paymentworker.PayPalClient{
			BaseURL: cfg.PayPal.URL, ClientID: cfg.PayPal.ClientID, ClientSecret: cfg.PayPal.ClientSecret, Timeout: cfg.ProviderTimeout,
		}
	}
	if cfg.GoCardless.AccessToken != "" {
		fetchers[string(webhook.SchemeGoCardless)] = &paymentworker.GoCardlessClient{
			BaseURL: cfg.GoCardless.URL, AccessToken: cfg.GoCardless.AccessToken, Timeout: cfg.ProviderTimeout,
		}
	}
	return fetchers
}

// newCharger builds the provider the configuration selects: hookline's
// generic provider API, or Stripe.
func newCharger(d app.Deps, cfg config.PaymentWorker) (paymentworker.Charger, error) {
	if cfg.PaymentProvider == config.ProviderStripe {
		return stripecharge.New(stripecharge.Config{APIKey: cfg.ProviderAPIKey, URL: cfg.ProviderURL, Timeout: cfg.ProviderTimeout, Logger: d.Log()})
	}
	return provider.New(provider.Config{BaseURL: cfg.ProviderURL, APIKey: cfg.ProviderAPIKey, Timeout: cfg.ProviderTimeout, Logger: d.Log()})
}

// newEffects names the clients a source's mapping may choose between:
// the configured provider under its own name, and the provider-contract
// service that the payment service providers' captures act through.
func newEffects(d app.Deps, cfg config.PaymentWorker, client paymentworker.Charger) (map[string]paymentworker.Charger, error) {
	if cfg.PaymentProvider == config.ProviderStripe {
		effects := map[string]paymentworker.Charger{paymentworker.EffectStripe: client}
		if cfg.ContractURL != "" {
			contract, err := provider.New(provider.Config{BaseURL: cfg.ContractURL, APIKey: cfg.ContractAPIKey, Timeout: cfg.ProviderTimeout, Logger: d.Log()})
			if err != nil {
				return nil, err
			}
			effects[paymentworker.EffectContract] = contract
		}
		return effects, nil
	}
	return map[string]paymentworker.Charger{paymentworker.EffectContract: client}, nil
}
