//go:build !oncall

package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/paymentworker"
)

// endpointsFile is where `hookline run` writes its endpoints, so that
// other hookline commands in the same directory reach the same local AWS.
const endpointsFile = ".hookline/endpoints.env"

// metricsFile receives the EMF metric lines of a local run (in Lambda they
// go to stdout and CloudWatch Logs).
const metricsFile = ".hookline/metrics.jsonl"

// newRunCmd runs the whole system locally; `make run` calls it.
func newRunCmd() *cobra.Command {
	var addr, paypalAddr string
	var every time.Duration
	var pay paymentFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the whole system locally on embedded AWS until Ctrl-C",
		Long: `Run the whole system locally on embedded AWS until Ctrl-C: DynamoDB and SQS
on free loopback ports, every queue and table of the template, every function
behind its local Lambda adapter, the provider simulator, and doubles of
Mollie's API (which the payment worker fetches from) and of PayPal's
certificate host (which paypal sources trust; pin --paypal-certs-addr in
their cert_hosts). It writes .hookline/endpoints.env so that hookline
commands in another terminal, in the same directory, reach the same local
AWS and doubles.`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:"+envOr("PORT", "8080"), "HTTP API listen address (PORT overrides the port)")
	cmd.Flags().DurationVar(&every, "reconcile-every", 20*time.Second, "run the reconciler at this interval (the template's rate is for AWS; 0 keeps it)")
	cmd.Flags().StringVar(&pay.provider, "provider", "generic", "the API the payment worker charges through: generic, or stripe (the simulator's Stripe face, through the Stripe adapter)")
	cmd.Flags().StringVar(&pay.profile, "provider-profile", "", "the simulator's idempotency profile: honours_keys, replays_successes or ignores_keys (default ignores_keys; honours_keys, Stripe's, with --provider stripe)")
	cmd.Flags().StringVar(&pay.mappings, "payment-mappings", "", "a JSON file of PAYMENT_MAPPINGS: how each source's webhook body becomes a charge")
	cmd.Flags().StringVar(&paypalAddr, "paypal-certs-addr", defaultPayPalCertsAddr, "listen address of the PayPal certificate double, the host a paypal source's cert_hosts pins")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := pay.localConfig()
		if err != nil {
			return usageErrorf("%w", err)
		}
		cfg.PayPalCertsAddr = paypalCertsAddr(cmd.OutOrStdout(), paypalAddr, cmd.Flags().Changed("paypal-certs-addr"))
		if cfg.AWSFaults, err = localaws.FaultsFromEnv(); err != nil {
			return usageErrorf("%w", err)
		}
		if cfg.AWSExpireItems, err = localaws.ExpiryFromEnv(); err != nil {
			return usageErrorf("%w", err)
		}
		return exit(runLocal(cmd.Context(), cmd.OutOrStdout(), addr, every, cfg))
	}
	return cmd
}

// defaultPayPalCertsAddr is where the PayPal certificate double of a
// local run listens unless --paypal-certs-addr says otherwise.
const defaultPayPalCertsAddr = "127.0.0.1:8443"

// paypalCertsAddr is the PayPal double's address: the flag's, or the
// default's while it is free, else a free port (printed at start), so
// that a second local run still starts.
func paypalCertsAddr(out io.Writer, addr string, chosen bool) string {
	if chosen {
		return addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(out, "paypal certificate double: %s is busy, using a free port; a paypal source whose cert_hosts pins %s "+
			"will not verify: pin a free port in cert_hosts and pass it with --paypal-certs-addr "+
			"(make run RUN_FLAGS=\"--paypal-certs-addr 127.0.0.1:PORT\")\n", addr, addr)
		return "127.0.0.1:0"
	}
	ln.Close()
	return addr
}

// paymentFlags are run's choices of payment provider.
type paymentFlags struct {
	provider, profile, mappings string
}

// stripeLocalKey is the Stripe secret key of local runs: the simulator
// checks it as Stripe checks a key.
const stripeLocalKey = "sk_test_hookline_local"

// localConfig turns the flags into the local system's payment settings,
// refusing what cannot run.
func (f paymentFlags) localConfig() (localrun.Config, error) {
	var cfg localrun.Config
	profile := cmp.Or(f.profile, providersim.ProfileIgnoresKeys.String())
	switch f.provider {
	case config.ProviderGeneric:
	case config.ProviderStripe:
		profile = cmp.Or(f.profile, providersim.ProfileHonoursKeys.String())
		cfg.PaymentProvider, cfg.Sim.APIKey = config.ProviderStripe, stripeLocalKey
		cfg.Sim.NormaliseCurrency, cfg.Sim.DeclineErrorBody = true, true
		cfg.Sim.LookupLag = time.Second // Stripe's search lags its writes
	default:
		return cfg, fmt.Errorf("--provider %q is not generic or stripe", f.provider)
	}
	p, err := providersim.ParseProfile(profile)
	if err != nil {
		return cfg, fmt.Errorf("--provider-profile: %w", err)
	}
	cfg.Sim.Profile = p
	if f.mappings != "" {
		data, err := os.ReadFile(f.mappings)
		if err != nil {
			return cfg, fmt.Errorf("--payment-mappings: %w", err)
		}
		if _, err := paymentworker.ParseMappings(data); err != nil {
			return cfg, fmt.Errorf("--payment-mappings %s: %w", f.mappings, err)
		}
		cfg.PaymentMappings = string(data)
	}
	return cfg, nil
}

func runLocal(ctx context.Context, out io.Writer, addr string, every time.Duration, cfg localrun.Config) int {
	log := logger(verbose)
	if err := os.MkdirAll(filepath.Dir(metricsFile), 0o755); err != nil {
		fmt.Fprintln(stderr, "hookline run:", err)
		return exitFailure
	}
	metrics, err := os.Create(metricsFile)
	if err != nil {
		fmt.Fprintln(stderr, "hookline run:", err)
		return exitFailure
	}
	defer metrics.Close()
	cfg.Addr, cfg.Logger, cfg.Out, cfg.ScheduleEvery, cfg.Metrics = addr, log, out, every, metrics
	cfg.Sim.Logger = slog.New(slog.NewTextHandler(out, nil)).With("from", "provider")
	cfg.Sim.OnPage = printPage(out)
	sys, err := localrun.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "hookline run:", err)
		return exitFailure
	}
	defer os.Remove(paypalKeyFile)
	if err := writeEndpoints(sys); err != nil {
		fmt.Fprintln(stderr, "hookline run:", err)
	}
	printExamples(out, sys.URL)
	stopFaults := printFaults(out, sys.AWS, faultsEvery)
	<-ctx.Done()
	stopFaults()
	fmt.Fprintln(out, "stopping")
	os.Remove(endpointsFile)
	if err := sys.Close(); err != nil {
		fmt.Fprintln(stderr, "hookline run: stop:", err)
		return exitFailure
	}
	return exitOK
}

// faultsEvery is how often `hookline run` prints its fault counts.
const faultsEvery = 10 * time.Second

// printFaults prints the `local aws faults:` line every interval while
// the fault layer is on; the returned function prints it a last time and
// stops. With the layer off it prints nothing.
func printFaults(out io.Writer, env *localaws.Env, every time.Duration) (stop func()) {
	if !env.FaultsOn() {
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				fmt.Fprintln(out, faultsLine(env))
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		fmt.Fprintln(out, faultsLine(env))
	}
}

// faultsLine is "local aws faults: ddb-ambiguous=3 sqs-duplicate=1 ...".
func faultsLine(env *localaws.Env) string {
	return "local aws faults: " + env.Faults().String()
}

// printPage shows every page the simulator's pager sink receives.
func printPage(out io.Writer) func(pager.Event) {
	return func(ev pager.Event) {
		summary := ev.EventAction
		if ev.Payload != nil {
			summary = ev.Payload.Summary
		}
		fmt.Fprintf(out, "PAGE %s (dedup %s)\n", summary, ev.DedupKey)
	}
}

// paypalKeyFile holds the PayPal double's signing key while a local run
// lasts, for `hookline dev send-webhook --scheme paypal`.
const paypalKeyFile = ".hookline/paypal-key.pem"

func writeEndpoints(sys *localrun.System) error {
	key, err := sys.PayPal.KeyPEM()
	if err != nil {
		return err
	}
	if err := os.WriteFile(paypalKeyFile, key, 0o600); err != nil {
		return err
	}
	text := fmt.Sprintf("AWS_ENDPOINT_URL_SQS=%s\nAWS_ENDPOINT_URL_DYNAMODB=%s\nHOOKLINE_API_URL=%s\nHOOKLINE_PROVIDER_URL=%s\n"+
		"HOOKLINE_MOLLIE_URL=%s\nHOOKLINE_PAYPAL_CERT_URL=%s\nHOOKLINE_PAYPAL_KEY_FILE=%s\nHOOKLINE_PAYPAL_API_URL=%s\nHOOKLINE_GOCARDLESS_URL=%s\n"+
		"HOOKLINE_OPENMETER_URL=%s\n%s=%s\n",
		sys.AWS.SQSEndpoint, sys.AWS.DynamoEndpoint, sys.URL, sys.Sim.URL(), sys.Mollie.URL(), sys.PayPal.CertURL(), paypalKeyFile,
		sys.PayPalAPI.URL(), sys.GoCardless.URL(), sys.OpenMeter.URL(), controlURLVar, sys.ControlURL)
	return os.WriteFile(endpointsFile, []byte(text), 0o644)
}

func printExamples(out io.Writer, url string) {
	fmt.Fprintf(out, `
metrics (EMF lines) go to %s.
ready; Ctrl-C stops everything. In another terminal:
  go run ./cmd/hookline dev send-webhook --source payments --file testdata/payments/payment_requested.json
  go run ./cmd/hookline dev send-webhook --source payments --file testdata/payments/payment_requested.json --tamper --id evt_tampered
(HTTP API at %s)
`, metricsFile, url)
}
