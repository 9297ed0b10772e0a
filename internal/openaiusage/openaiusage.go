package openaiusage

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

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"golang.org/x/time/rate"

	"github.com/hookline/hookline/internal/paced"
	"github.com/hookline/hookline/internal/sums"
)

// Defaults applied by [New] to zero fields of a [Config]. OpenAI
// documents no rate limit for the admin usage endpoints, so the reader
// asks little of them.
const (
	DefaultBaseURL     = "https://api.openai.com"
	DefaultRate        = 5 // calls a second, per endpoint
	DefaultMaxAttempts = 6
	DefaultMaxBackoff  = 20 * time.Second
	DefaultTimeout     = 30 * time.Second
)

// MaxRetryAfter caps the wait OpenAI's retry-after-ms or Retry-After may
// ask for; a larger value, however large, waits this long
// ([paced.RetryAfter]). The call's context may cut it shorter.
const MaxRetryAfter = paced.MaxRetryAfter

// Config configures a [Reader]; [New] fills its zero fields with the
// defaults above.
type Config struct {
	// BaseURL and Key address OpenAI: BaseURL its API (the simulator's
	// OpenAI face in local runs and tests), Key the organisation's admin
	// key (sk-admin-...), sent in each call's Authorization header and
	// nowhere else.
	BaseURL, Key string
	// Rate and Burst shape one token bucket per endpoint: Rate calls a
	// second (rate.Inf: unpaced), Burst of them at once (default 1).
	Rate  rate.Limit
	Burst int
	// HTTPClient makes the calls; its default times out after
	// DefaultTimeout.
	HTTPClient *http.Client
	// MaxAttempts is how many calls one page may take, retries included.
	MaxAttempts int
	// Backoff picks the wait before a retry that OpenAI named no wait
	// for; the default is the AWS SDK's exponential full jitter up to
	// DefaultMaxBackoff.
	Backoff retry.BackoffDelayer
	// Sleep waits (tests record the waits instead); default a timer that
	// gives up with ctx.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger gets a line per retry, and per call at debug level.
	Logger *slog.Logger
	// Paced, when set, is the paced client the calls go through, shared
	// with the other readers of the same organization, so that a wait
	// OpenAI names to one holds them all (package paced). Its pace,
	// retries and clock are its own: HTTPClient, Rate, Burst,
	// MaxAttempts, Backoff and Sleep are then unused.
	Paced *paced.Client
}

// Validate reports every problem of c at once, each a [*ConfigError].
// Zero fields are valid: [New] gives them their defaults.
func (c Config) Validate() error {
	var errs []error
	if c.Key == "" {
		errs = append(errs, &ConfigError{Field: "Key", Problem: "an OpenAI admin key is required"})
	} else if strings.ContainsFunc(c.Key, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		errs = append(errs, &ConfigError{Field: "Key", Problem: "contains a space or control character"})
	}
	if _, err := baseURL(c.BaseURL); err != nil {
		errs = append(errs, err)
	}
	if c.Rate < 0 || math.IsNaN(float64(c.Rate)) {
		errs = append(errs, &ConfigError{Field: "Rate", Problem: "must not be negative"})
	}
	if c.Burst < 0 || c.MaxAttempts < 0 {
		errs = append(errs, &ConfigError{Field: "Burst, MaxAttempts", Problem: "must not be negative"})
	}
	return errors.Join(errs...)
}

// baseURL parses s, or the default when s is empty.
func baseURL(s string) (*url.URL, error) {
	u, err := url.Parse(cmp.Or(s, DefaultBaseURL))
	problem := ""
	switch {
	case err != nil:
		problem = "not a URL"
	case u.Scheme != "http" && u.Scheme != "https":
		problem = "scheme must be http or https"
	case u.Host == "":
		problem = "has no host"
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		problem = "must have no user, query or fragment"
	}
	if problem != "" {
		return nil, &ConfigError{Field: "BaseURL", Problem: problem}
	}
	return u, nil
}

// Reader reads OpenAI's organization usage and costs. It is safe for
// concurrent use.
type Reader struct {
	cfg  Config
	base *url.URL
	call *paced.Client
}

var _ sums.Reader = (*Reader)(nil)

// New checks cfg ([Config.Validate]) and returns a Reader with its
// defaults applied.
func New(cfg Config) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base, _ := baseURL(cfg.BaseURL) // checked by Validate
	cfg.Rate = cmp.Or(cfg.Rate, DefaultRate)
	cfg.Burst = cmp.Or(cfg.Burst, 1)
	cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, DefaultMaxAttempts)
	if cfg.Backoff == nil {
		cfg.Backoff = retry.NewExponentialJitterBackoff(DefaultMaxBackoff)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: DefaultTimeout}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Paced != nil {
		return &Reader{cfg: cfg, base: base, call: cfg.Paced}, nil
	}
	call, err := paced.New(paced.Config{Name: "openai", Rate: float64(cfg.Rate), Burst: cfg.Burst,
		MaxAttempts: cfg.MaxAttempts, Backoff: cfg.Backoff, MaxRetryAfter: MaxRetryAfter, MaxBody: maxBody,
		HTTP: cfg.HTTPClient, Sleep: cfg.Sleep, Secret: cfg.Key, Logger: cfg.Logger})
	if err != nil {
		return nil, &ConfigError{Field: "Rate, Burst, MaxAttempts", Problem: err.Error()}
	}
	return &Reader{cfg: cfg, base: base, call: call}, nil
}

// Stats counts a [Reader]'s work since [New]: HTTP requests sent
// (retries included), 429 answers, and requests repeated after a 429, a
// 5xx or a lost connection.
type Stats struct{ Calls, RateLimited, Retries int64 }

// Stats returns the counts so far.
func (r *Reader) Stats() Stats { return Stats(r.call.Stats()) }

// Paced is the paced client the reader calls through, for another reader
// of the same organization to share ([Config.Paced]).
func (r *Reader) Paced() *paced.Client { return r.call }

// redact removes the key from text that came from elsewhere.
func (r *Reader) redact(text string) string {
	return strings.ReplaceAll(text, r.cfg.Key, "[redacted]")
}
