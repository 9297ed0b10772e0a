package config

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/sums"
	"github.com/hookline/hookline/pkg/webhook"
)

// Retentions' defaults: INTAKE_RETENTION's is intake's DefaultRetention
// and IDEMPOTENCY_RETENTION's is idempotency's, to which the package's
// tests hold them. The package imports neither: every function would then
// link the intake's SQS client and the idempotency store, the admission
// function and the reconciler included.
const (
	DefaultIntakeRetention      = 35 * 24 * time.Hour
	DefaultIdempotencyRetention = 35 * 24 * time.Hour
)

// Lookup reads one variable; os.LookupEnv is the production one.
type Lookup func(string) (string, bool)

// env collects problems while reading variables.
type env struct {
	lookup Lookup
	errs   []error
}

func newEnv(lookup Lookup) *env {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	return &env{lookup: lookup}
}

func (e *env) required(name string) string {
	v, _ := e.lookup(name)
	if strings.TrimSpace(v) == "" {
		e.errs = append(e.errs, fmt.Errorf("config: %s is required", name))
	}
	return v
}

func (e *env) optional(name, def string) string {
	v, _ := e.lookup(name)
	return cmp.Or(v, def)
}

func (e *env) duration(name string, def time.Duration) time.Duration {
	v, ok := e.lookup(name)
	if !ok || v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		e.errs = append(e.errs, fmt.Errorf("config: %s=%q is not a positive duration", name, v))
		return def
	}
	return d
}

func (e *env) integer(name string, def int) int {
	v, ok := e.lookup(name)
	if !ok || v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		e.errs = append(e.errs, fmt.Errorf("config: %s=%q is not a non-negative integer", name, v))
		return def
	}
	return n
}

func (e *env) err() error { return errors.Join(e.errs...) }

// QueueURLVar names the variable holding a queue's URL: QUEUE_URL_<NAME>,
// upper-cased with '-' as '_'.
func QueueURLVar(queue string) string {
	return "QUEUE_URL_" + strings.ToUpper(strings.ReplaceAll(queue, "-", "_"))
}

// Source is a configured webhook source with its queue resolved.
type Source struct {
	Spec     webhook.SourceSpec
	QueueURL string
}

// Receiver is the receiver function's configuration.
type Receiver struct {
	Sources     []Source
	IntakeTable string
	Retention   time.Duration
	SecretTTL   time.Duration
	// SecretPreviousGrace is how long AWSPREVIOUS stays valid after a
	// rotation.
	SecretPreviousGrace time.Duration
	// MaxEventAge is how old an event whose time is signed, and held to
	// no replay window, may be before the receiver acknowledges and
	// drops it (receiver.Config.MaxEventAge): below Retention.
	MaxEventAge time.Duration
	// Usage is how the usage sources are read (USAGE_MAPPINGS,
	// SPEND_UNIT).
	Usage Usage
}

// ReceiverFromEnv reads HOOKLINE_SOURCES (JSON, see
// [webhook.ParseSources]), INTAKE_TABLE, QUEUE_URL_<QUEUE> for every
// source's queue, and the optional INTAKE_RETENTION, SECRET_CACHE_TTL,
// SECRET_PREVIOUS_GRACE (24h), MAX_EVENT_AGE ([maxEventAgeFromEnv]),
// USAGE_MAPPINGS and SPEND_UNIT ([Usage]).
func ReceiverFromEnv(lookup Lookup) (Receiver, error) {
	e := newEnv(lookup)
	cfg := Receiver{
		IntakeTable: e.required("INTAKE_TABLE"),
		Retention:   e.duration("INTAKE_RETENTION", DefaultIntakeRetention),
		SecretTTL:   e.duration("SECRET_CACHE_TTL", 5*time.Minute),

		SecretPreviousGrace: e.duration("SECRET_PREVIOUS_GRACE", 24*time.Hour),
	}
	cfg.MaxEventAge = maxEventAgeFromEnv(e, cfg.Retention)
	text := e.required("HOOKLINE_SOURCES")
	if text != "" {
		specs, err := webhook.ParseSources(text)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("config: HOOKLINE_SOURCES: %w", err))
		}
		for _, sp := range specs {
			cfg.Sources = append(cfg.Sources, Source{Spec: sp, QueueURL: e.required(QueueURLVar(sp.Queue))})
		}
		cfg.Usage = usageFromEnv(e, specs)
	}
	return cfg, e.err()
}

// Worker is the configuration every SQS-fed worker shares.
type Worker struct {
	QueueURL           string
	DeadLetterQueueURL string
	// Concurrency bounds the records of one batch processed at once.
	Concurrency int
}

func workerFromEnv(e *env) Worker {
	return Worker{
		QueueURL:           e.required("QUEUE_URL"),
		DeadLetterQueueURL: e.required("DEAD_LETTER_QUEUE_URL"),
		Concurrency:        e.integer("BATCH_CONCURRENCY", 10),
	}
}

// PaymentWorker is the payment worker's configuration.
type PaymentWorker struct {
	Worker
	IdempotencyTable  string
	IntakeTable       string // holds the payloads messages carry by reference ([intake.Payloads])
	Namespace         string
	InProgressTimeout time.Duration
	Retention         time.Duration
	CacheSize         int
	ProviderURL       string
	ProviderAPIKey    string
	// ContractURL and ContractAPIKey are the provider-contract service
	// (docs/provider-contract.md) that the sources whose effect is
	// "contract" act through: PROVIDER_URL's with PAYMENT_PROVIDER=generic,
	// CONTRACT_URL's with stripe (empty: no such effect).
	ContractURL     string
	ContractAPIKey  string
	ProviderTimeout time.Duration
	// EffectRetention keeps the effect keys of deliveries with no signed
	// time ([paymentworker.Config.EffectRetention]); zero is the worker's
	// default, 400 days.
	EffectRetention time.Duration
	// ProviderHorizon is the provider's settle horizon
	// (docs/provider-contract.md) and ClockSkew the bound on clock
	// differences between workers.
	ProviderHorizon time.Duration
	ClockSkew       time.Duration
	// PaymentProvider is "generic" (hookline's provider API, which the
	// simulator speaks) or "stripe" (PaymentIntents through stripe-go).
	PaymentProvider string
	// Mollie is where the worker fetches the objects of Mollie's
	// unsigned webhooks; a zero value fetches nothing, and Mollie's
	// messages are dead-lettered.
	Mollie Mollie
	// PayPal and GoCardless are where the worker fetches the capture a
	// PayPal webhook names and the payment a GoCardless event links; a
	// zero value fetches nothing, and their messages are dead-lettered.
	PayPal     PayPal
	GoCardless GoCardless
}

// Mollie is the payment worker's access to Mollie's API.
type Mollie struct {
	// URL is the API's base URL (https://api.mollie.com, or a double's).
	URL string
	// APIKey is a Mollie API key, live_... or test_.... Never log it.
	APIKey string
}

// MollieAPIURL is Mollie's API, the default of MOLLIE_API_URL.
const MollieAPIURL = "https://api.mollie.com"

// Payment providers of [PaymentWorker].
const (
	ProviderGeneric = "generic"
	ProviderStripe  = "stripe"
)

// stripeSearchLag is how far Stripe's Search API, the Stripe adapter's
// lookup, may lag a commit under normal conditions ("less than a minute").
const stripeSearchLag = time.Minute

// PaymentWorkerFromEnv reads IDEMPOTENCY_TABLE, INTAKE_TABLE, QUEUE_URL
// and DEAD_LETTER_QUEUE_URL, plus the optional PAYMENT_PROVIDER (generic or
// stripe; default generic), PAYMENT_PROVIDER_URL (the charge API's base
// URL; when empty, PROVIDER_URL, required, for generic and Stripe's API
// for stripe), PROVIDER_API_KEY (required for stripe: the secret key),
// CONTRACT_URL and CONTRACT_API_KEY (with stripe: the provider-contract
// service that sources whose effect is "contract" act through; with
// generic, PROVIDER_URL is that service), EFFECT_RETENTION (400 days:
// how long the effect keys of deliveries with no signed time are kept),
// PAYMENT_MAPPINGS (JSON, read by parse, see below; default hookline's
// shape for every source), IDEMPOTENCY_NAMESPACE (payments),
// IN_PROGRESS_TIMEOUT (60s; 150s for stripe), IDEMPOTENCY_RETENTION (35
// days), IDEMPOTENCY_CACHE_SIZE (10000), PROVIDER_TIMEOUT (5s),
// PROVIDER_SETTLE_HORIZON (30s; 90s for stripe, and at least
// STRIPE_SEARCH_LAG, 1m: how far Stripe's search may lag a commit, to be
// lowered only against a simulator whose lag is known), CLOCK_SKEW (1s) and
// BATCH_CONCURRENCY (10), and MOLLIE_API_KEY (a live_ or test_ key; set,
// the worker fetches every Mollie ping's payment before acting on it)
// with MOLLIE_API_URL (https://api.mollie.com), and likewise PayPal's
// PAYPAL_CLIENT_ID, PAYPAL_CLIENT_SECRET and PAYPAL_API_URL and
// GoCardless's GOCARDLESS_ACCESS_TOKEN and GOCARDLESS_API_URL
// ([PayPal], [GoCardless]). The in-progress window must leave a charge call
// room before the horizon and the skew.
//
// PAYMENT_MAPPINGS, when set, is read by parse ([ParseMappings]), and its
// errors are reported with every other.
func PaymentWorkerFromEnv(lookup Lookup, parse ParseMappings) (PaymentWorker, error) {
	e := newEnv(lookup)
	kind := e.optional("PAYMENT_PROVIDER", ProviderGeneric)
	inProgress, horizon := 60*time.Second, 30*time.Second
	if kind == ProviderStripe {
		inProgress, horizon = 150*time.Second, 90*time.Second
	}
	cfg := PaymentWorker{
		Worker:            workerFromEnv(e),
		IdempotencyTable:  e.required("IDEMPOTENCY_TABLE"),
		IntakeTable:       e.required("INTAKE_TABLE"),
		Namespace:         e.optional("IDEMPOTENCY_NAMESPACE", "payments"),
		InProgressTimeout: e.duration("IN_PROGRESS_TIMEOUT", inProgress),
		Retention:         e.duration("IDEMPOTENCY_RETENTION", DefaultIdempotencyRetention),
		CacheSize:         e.integer("IDEMPOTENCY_CACHE_SIZE", 10000),
		ProviderAPIKey:    e.optional("PROVIDER_API_KEY", ""),
		ProviderTimeout:   e.duration("PROVIDER_TIMEOUT", 5*time.Second),
		ProviderHorizon:   e.duration("PROVIDER_SETTLE_HORIZON", horizon),
		ClockSkew:         e.duration("CLOCK_SKEW", time.Second),
		EffectRetention:   e.duration("EFFECT_RETENTION", 0),
		PaymentProvider:   kind,
	}
	switch url := e.optional("PAYMENT_PROVIDER_URL", ""); kind {
	case ProviderGeneric:
		cfg.ProviderURL = url
		if url == "" {
			cfg.ProviderURL = e.required("PROVIDER_URL")
		}
		cfg.ContractURL, cfg.ContractAPIKey = cfg.ProviderURL, cfg.ProviderAPIKey
	case ProviderStripe:
		cfg.ProviderURL = url
		cfg.ProviderAPIKey = e.required("PROVIDER_API_KEY")
		cfg.ContractURL, cfg.ContractAPIKey = e.optional("CONTRACT_URL", ""), e.optional("CONTRACT_API_KEY", "")
		if lag := e.duration("STRIPE_SEARCH_LAG", stripeSearchLag); cfg.ProviderHorizon < lag {
			e.errs = append(e.errs, fmt.Errorf("config: PROVIDER_SETTLE_HORIZON %s must be at least %s with PAYMENT_PROVIDER=stripe: Stripe's search, its lookup, lags up to STRIPE_SEARCH_LAG", cfg.ProviderHorizon, lag))
		}
	default:
		e.errs = append(e.errs, fmt.Errorf("config: PAYMENT_PROVIDER=%q is not generic or stripe", kind))
	}
	cfg.Mollie = mollieFromEnv(e)
	cfg.PayPal, cfg.GoCardless = fetchersFromEnv(e)
	if raw := e.optional("PAYMENT_MAPPINGS", ""); raw != "" {
		if err := parse([]byte(raw), paymentSources(e)); err != nil {
			e.errs = append(e.errs, fmt.Errorf("config: PAYMENT_MAPPINGS: %w", err))
		}
	}
	if err := e.err(); err != nil {
		return cfg, err
	}
	if need := cfg.ProviderHorizon + cfg.ClockSkew + cfg.ProviderTimeout; cfg.InProgressTimeout <= need {
		return cfg, fmt.Errorf("config: IN_PROGRESS_TIMEOUT %s must exceed PROVIDER_SETTLE_HORIZON + CLOCK_SKEW + PROVIDER_TIMEOUT (%s)", cfg.InProgressTimeout, need)
	}
	return cfg, nil
}

// ParseMappings reads PAYMENT_MAPPINGS, raw, which says how each
// source's webhook body becomes a charge, checked against the sources of
// HOOKLINE_SOURCES when the worker has them (nil otherwise), and keeps
// what it read. The payment worker's wiring passes one over
// paymentworker.ParseMappingsFor: config, which every function links,
// links no payment worker.
type ParseMappings func(raw []byte, sources []webhook.SourceSpec) error

// paymentSources are the sources of HOOKLINE_SOURCES, when the worker
// has it (as under `hookline run`), so that each payments source's
// mapping is checked against its scheme at start: a preset source
// without a mapping for its preset would act on none of its events, and
// an earlier build's mapping of one is told to name its preset, which
// start-up says rather than the dead-letter queue.
func paymentSources(e *env) []webhook.SourceSpec {
	raw := e.optional("HOOKLINE_SOURCES", "")
	if raw == "" {
		return nil
	}
	specs, err := webhook.ParseSources(raw)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("config: HOOKLINE_SOURCES: %w", err))
	}
	return specs
}

// mollieFromEnv reads MOLLIE_API_KEY and MOLLIE_API_URL. A URL without
// a key, or a key that is not Mollie's, is refused; the key's value is
// never part of an error.
func mollieFromEnv(e *env) Mollie {
	m := Mollie{APIKey: e.optional("MOLLIE_API_KEY", ""), URL: e.optional("MOLLIE_API_URL", "")}
	switch {
	case m.APIKey == "" && m.URL != "":
		e.errs = append(e.errs, errors.New("config: MOLLIE_API_URL is set but MOLLIE_API_KEY is not"))
	case m.APIKey == "":
	case !strings.HasPrefix(m.APIKey, "live_") && !strings.HasPrefix(m.APIKey, "test_"):
		e.errs = append(e.errs, errors.New("config: MOLLIE_API_KEY is not a Mollie API key (live_... or test_...)"))
	case m.URL == "":
		m.URL = MollieAPIURL
	}
	return m
}

// Spend is the configuration of everything that touches the spend ledger:
// the spend worker, the reconciler, the admission endpoint and the CLI.
type Spend struct {
	LedgerTable    string
	WorkloadsTable string
	// PagerURL is the PagerDuty Events API v2 base URL.
	PagerURL string
	// ReconOwner and ReconRoutingKey name who owns unattributed and
	// disagreeing usage, and where they are paged.
	ReconOwner      string
	ReconRoutingKey string
	// Webhook and Poll are the two paths' contracts (contract 11).
	WebhookExpectedArrival, WebhookMaxAge, WebhookRetryInterval time.Duration
	PollExpectedArrival, PollMaxAge, PollInterval               time.Duration
	// Sums are SUM_SOURCES, the providers of sums: the spend worker counts
	// the records they cover in buckets, the reconciler polls them.
	Sums sums.Sources
}

// SpendFromEnv reads LEDGER_TABLE and WORKLOADS_TABLE, plus the optional
// PAGER_URL (https://events.pagerduty.com), RECON_OWNER (spend-oncall),
// RECON_ROUTING_KEY, WEBHOOK_EXPECTED_ARRIVAL (1m), WEBHOOK_MAX_AGE (1h),
// WEBHOOK_RETRY_INTERVAL (5m), POLL_EXPECTED_ARRIVAL (15m), POLL_MAX_AGE
// (30m), POLL_INTERVAL (5m) and SUM_SOURCES (none).
func SpendFromEnv(lookup Lookup) (Spend, error) {
	e := newEnv(lookup)
	cfg := spendFromEnv(e)
	return cfg, e.err()
}

func spendFromEnv(e *env) Spend {
	return Spend{
		LedgerTable:            e.required("LEDGER_TABLE"),
		WorkloadsTable:         e.required("WORKLOADS_TABLE"),
		PagerURL:               e.optional("PAGER_URL", "https://events.pagerduty.com"),
		ReconOwner:             e.optional("RECON_OWNER", "spend-oncall"),
		ReconRoutingKey:        e.optional("RECON_ROUTING_KEY", ""),
		WebhookExpectedArrival: e.duration("WEBHOOK_EXPECTED_ARRIVAL", time.Minute),
		WebhookMaxAge:          e.duration("WEBHOOK_MAX_AGE", time.Hour),
		WebhookRetryInterval:   e.duration("WEBHOOK_RETRY_INTERVAL", 5*time.Minute),
		PollExpectedArrival:    e.duration("POLL_EXPECTED_ARRIVAL", 15*time.Minute),
		PollMaxAge:             e.duration("POLL_MAX_AGE", 30*time.Minute),
		PollInterval:           e.duration("POLL_INTERVAL", 5*time.Minute),
		Sums:                   sumsFromEnv(e),
	}
}

// sumsFromEnv reads SUM_SOURCES ([sums.ParseSources]) and checks it
// against the usage mappings ([checkSumsDoor]).
func sumsFromEnv(e *env) sums.Sources {
	ss, err := sums.ParseSources(e.optional("SUM_SOURCES", ""))
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("config: SUM_SOURCES: %w", err))
	}
	checkSumsDoor(e, ss)
	return ss
}

// SpendWorker is the spend worker's configuration.
type SpendWorker struct {
	Worker
	Spend
	// IntakeTable is where each usage event's attribution is recorded.
	IntakeTable string
}

// SpendWorkerFromEnv reads [SpendFromEnv]'s variables plus QUEUE_URL,
// DEAD_LETTER_QUEUE_URL, BATCH_CONCURRENCY and INTAKE_TABLE.
func SpendWorkerFromEnv(lookup Lookup) (SpendWorker, error) {
	e := newEnv(lookup)
	cfg := SpendWorker{Worker: workerFromEnv(e), Spend: spendFromEnv(e), IntakeTable: e.required("INTAKE_TABLE")}
	return cfg, e.err()
}

// AdmissionFromEnv reads WORKLOADS_TABLE, all the admission endpoint needs.
func AdmissionFromEnv(lookup Lookup) (string, error) {
	e := newEnv(lookup)
	table := e.required("WORKLOADS_TABLE")
	return table, e.err()
}
