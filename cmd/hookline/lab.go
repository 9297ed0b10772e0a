//go:build !oncall

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/dev/lab"
	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/stack"
)

// labFlags are the knobs of one lab experiment.
type labFlags struct {
	rate        float64
	duration    time.Duration
	warmup      time.Duration
	lostAcks    float64
	idempotency string
	spike       string
	profile     string
	faults      float64
	awsLatency  time.Duration
	seed        uint64
	burst       int
	out         string
	prices      string
	payload     string
	payloadSize int
	asJSON      bool
	suite       bool
	suitePay    string
	cpuProfile  string
	memProfile  string
	gogc        int
	planRate    float64
}

// labGOGC is the lab's collector setting unless GOGC is set: the process
// holds all of local AWS, both functions and the load, and at Go's 100 the
// collector took 13–14% of its CPU in a 3x spike (7% at 200).
const labGOGC = 200

// newLabCmd runs experiments on the whole local payment pipeline.
func newLabCmd() *cobra.Command {
	var f labFlags
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Run a payments experiment on the local system and say what broke",
		Long: `Run a payments experiment on the whole local system: signed webhooks offered
open loop at --rate through the HTTP API, the receiver, SQS, the event-source
adapter and the payment worker to the provider simulator, with --lost-acks of
SQS acknowledgements lost. It prints a line a second, then the totals, the
full-path and bare-pipeline ceilings measured in the same run, and what broke
(each missed goal with why and the fix). Per event it reports the AWS calls,
the DynamoDB write and read units the local DynamoDB's capacity model
metered (by table and index, and by call of one event), and the cost of a
million events priced from them. --payload and --payload-size choose the
webhook body, whose size the intake's writes pay for: the lab's own small
payment.requested event, testdata/payloads/stripe-invoice-finalized.json (a
5.8 KB Stripe invoice.finalized, which the Stripe invoice rule charges) or
testdata/payloads/adyen-authorisation.json (an Adyen AUTHORISATION, read with
the adyen preset's rule). Each webhook carries its own event ID and effect
key, so each is charged once; a body its rule does not act on (a Stripe
invoice.paid) is refused at start, with the reason. --plan-rate adds a
capacity plan for that rate on AWS, worked from the run's measured calls,
units and latencies against the template's settings and AWS's default
quotas. --out writes report.md, report.json and SVG plots there.`,
		Example: `  hookline lab --rate 500 --duration 60s --idempotency off
  hookline lab --rate 500 --duration 60s --idempotency on --spike 3x@20s+10s --out lab-report
  hookline lab --rate 200 --duration 10s --payload testdata/payloads/stripe-invoice-finalized.json
  hookline lab --rate 200 --duration 10s --payload testdata/payloads/adyen-authorisation.json --plan-rate 5000`,
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.Float64Var(&f.rate, "rate", 500, "offered webhooks/s, open loop")
	fl.DurationVar(&f.duration, "duration", time.Minute, "how long load is offered")
	fl.DurationVar(&f.warmup, "warmup", 5*time.Second, "load offered at --rate before the run, without lost acknowledgements or faults, and not counted (0: none, measure from a cold start)")
	fl.Float64Var(&f.lostAcks, "lost-acks", 0.002, "share of SQS acknowledgements lost")
	fl.StringVar(&f.idempotency, "idempotency", "on", "the worker's idempotency registry: on or off")
	fl.StringVar(&f.spike, "spike", "", "multiply the rate for a while, e.g. 3x@20s+10s")
	fl.StringVar(&f.profile, "provider-profile", "ignores_keys", "the provider's idempotency profile: honours_keys, replays_successes or ignores_keys")
	fl.Float64Var(&f.faults, "provider-faults", 0, "share of charge calls that fail in a hostile way")
	fl.DurationVar(&f.awsLatency, "aws-latency", 0, "added to every call the local DynamoDB and SQS answer, as a round trip to AWS (e.g. 5ms)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of lost acknowledgements and faults")
	fl.IntVar(&f.burst, "burst", 3000, "events of the saturated full-path and bare-pipeline ceilings")
	fl.StringVar(&f.out, "out", "", "write report.md, report.json and plots to this folder")
	fl.StringVar(&f.prices, "prices", "", "a JSON price table (default: built-in, dated us-east-1 list prices)")
	fl.StringVar(&f.payload, "payload", "", "a webhook body to send that its rule acts on (a hookline payment.requested event, a Stripe invoice.finalized such as testdata/payloads/stripe-invoice-finalized.json, or an Adyen AUTHORISATION such as testdata/payloads/adyen-authorisation.json), with each event's ID, effect key, customer and amount put in place (default: the lab's own small event)")
	fl.IntVar(&f.payloadSize, "payload-size", 0, "pad each webhook body to this many bytes (0: as it is)")
	fl.BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (load, drain and ceilings) to this file, for go tool pprof")
	fl.StringVar(&f.memProfile, "memprofile", "", "write a heap profile (allocations of the whole run) to this file when the run ends, for go tool pprof")
	fl.IntVar(&f.gogc, "gogc", defaultLabGOGC(), "the collector's GOGC for the run; 0 leaves the process's own setting, the default when the GOGC environment variable is set")
	fl.Float64Var(&f.planRate, "plan-rate", 0, "after the report, print a capacity plan for this many webhooks/s on AWS, worked from the run's figures (0: none)")
	fl.BoolVar(&f.suite, "suite", false, "run the seed experiments back to back (idempotency off, on, and on with a 3x spike at 20s for 10s) and compare them")
	fl.StringVar(&f.suitePay, "suite-payload", "", "with --suite, a fourth run with idempotency on and this webhook body (e.g. testdata/payloads/stripe-invoice-finalized.json), so that calls, units and cost are measured at a realistic size too")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := f.config(cmd.ErrOrStderr())
		if err != nil {
			return usageErrorf("%v", err)
		}
		if f.planRate < 0 || math.IsInf(f.planRate, 0) || math.IsNaN(f.planRate) {
			return usageErrorf("--plan-rate must be a rate of 0 (none) or more, not %g", f.planRate)
		}
		if f.cpuProfile != "" {
			stop, err := startCPUProfile(f.cpuProfile)
			if err != nil {
				return usageErrorf("%v", err)
			}
			defer stop()
		}
		if f.memProfile != "" {
			defer writeHeapProfile(f.memProfile)
		}
		if f.suitePay != "" && !f.suite {
			return usageErrorf("--suite-payload needs --suite")
		}
		if f.suite {
			if cmd.Flags().Changed("idempotency") || cmd.Flags().Changed("spike") {
				return usageErrorf("--suite sets --idempotency and --spike itself")
			}
			return exit(runLabSuite(cmd.Context(), cmd.OutOrStdout(), cfg, f))
		}
		return exit(runLab(cmd.Context(), cmd.OutOrStdout(), cfg, f))
	}
	cmd.AddCommand(newLabServeCmd())
	return cmd
}

// defaultLabGOGC is labGOGC, or 0 (the process's own) when GOGC is set.
func defaultLabGOGC() int {
	if os.Getenv("GOGC") != "" {
		return 0
	}
	return labGOGC
}

// runLabSuite runs idempotency off, on, and on with a 3x spike, and with
// --suite-payload on with that body.
func runLabSuite(ctx context.Context, out io.Writer, base lab.Config, f labFlags) int {
	runs, err := suiteRuns(base, f.suitePay, f.payloadSize)
	if err != nil {
		return failed(err)
	}
	var reports []*lab.Report
	for _, cfg := range runs {
		fmt.Fprintf(out, "== running %s\n", cfg.Name)
		rep, err := lab.Run(ctx, cfg)
		if err != nil {
			return failed(err)
		}
		if err := f.plan(rep); err != nil {
			return failed(err)
		}
		lab.Summary(out, rep)
		reports = append(reports, rep)
	}
	lab.Compare(out, reports[0], reports[1])
	if f.out != "" {
		if err := lab.WriteReport(f.out, reports...); err != nil {
			fmt.Fprintln(stderr, "hookline lab:", err)
			return exitFailure
		}
	}
	return exitOK
}

// suiteRuns are the suite's experiments on base.
func suiteRuns(base lab.Config, payload string, size int) ([]lab.Config, error) {
	spike := lab.Spike{Factor: 3, At: 20 * time.Second, For: 10 * time.Second}
	runs := []lab.Config{base, base, base}
	runs[0].Name, runs[0].Idempotency = "idempotency-off", false
	runs[1].Name, runs[1].Idempotency = "idempotency-on", true
	runs[2].Name, runs[2].Idempotency, runs[2].Spike = "idempotency-on-spike-3x", true, spike
	if payload == "" {
		return runs, nil
	}
	sized := base
	var err error
	if sized.Payload, err = lab.LoadPayload(payload, size); err != nil {
		return nil, err
	}
	sized.Name, sized.Idempotency = "idempotency-on-"+strings.TrimSuffix(filepath.Base(payload), filepath.Ext(payload)), true
	return append(runs, sized), nil
}

// config turns the flags into an experiment, refusing ambiguous values.
func (f labFlags) config(progress io.Writer) (lab.Config, error) {
	cfg := lab.Config{Rate: f.rate, Duration: f.duration, Warmup: f.warmup, LostAcks: f.lostAcks, FaultRate: f.faults, Seed: f.seed,
		Burst: f.burst, AWSLatency: f.awsLatency, GCPercent: f.gogc, Progress: progress}
	if verbose {
		// The functions' own logs; without -v the progress lines are the
		// output.
		cfg.Logger = logger(true)
	}
	switch f.idempotency {
	case "on":
		cfg.Idempotency = true
	case "off":
	default:
		return cfg, fmt.Errorf("--idempotency must be on or off, not %q", f.idempotency)
	}
	var err error
	if cfg.Spike, err = lab.ParseSpike(f.spike); err != nil {
		return cfg, err
	}
	if cfg.Profile, err = providersim.ParseProfile(f.profile); err != nil {
		return cfg, err
	}
	if f.prices != "" {
		p, err := lab.LoadPrices(f.prices)
		if err != nil {
			return cfg, err
		}
		cfg.Prices = &p
	}
	if f.payloadSize < 0 {
		return cfg, fmt.Errorf("--payload-size must not be negative, not %d", f.payloadSize)
	}
	if f.payload != "" {
		if cfg.Payload, err = lab.LoadPayload(f.payload, f.payloadSize); err != nil {
			return cfg, err
		}
	} else if cfg.Payload, err = lab.SizedPayload(f.payloadSize); err != nil {
		return cfg, err
	}
	cfg.Name = "idempotency-" + f.idempotency
	if f.spike != "" {
		cfg.Name += "-spike-" + strings.SplitN(f.spike, "@", 2)[0]
	}
	return cfg, cfg.Validate()
}

// startCPUProfile profiles the process until the returned stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// writeHeapProfile writes the allocations so far; a failure is reported,
// not fatal, as the run itself is done.
func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}
	if err != nil {
		fmt.Fprintln(stderr, "hookline lab: memprofile:", err)
	}
}

func runLab(ctx context.Context, out io.Writer, cfg lab.Config, f labFlags) int {
	rep, err := lab.Run(ctx, cfg)
	if err != nil {
		return failed(err)
	}
	if err := f.plan(rep); err != nil {
		return failed(err)
	}
	if f.out != "" {
		if err := lab.WriteReport(f.out, rep); err != nil {
			fmt.Fprintln(stderr, "hookline lab:", err)
			return exitFailure
		}
	}
	if f.asJSON {
		if err := writeJSON(out, rep); err != nil {
			return exitFailure
		}
		return exitOK
	}
	lab.Summary(out, rep)
	return exitOK
}

// failed prints why a lab could not run and returns its exit code: 2 for
// a bad HOOKLINE_LOCAL_AWS_FAULTS, which nothing ran with, else 1.
func failed(err error) int {
	fmt.Fprintln(stderr, "hookline lab:", err)
	if errors.Is(err, localaws.ErrBadFaults) {
		return exitUsage
	}
	return exitFailure
}

// newLabServeCmd serves the live lab page.
func newLabServeCmd() *cobra.Command {
	var (
		addr, idempotency, profile string
		rate, lostAcks             float64
		seed                       uint64
		intakeKeep, idemKeep       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the payment pipeline under load and serve a live page with a copilot",
		Long: `Start the whole local system and offer signed webhooks at --rate, with
--lost-acks of SQS acknowledgements lost and idempotency off, as the design's
lab does. It serves a page on --addr and prints its URL: the pipeline with its
live figures, charts updated every second, the design's capacity estimate
beside the same quantities measured, and a copilot that takes "turn on
idempotency", "what broke?", "traffic spike 3x" and more ("help" lists them),
applied without a restart. It keeps intake records and idempotency keys for
minutes (--intake-retention, --idempotency-retention), and its local
DynamoDB deletes them once expired, so that its memory stays flat however
long it runs. Ctrl-C stops everything.`,
		Example: `  hookline lab serve
  hookline lab serve --addr 127.0.0.1:8090 --rate 200 --lost-acks 0.01`,
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.StringVar(&addr, "addr", "127.0.0.1:8090", "where the page listens; it answers only requests to 127.0.0.1, [::1] or localhost at this port")
	fl.Float64Var(&rate, "rate", 500, "offered webhooks/s at the start, open loop")
	fl.Float64Var(&lostAcks, "lost-acks", 0.002, "share of SQS acknowledgements lost at the start")
	fl.StringVar(&idempotency, "idempotency", "off", "the worker's idempotency registry at the start: on or off")
	fl.StringVar(&profile, "provider-profile", "ignores_keys", "the provider's idempotency profile at the start: honours_keys, replays_successes or ignores_keys")
	fl.Uint64Var(&seed, "seed", 1, "seed of lost acknowledgements")
	fl.DurationVar(&intakeKeep, "intake-retention", lab.LiveIntakeRetention, "how long intake records are kept; the local DynamoDB deletes them once expired")
	fl.DurationVar(&idemKeep, "idempotency-retention", lab.LiveIdempotencyRetention, "how long idempotency keys are kept (at least --intake-retention)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg := lab.LiveConfig{Rate: rate, LostAcks: lostAcks, Seed: seed, IntakeRetention: intakeKeep, IdempotencyRetention: idemKeep}
		if verbose {
			cfg.Logger = logger(true)
		}
		if idempotency != "on" && idempotency != "off" {
			return usageErrorf("--idempotency must be on or off, not %q", idempotency)
		}
		cfg.Idempotency = idempotency == "on"
		var err error
		if cfg.Profile, err = providersim.ParseProfile(profile); err != nil {
			return usageErrorf("%v", err)
		}
		if gogc := defaultLabGOGC(); gogc > 0 {
			debug.SetGCPercent(gogc) // as hookline lab: one process holds everything
		}
		return exit(serveLab(cmd.Context(), cmd.OutOrStdout(), addr, cfg))
	}
	return cmd
}

// serveLab runs the live lab on addr until ctx ends.
func serveLab(ctx context.Context, out io.Writer, addr string, cfg lab.LiveConfig) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(stderr, "hookline lab serve:", err)
		return exitUsage
	}
	live, err := lab.StartLive(ctx, cfg)
	if err != nil {
		ln.Close()
		if errors.Is(err, lab.ErrInvalidConfig) {
			fmt.Fprintln(stderr, "hookline lab serve:", err)
			return exitUsage
		}
		return failed(err)
	}
	defer live.Close()
	// Requests live in ctx, so that Ctrl-C ends the event streams too.
	srv := &http.Server{Handler: live.Handler(), ReadHeaderTimeout: 5 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	fmt.Fprintf(out, "hookline lab: http://%s/ (Ctrl-C stops it)\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-done:
		fmt.Fprintln(stderr, "hookline lab serve:", err)
		return exitFailure
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	srv.Shutdown(shut)
	return exitOK
}

// plan adds the capacity plan at --plan-rate to rep, if asked for.
func (f labFlags) plan(rep *lab.Report) error {
	if f.planRate == 0 {
		return nil
	}
	t, err := stack.Embedded()
	if err != nil {
		return err
	}
	rep.Plan, err = lab.PlanFor(rep, f.planRate, planSettings(t))
	return err
}

// planSettings are the template's settings a capacity plan reads, with
// AWS's default quotas; the lab sends one source.
func planSettings(t *stack.Template) lab.PlanSettings {
	s := lab.PlanSettings{Quotas: lab.DefaultQuotas(), Sources: 1, ShardsPerSource: map[string]float64{}}
	if st, err := t.Raw().GetApiGatewayV2StageWithName("HttpApiStage"); err == nil && st.DefaultRouteSettings != nil {
		if r := st.DefaultRouteSettings.ThrottlingRateLimit; r != nil {
			s.StageRate = *r
		}
		if b := st.DefaultRouteSettings.ThrottlingBurstLimit; b != nil {
			s.StageBurst = float64(*b)
		}
	}
	for _, es := range t.EventSources {
		if es.Function == "PaymentWorkerFunction" {
			s.WorkerBatchSize, s.WorkerMaxConcurrency = float64(es.BatchSize), float64(es.MaxConcurrency)
		}
	}
	for _, tb := range t.Tables {
		if tb.Hash.Name == "source" {
			s.OneKeyPerSource = append(s.OneKeyPerSource, tb.Name)
		}
		for _, idx := range tb.Indexes {
			switch idx.Hash.Name {
			case "source":
				s.OneKeyPerSource = append(s.OneKeyPerSource, tb.Name+"/"+idx.Name)
			case "source_shard":
				s.ShardsPerSource[tb.Name+"/"+idx.Name] = intake.ReceivedShards
			}
		}
	}
	return s
}
