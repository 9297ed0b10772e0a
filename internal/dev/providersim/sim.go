package providersim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookline/hookline/internal/pager"
)

// Errors returned by this package.
var (
	// ErrInvalidConfig reports a [Config] or [SenderConfig] that cannot work.
	ErrInvalidConfig = errors.New("providersim: invalid config")
	// ErrStarted reports a second [Sim.Start] or [Sim.ListenAndServe].
	ErrStarted = errors.New("providersim: already started")
	// ErrInvalidUsage reports a usage record that cannot be added.
	ErrInvalidUsage = errors.New("providersim: invalid usage record")
)

// Page size limits of the usage export.
const (
	DefaultUsagePageSize = 100
	MaxUsagePageSize     = 1000
)

// maxRequestBytes caps request bodies.
const maxRequestBytes = 64 << 10

// Config configures a [Sim].
type Config struct {
	// Profile is how keys are treated. The zero value ignores them.
	Profile Profile
	// HonourIdempotencyKeys is a shorthand for Profile: ProfileHonoursKeys.
	HonourIdempotencyKeys bool
	// LookupLag is how long after a commit the lookup by key starts to find
	// the charge: the provider's read lag.
	LookupLag time.Duration
	// NormaliseCurrency makes charges carry the currency in lower case,
	// whatever case the request used (Stripe does).
	NormaliseCurrency bool
	// DeclineErrorBody answers every decline with a Stripe-style error
	// object instead of the charge.
	DeclineErrorBody bool
	// APIKey, when set, must arrive as "Authorization: Bearer <APIKey>" on
	// the charge and usage APIs; otherwise the answer is 401.
	APIKey string
	// Latency delays every charge request; LatencyJitter adds a uniform
	// random extra in [0, LatencyJitter).
	Latency, LatencyJitter time.Duration
	// Seed seeds the random source used for jitter, fault rates and drop
	// rates, so runs repeat. 0 is a valid seed.
	Seed uint64
	// Now is the simulator's clock: of usage publication, of a charge's
	// time and of the lookup lag after it. Default time.Now. See
	// [ManualClock].
	Now func() time.Time
	// UsagePageSize is the export page size when a request has no limit.
	// Default 100; a request's limit is capped at 1000.
	UsagePageSize int
	// UsageDropRate is the probability in [0, 1] that a record added with
	// [WebhookDefault] has its webhook dropped.
	UsageDropRate float64
	// OnPage, if set, is called with each accepted pager event.
	OnPage func(pager.Event)
	// Logger, if set, receives one line per charge. Default: discard.
	Logger *slog.Logger
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Latency < 0 || c.LatencyJitter < 0 || c.LookupLag < 0 {
		errs = append(errs, errors.New("latency or lookup lag is negative"))
	}
	if c.UsagePageSize < 0 || c.UsagePageSize > MaxUsagePageSize {
		errs = append(errs, fmt.Errorf("UsagePageSize must lie in [0, %d]", MaxUsagePageSize))
	}
	if c.UsageDropRate < 0 || c.UsageDropRate > 1 {
		errs = append(errs, errors.New("UsageDropRate must lie in [0, 1]"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// Sim is the simulated provider: its server and settings here, what it
// does in its parts. All methods are safe for concurrent use.
type Sim struct {
	core *core
	// Charges reads the charges made; Faults programs failures of charge
	// requests; Usage holds the usage records, their export and webhooks;
	// Pager is the PagerDuty sink.
	Charges *Charges
	Faults  *Faults
	Usage   *UsageFeed
	Pager   *PagerSink
}

// core is the simulator's state, which every part shares.
type core struct {
	apiKey   string
	now      func() time.Time
	log      *slog.Logger
	onPage   func(pager.Event)
	pageSize int
	// declineErrorBody answers declines with an error object.
	declineErrorBody bool
	dropRate         float64
	profile          atomic.Int32
	lookupLag        atomic.Int64 // nanoseconds
	normalise        atomic.Bool
	pending          sync.WaitGroup // commits that land after their request ended
	latency          atomic.Int64   // nanoseconds
	jitter           atomic.Int64   // nanoseconds
	inFlight         atomic.Int64
	creates          atomic.Int64
	done             chan struct{}
	doneOnce         sync.Once

	rngMu sync.Mutex
	rng   *rand.Rand

	charges chargeBook
	faults  faultPlan
	usage   usageBook
	pager   pagerSink
	meters  meterBook
	// openaiFace is OpenAI's organization usage face.
	openaiFace openaiBook

	srvMu sync.Mutex
	srv   *http.Server
	url   string

	webhooks atomic.Pointer[Sender] // usage webhooks sent by POST /sim/usage
}

// New returns a simulator for cfg. It serves nothing until [Sim.Start] or
// [Sim.ListenAndServe], or until its [Sim.Handler] is mounted.
func New(cfg Config) (*Sim, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &core{
		apiKey:   cfg.APIKey,
		now:      cfg.Now,
		log:      cfg.Logger,
		onPage:   cfg.OnPage,
		pageSize: cfg.UsagePageSize,
		dropRate: cfg.UsageDropRate,
		done:     make(chan struct{}),
		rng:      rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.pageSize == 0 {
		s.pageSize = DefaultUsagePageSize
	}
	if cfg.HonourIdempotencyKeys && cfg.Profile == ProfileIgnoresKeys {
		cfg.Profile = ProfileHonoursKeys
	}
	s.SetProfile(cfg.Profile)
	s.SetLookupLag(cfg.LookupLag)
	s.normalise.Store(cfg.NormaliseCurrency)
	s.declineErrorBody = cfg.DeclineErrorBody
	s.SetLatency(cfg.Latency, cfg.LatencyJitter)
	s.charges.init()
	s.usage.init()
	s.meters.init(cfg.Seed, cfg.APIKey)
	s.openaiFace.init(cfg.Seed)
	return &Sim{core: s, Charges: &Charges{s}, Faults: &Faults{s}, Usage: &UsageFeed{s}, Pager: &PagerSink{s}}, nil
}

// Handler returns the simulator's routes.
func (s *core) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/charges", s.handleCreateCharge)
	mux.HandleFunc("GET /v1/charges", s.handleLookupCharge)
	mux.HandleFunc("POST /v1/payment_intents", s.handleCreateIntent)
	mux.HandleFunc("GET /v1/payment_intents/search", s.handleSearchIntents)
	mux.HandleFunc("GET /v1/customers/{id}", s.handleCustomer)
	mux.HandleFunc("GET /v1/usage", s.handleUsage)
	mux.HandleFunc("POST /v2/enqueue", s.handleEnqueue)
	mux.HandleFunc("POST /sim/usage", s.handleAddUsage)
	s.meterRoutes(mux)
	s.openaiRoutes(mux)
	return mux
}

// PartLabel and PartSimulator are the profiler label (runtime/pprof) that
// the simulator's server goroutines wear, so that a CPU profile tells the
// provider's side apart from its callers'.
const PartLabel, PartSimulator = "part", "provider-simulator"

// serve serves ln on srv, its goroutines labelled as the simulator's.
func serve(srv *http.Server, ln net.Listener) error {
	var err error
	pprof.Do(context.Background(), pprof.Labels(PartLabel, PartSimulator), func(context.Context) { err = srv.Serve(ln) })
	return err
}

// Start serves on a free port of 127.0.0.1 in the background. Stop it with
// [Sim.Close].
func (s *core) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("providersim: listen: %w", err)
	}
	srv, err := s.register(ln)
	if err != nil {
		ln.Close()
		return err
	}
	go serve(srv, ln)
	return nil
}

// ListenAndServe serves on addr until ctx is done, then shuts down
// gracefully within five seconds.
func (s *core) ListenAndServe(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("providersim: listen %s: %w", addr, err)
	}
	srv, err := s.register(ln)
	if err != nil {
		ln.Close()
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- serve(srv, ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("providersim: serve: %w", err)
	case <-ctx.Done():
	}
	s.stop()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("providersim: shutdown: %w", err)
	}
	return nil
}

func (s *core) register(ln net.Listener) (*http.Server, error) {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.srv != nil {
		return nil, ErrStarted
	}
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.url = "http://" + ln.Addr().String()
	return s.srv, nil
}

// URL returns the base URL once started, for example http://127.0.0.1:43123.
func (s *core) URL() string {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	return s.url
}

// Close stops the server and ends every held request at once.
func (s *core) Close() error {
	s.stop()
	s.srvMu.Lock()
	srv := s.srv
	s.srvMu.Unlock()
	if srv == nil {
		return nil
	}
	if err := srv.Close(); err != nil {
		return fmt.Errorf("providersim: close: %w", err)
	}
	return nil
}

func (s *core) stop() { s.doneOnce.Do(func() { close(s.done) }) }

// SetHonourIdempotencyKeys switches between [ProfileHonoursKeys] and
// [ProfileIgnoresKeys] at run time.
func (s *core) SetHonourIdempotencyKeys(on bool) {
	if on {
		s.SetProfile(ProfileHonoursKeys)
	} else {
		s.SetProfile(ProfileIgnoresKeys)
	}
}

// SetProfile sets how keys are treated from now on.
func (s *core) SetProfile(p Profile) { s.profile.Store(int32(p)) }

// Profile returns how keys are treated.
func (s *core) Profile() Profile { return Profile(s.profile.Load()) }

// SetLookupLag sets how long after a commit the lookup starts to find it.
func (s *core) SetLookupLag(d time.Duration) { s.lookupLag.Store(int64(max(d, 0))) }

// SetNormaliseCurrency switches lower-casing of the currency in charges.
func (s *core) SetNormaliseCurrency(on bool) { s.normalise.Store(on) }

// WaitCommits waits until every commit that lands after its request ended
// (slow commits, in-flight keys) has landed.
func (s *core) WaitCommits() { s.pending.Wait() }

// SetLatency sets the delay of every charge request from now on.
func (s *core) SetLatency(latency, jitter time.Duration) {
	s.latency.Store(int64(latency))
	s.jitter.Store(int64(jitter))
}

// float returns a random number in [0, 1).
func (s *core) float() float64 {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Float64()
}

// hold pauses for d, or until the client hangs up or the simulator stops.
// It reports whether the full pause elapsed.
func (s *core) hold(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

// sleep pauses for d or until the simulator stops, whatever the client
// does.
func (s *core) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.done:
	}
}

// delay applies the configured latency.
func (s *core) delay(ctx context.Context) bool {
	d := time.Duration(s.latency.Load())
	if j := s.jitter.Load(); j > 0 {
		s.rngMu.Lock()
		d += time.Duration(s.rng.Int64N(j))
		s.rngMu.Unlock()
	}
	return s.hold(ctx, d)
}

// authorized checks the bearer token when an API key is configured.
func (s *core) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.apiKey == "" || r.Header.Get("Authorization") == "Bearer "+s.apiKey {
		return true
	}
	writeError(w, http.StatusUnauthorized, "authentication_error", "", "invalid API key")
	return false
}

type apiError struct {
	Type    string `json:"type"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeJSON(w, status, apiErrorBody(typ, code, msg))
}

func apiErrorBody(typ, code, msg string) any {
	return struct {
		Error apiError `json:"error"`
	}{apiError{Type: typ, Code: code, Message: msg}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
