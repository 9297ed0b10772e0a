package stripeusage

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/paced"
	"github.com/hookline/hookline/internal/sums"
)

// Defaults applied by [New] to zero fields of a [Config].
const (
	DefaultBaseURL     = "https://api.stripe.com"
	DefaultRate        = 25
	DefaultBurst       = paced.DefaultBurst
	DefaultMaxAttempts = 6
	DefaultBackoffBase = paced.DefaultBackoffBase
	DefaultBackoffMax  = paced.DefaultBackoffMax
	// DefaultTimeout bounds one call when Config.HTTPClient is nil.
	DefaultTimeout = 30 * time.Second
)

// MaxRetryAfter caps the wait a Retry-After header may ask for, so a
// wrong header cannot park a reader; the call's context may cut it
// shorter. A larger header waits this long ([paced.RetryAfter]).
const MaxRetryAfter = paced.MaxRetryAfter

// Config configures a [Reader].
type Config struct {
	// BaseURL is Stripe's API (default [DefaultBaseURL]); tests point it
	// at stripe-mock or a fake.
	BaseURL string
	// Key is the secret (or restricted, read-only) key. It is sent in the
	// Authorization header only, never logged, never in an error.
	Key string
	// HTTPClient sends the calls (default: a client with
	// [DefaultTimeout]).
	HTTPClient *http.Client
	// Rate is the calls per second each endpoint is paced to (default
	// [DefaultRate], the general limit Stripe documents for
	// test mode). +Inf does not pace.
	Rate float64
	// Burst is how many calls an endpoint may make at once before the pace
	// applies (default [DefaultBurst]: calls are evenly spaced).
	Burst int
	// MaxAttempts bounds the calls made for one page, the first included
	// (default [DefaultMaxAttempts]).
	MaxAttempts int
	// BackoffBase is the ceiling of the first retry's wait; it doubles for
	// each further retry up to BackoffMax. The wait is drawn uniformly
	// below the ceiling (full jitter).
	BackoffBase, BackoffMax time.Duration
	// Sleep waits d or until ctx is done (default: a timer). Tests record
	// the waits through it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives retries and calls (default: discarded).
	Logger *slog.Logger
	// Paced, when set, is the paced client the calls go through, shared
	// with the other readers of the same account, so that a wait the
	// provider names to one holds them all (package paced). Its pace,
	// retries and clock are its own: HTTPClient, Rate, Burst, MaxAttempts, BackoffBase, BackoffMax, Sleep and Logger are then unused.
	Paced *paced.Client
}

// Validate reports every problem of c at once, each a [*FieldError]
// wrapping [ErrBadConfig]. Zero fields are valid: [New] gives them their
// defaults.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, problem string) { errs = append(errs, configError(field, problem)) }
	if c.Key == "" {
		bad("Key", "a Stripe secret key is required")
	} else if strings.ContainsFunc(c.Key, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		bad("Key", "contains a space or control character")
	}
	if c.BaseURL != "" {
		if _, err := parseBaseURL(c.BaseURL); err != nil {
			bad("BaseURL", err.Error())
		}
	}
	if c.Rate < 0 || math.IsNaN(c.Rate) {
		bad("Rate", "must not be negative")
	}
	if c.Burst < 0 || c.MaxAttempts < 0 || c.BackoffBase < 0 || c.BackoffMax < 0 {
		bad("Burst, MaxAttempts, BackoffBase, BackoffMax", "must not be negative")
	}
	if c.BackoffBase > 0 && c.BackoffMax > 0 && c.BackoffBase > c.BackoffMax {
		bad("BackoffBase", "exceeds BackoffMax")
	}
	return errors.Join(errs...)
}

func parseBaseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, errors.New("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("scheme must be http or https")
	case u.Host == "":
		return nil, errors.New("has no host")
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return nil, errors.New("must have no user, query or fragment")
	}
	return u, nil
}

func (c Config) withDefaults() Config {
	c.BaseURL = cmp.Or(c.BaseURL, DefaultBaseURL)
	c.Rate = cmp.Or(c.Rate, DefaultRate)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, DefaultMaxAttempts)
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: DefaultTimeout}
	}
	return c
}

// Reader reads Stripe's meter event summaries. It is safe for concurrent
// use. Its pace and holds are its paced client's: readers of one Stripe
// account given one client ([Config.Paced]) share one pace, and a
// Retry-After Stripe names to one holds them all.
type Reader struct {
	cfg  Config
	base *url.URL
	call *paced.Client

	// now and jitter are seams for tests (export_test.go).
	now    func() time.Time
	jitter func(ceiling time.Duration) time.Duration
}

var _ sums.Reader = (*Reader)(nil)

// New checks cfg ([Config.Validate]) and returns a Reader with its
// defaults applied.
func New(cfg Config) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	base, err := parseBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, configError("BaseURL", err.Error())
	}
	r := &Reader{cfg: cfg, base: base, now: time.Now, jitter: paced.FullJitter, call: cfg.Paced}
	if r.call == nil {
		r.call, err = paced.New(paced.Config{Name: "stripe", Rate: cfg.Rate, Burst: cfg.Burst, MaxAttempts: cfg.MaxAttempts,
			BackoffBase: cfg.BackoffBase, BackoffMax: cfg.BackoffMax, MaxRetryAfter: MaxRetryAfter, MaxBody: maxBody,
			Jitter: func(c time.Duration) time.Duration { return r.jitter(c) }, Now: func() time.Time { return r.now() },
			HTTP: cfg.HTTPClient, Sleep: cfg.Sleep, Secret: cfg.Key, Logger: cfg.Logger})
		if err != nil {
			return nil, configError("Rate, Burst, MaxAttempts, BackoffBase, BackoffMax", err.Error())
		}
	}
	ps := r.call.Settings() // the pace's defaults: Burst, backoff, Sleep, Logger
	r.cfg.Burst, r.cfg.BackoffBase, r.cfg.BackoffMax = ps.Burst, ps.BackoffBase, ps.BackoffMax
	r.cfg.Sleep, r.cfg.Logger = ps.Sleep, ps.Logger
	return r, nil
}

// Stats are a [Reader]'s counters since [New].
type Stats struct {
	// Calls is every HTTP request sent, retries included.
	Calls int64
	// RateLimited is every 429 answer.
	RateLimited int64
	// Retries is every call repeated after a 429, a 5xx or a network
	// failure.
	Retries int64
}

// Stats returns the counters.
func (r *Reader) Stats() Stats { return Stats(r.call.Stats()) }

// Paced is the paced client the reader calls through, for another reader
// of the same account to share ([Config.Paced]).
func (r *Reader) Paced() *paced.Client { return r.call }

// redact removes the key from text that came from elsewhere (an answer's
// body, a transport's error), in case it echoes the Authorization header.
func (r *Reader) redact(text string) string {
	return strings.ReplaceAll(text, r.cfg.Key, "[redacted]")
}
