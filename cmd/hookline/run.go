package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookline/hookline/pkg/localrun"
	"github.com/hookline/hookline/pkg/pager"
	"github.com/hookline/hookline/pkg/providersim"
)

// endpointsFile is where `hookline run` writes its endpoints, so that
// other hookline commands in the same directory reach the same local AWS.
const endpointsFile = ".hookline/endpoints.env"

// metricsFile receives the EMF metric lines of a local run (in Lambda they
// go to stdout and CloudWatch Logs).
const metricsFile = ".hookline/metrics.jsonl"

// newRunCmd runs the whole system locally; `make run` calls it.
func newRunCmd() *cobra.Command {
	var addr string
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the whole system locally on embedded AWS until Ctrl-C",
		Long: `Run the whole system locally on embedded AWS until Ctrl-C: DynamoDB and SQS
on free loopback ports, every queue and table of the template, every function
behind its local Lambda adapter, and the provider simulator. It writes
.hookline/endpoints.env so that hookline commands in another terminal, in the
same directory, reach the same local AWS.`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:"+envOr("PORT", "8080"), "HTTP API listen address (PORT overrides the port)")
	cmd.Flags().DurationVar(&every, "reconcile-every", 20*time.Second, "run the reconciler at this interval (the template's rate is for AWS; 0 keeps it)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return exit(runLocal(cmd.Context(), cmd.OutOrStdout(), addr, every))
	}
	return cmd
}

func runLocal(ctx context.Context, out io.Writer, addr string, every time.Duration) int {
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
	sys, err := localrun.Start(ctx, localrun.Config{
		Addr: addr, Logger: log, Out: out, ScheduleEvery: every, Metrics: metrics,
		Sim: providersim.Config{HonourIdempotencyKeys: false, Logger: slog.New(slog.NewTextHandler(out, nil)).With("from", "provider"), OnPage: printPage(out)},
	})
	if err != nil {
		fmt.Fprintln(stderr, "hookline run:", err)
		return exitFailure
	}
	if err := writeEndpoints(sys); err != nil {
		fmt.Fprintln(stderr, "hookline run:", err)
	}
	printExamples(out, sys.URL)
	<-ctx.Done()
	fmt.Fprintln(out, "stopping")
	os.Remove(endpointsFile)
	if err := sys.Close(); err != nil {
		fmt.Fprintln(stderr, "hookline run: stop:", err)
		return exitFailure
	}
	return exitOK
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
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

func writeEndpoints(sys *localrun.System) error {
	text := fmt.Sprintf("AWS_ENDPOINT_URL_SQS=%s\nAWS_ENDPOINT_URL_DYNAMODB=%s\nHOOKLINE_API_URL=%s\nHOOKLINE_PROVIDER_URL=%s\n",
		sys.AWS.SQSEndpoint, sys.AWS.DynamoEndpoint, sys.URL, sys.Sim.URL())
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
