package localrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/hookline/hookline/pkg/webhook/webhooktest"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/registry"
	"github.com/hookline/hookline/internal/app/spendledger"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/dev/lambdalocal"
	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/pkg/webhook"
)

// Config configures [Start].
type Config struct {
	// Addr is where the HTTP API listens (default 127.0.0.1:8080; use
	// 127.0.0.1:0 in tests).
	Addr   string
	Logger *slog.Logger
	// Out receives the human-readable description of what is running.
	Out io.Writer
	// Metrics receives EMF lines (nil discards them).
	Metrics io.Writer
	// Lookup overrides process environment variables (tests).
	Lookup func(string) (string, bool)
	// Sim configures the provider simulator (charges, usage, pager).
	Sim providersim.Config
	// AWSLatency is added to every call the embedded DynamoDB and SQS
	// answer ([localaws.Options.Latency]).
	AWSLatency time.Duration
	// AWSFaults injects seeded faults into the embedded DynamoDB and SQS
	// ([localaws.Options.Faults]).
	AWSFaults localaws.Faults
	// AWSFaultsFromEnv reads AWSFaults from HOOKLINE_LOCAL_AWS_FAULTS when
	// it injects nothing ([localaws.Options.FaultsFromEnv]).
	AWSFaultsFromEnv bool
	// AWSExpireItems makes the embedded DynamoDB delete items once their
	// TTL passes ([localaws.Options.ExpireItems]), for long runs with
	// short INTAKE_RETENTION and IDEMPOTENCY_RETENTION (checked as the
	// template is: intake at most idempotency).
	AWSExpireItems bool
	// PaymentProvider is the payment worker's PAYMENT_PROVIDER: "generic"
	// (the template's default) or "stripe", which charges through the
	// simulator's Stripe face and needs Sim.APIKey.
	PaymentProvider string
	// PaymentMappings is the payment worker's PAYMENT_MAPPINGS (JSON; empty
	// keeps the template's).
	PaymentMappings string
	// MaxConcurrency caps each event source's concurrency locally; the
	// template's MaximumConcurrency is sized for AWS (default 4).
	MaxConcurrency int
	// DropAck, when set, loses the acknowledgement of the SQS records it
	// returns true for (fault drills).
	DropAck func(messageID string) bool
	// NoWorkers leaves the queue consumers and schedules stopped (tests
	// that drive the handlers themselves).
	NoWorkers bool
	// ScheduleEvery fires schedules at this interval instead of the
	// template's rate, and sets POLL_INTERVAL to match (local
	// walk-throughs); 0 keeps the template's.
	ScheduleEvery time.Duration
	// PayPalCertsAddr is where the PayPal certificate double listens
	// (default 127.0.0.1:0, a free port): a paypal source's cert_hosts
	// names it.
	PayPalCertsAddr string
	// Clock, when set, is the run's clock ([Clock]), which a drill moves
	// forward; nil gives the run a clock of its own, at wall time until
	// moved through the control endpoint ([System.ControlURL]). Every
	// function, the simulator (it replaces Sim.Now) and the schedules
	// read it.
	Clock *Clock
	// ControlAddr is where the control endpoint listens (default
	// 127.0.0.1:0, a free port).
	ControlAddr string
}

// PartLabel is the profiler label (runtime/pprof) that the local system's
// own goroutines wear: PartHTTPAPI on the HTTP API's,
// lambdalocal.PartEventSource on the event sources' pollers and
// providersim.PartSimulator on the provider simulator's.
const PartLabel = lambdalocal.PartLabel

// PartHTTPAPI is the [PartLabel] of the local HTTP API's goroutines.
const PartHTTPAPI = "http-api"

// System is a running local system.
type System struct {
	AWS *localaws.Env
	// URL is the base URL of the local HTTP API.
	URL string
	// Sim is the provider simulator the functions talk to.
	Sim *providersim.Sim
	// Mollie is the double of Mollie's API that the payment worker
	// fetches Mollie's objects from.
	Mollie *providersim.MollieAPI
	// PayPal is the double of PayPal's certificate host that the
	// receiver trusts for paypal sources.
	PayPal *webhooktest.PayPalCerts
	// PayPalAPI and GoCardless are the doubles of PayPal's REST API and
	// GoCardless's API that the payment worker fetches captures and
	// payments from.
	PayPalAPI  *providersim.PayPalAPI
	GoCardless *providersim.GoCardlessAPI
	// OpenMeter is the simulator's OpenMeter face, on a port of its own:
	// the reconciler's export with USAGE_EXPORT=openmeter and no
	// OPENMETER_URL, and an openmeter sums source's without base_url.
	OpenMeter *providersim.OpenMeter
	// Mappings are the running SQS event sources, by logical ID.
	Mappings map[string]*lambdalocal.SQSMapping
	// ControlURL is the base URL of the run's control endpoint, which
	// shows and moves its clock (GET and POST /dev/clock).
	ControlURL string

	cfg     Config
	clock   *Clock
	control *http.Server
	runCtx  context.Context
	api     *http.Server
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Start brings the system up. Close stops it.
func Start(ctx context.Context, cfg Config) (*System, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	env, err := localaws.Start(ctx, localaws.Options{
		Logger: cfg.Logger, Latency: cfg.AWSLatency, Faults: cfg.AWSFaults, FaultsFromEnv: cfg.AWSFaultsFromEnv,
		ExpireItems: cfg.AWSExpireItems,
	})
	if err != nil {
		return nil, fmt.Errorf("localrun: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &System{AWS: env, cfg: cfg, cancel: cancel, clock: cfg.Clock}
	if s.clock == nil {
		s.clock = &Clock{}
	}
	if err := s.start(runCtx); err != nil {
		s.Close()
		return nil, err
	}
	if cfg.Out != nil {
		env.Describe(cfg.Out)
		fmt.Fprintf(cfg.Out, "http api  %s\nprovider  %s\nmollie    %s\npaypal    %s (cert_hosts [%q])\npaypal api %s\ngocardless %s\nopenmeter %s\ncontrol   %s\n",
			s.URL, s.Sim.URL(), s.Mollie.URL(), s.PayPal.CertURL(), s.PayPal.Host(), s.PayPalAPI.URL(), s.GoCardless.URL(), s.OpenMeter.URL(),
			s.ControlURL)
	}
	return s, nil
}

// start brings up the simulator, the HTTP API, the workers and schedules.
func (s *System) start(runCtx context.Context) error {
	s.runCtx = runCtx
	steps := []func() error{s.startSim, s.startDoubles, s.checkRetentions, func() error { return s.serveAPI(runCtx) }, s.wireUsageWebhooks,
		s.serveControl}
	if !s.cfg.NoWorkers {
		steps = append(steps, s.StartWorkers, func() error { return s.startSchedules(runCtx) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// deps returns the dependencies of one template function, with its
// environment resolved from the template plus local overrides, and AWS
// clients that call as the function: the local AWS allows them only what
// the template grants it ([localaws.Env.FunctionClients]).
func (s *System) deps(function string) (app.Deps, error) {
	lookup, err := s.functionLookup(function)
	if err != nil {
		return app.Deps{}, err
	}
	ddb, q := s.AWS.FunctionClients(function)
	return app.Deps{
		Clients: app.Clients{DynamoDB: ddb, SQS: q},
		Lookup:  lookup,
		Logger:  s.cfg.Logger.With("function", function),
		Now:     s.now(),
		Metrics: s.cfg.Metrics,
		PayPal:  &app.PayPalTrust{Roots: s.PayPal.Roots, Client: s.PayPal.Client(webhook.DefaultCertTimeout)},
	}, nil
}

func (s *System) serveAPI(ctx context.Context) error {
	var routes []lambdalocal.HTTPRoute
	for _, r := range s.AWS.Template.Routes {
		h, err := s.httpHandler(r.Function)
		if err != nil {
			return err
		}
		fn, _ := s.AWS.Template.Function(r.Function)
		routes = append(routes, lambdalocal.HTTPRoute{
			Method: r.Method, Path: r.Path, Function: r.Function, Handler: h,
			Timeout: time.Duration(fn.Timeout) * time.Second,
		})
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("localrun: listen %s: %w", s.cfg.Addr, err)
	}
	s.URL = "http://" + ln.Addr().String()
	s.api = &http.Server{Handler: lambdalocal.NewHTTPAPI(lambdalocal.HTTPAPIConfig{Routes: routes, Logger: s.cfg.Logger}), ReadHeaderTimeout: 10 * time.Second}
	s.wg.Go(func() {
		// Its connections' goroutines inherit the label, so that a CPU
		// profile tells the local API Gateway's HTTP apart from the
		// functions it invokes (which wear lambdalocal.FunctionLabel).
		pprof.Do(ctx, pprof.Labels(PartLabel, PartHTTPAPI), func(context.Context) {
			if err := s.api.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.cfg.Logger.Error("http api stopped", "err", err)
			}
		})
	})
	return nil
}

// httpHandler builds the handler of a function that an HTTP route targets.
func (s *System) httpHandler(function string) (lambdalocal.HTTPHandler, error) {
	h, err := s.handler(function)
	if err != nil || h.HTTP == nil {
		return nil, cmp.Or(err, fmt.Errorf("localrun: %s does not take HTTP API events", function))
	}
	return h.HTTP, nil
}

// handler builds a template function (by logical ID) through the
// function registry, with its local dependencies.
func (s *System) handler(function string) (app.Handler, error) {
	fn, ok := s.AWS.Template.Function(function)
	if !ok {
		return app.Handler{}, fmt.Errorf("localrun: no function %s in the template", function)
	}
	f, ok := registry.Named(fn.Name)
	if !ok {
		return app.Handler{}, fmt.Errorf("localrun: no local handler for %s", function)
	}
	d, err := s.deps(function)
	if err != nil {
		return app.Handler{}, err
	}
	h, err := f.Build(d)
	if err != nil {
		return app.Handler{}, fmt.Errorf("localrun: %s: %w", function, err)
	}
	return s.held(h), nil
}

// held makes every invocation of h hold the run's clock ([Clock.Hold]),
// so that a move of the clock falls between invocations.
func (s *System) held(h app.Handler) app.Handler {
	switch {
	case h.HTTP != nil:
		next := h.HTTP
		h.HTTP = func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			defer s.clock.Hold()()
			return next(ctx, req)
		}
	case h.SQS != nil:
		next := h.SQS
		h.SQS = func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			defer s.clock.Hold()()
			return next(ctx, ev)
		}
	case h.Schedule != nil:
		next := h.Schedule
		h.Schedule = func(ctx context.Context, ev events.EventBridgeEvent) error {
			defer s.clock.Hold()()
			return next(ctx, ev)
		}
	}
	return h
}

// Ledger builds the spend ledger as the spend worker sees it, for tests and
// tools that inspect or administer workloads. It calls with the harness's
// clients, as an operator would with their own credentials, not the
// spend worker's grants.
func (s *System) Ledger() (spendledger.Ledger, error) {
	d, err := s.deps("SpendWorkerFunction")
	if err != nil {
		return spendledger.Ledger{}, err
	}
	d.Clients = app.Clients{DynamoDB: s.AWS.DynamoDB, SQS: s.AWS.SQS}
	cfg, err := config.SpendFromEnv(d.Lookup)
	if err != nil {
		return spendledger.Ledger{}, err
	}
	return spendledger.New(d, cfg)
}

// now is the run's clock, which every function reads.
func (s *System) now() func() time.Time { return s.clock.Now }

// Clock is the run's clock: Config.Clock, or the run's own.
func (s *System) Clock() *Clock { return s.clock }

// Close stops everything Start started.
func (s *System) Close() error {
	s.cancel()
	var errs []error
	if s.api != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		errs = append(errs, s.api.Shutdown(ctx))
		cancel()
	}
	if s.control != nil {
		errs = append(errs, s.control.Close())
	}
	s.wg.Wait()
	if s.Sim != nil {
		errs = append(errs, s.Sim.Close())
	}
	if s.Mollie != nil {
		errs = append(errs, s.Mollie.Close())
	}
	if s.PayPal != nil {
		errs = append(errs, s.PayPal.Close())
	}
	if s.PayPalAPI != nil {
		errs = append(errs, s.PayPalAPI.Close())
	}
	if s.GoCardless != nil {
		errs = append(errs, s.GoCardless.Close())
	}
	if s.OpenMeter != nil {
		errs = append(errs, s.OpenMeter.Close())
	}
	errs = append(errs, s.AWS.Close())
	return errors.Join(errs...)
}
