package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults applied by [New] and [NewPager] to zero fields.
const (
	DefaultTimeout     = 5 * time.Second
	DefaultMaxAttempts = 4
	DefaultBaseBackoff = 100 * time.Millisecond
	DefaultMaxBackoff  = 5 * time.Second
)

// maxResponseBytes caps how much of a response body is read.
const maxResponseBytes = 1 << 20

// Config configures a [Client].
type Config struct {
	// BaseURL is the provider's API root, for example https://api.example.com.
	BaseURL string
	// APIKey is sent as a bearer token. It is never logged.
	APIKey string
	// Timeout bounds one attempt, including reading the body. Default 5s.
	Timeout time.Duration
	// MaxAttempts bounds the attempts of one call. Default 4.
	MaxAttempts int
	// BaseBackoff is the first retry wait before jitter. Default 100ms.
	BaseBackoff time.Duration
	// MaxBackoff caps any single wait, including one asked for by
	// Retry-After. A longer Retry-After ends the call with [Retriable] and
	// the wait in [Result.RetryAfter]. Default 5s.
	MaxBackoff time.Duration
	// UsagePageLimit is the limit sent with each usage export page; 0 lets
	// the provider choose.
	UsagePageLimit int
	// HTTPClient sends the requests. Default: a client with a pooled
	// transport sized for concurrent workers.
	HTTPClient *http.Client
	// Logger receives debug lines about retries. Default: discard.
	Logger *slog.Logger
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.BaseURL == "" {
		errs = append(errs, errors.New("BaseURL is empty"))
	} else if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("BaseURL %q is not an http(s) URL", c.BaseURL))
	}
	errs = append(errs, validatePolicy(c.Timeout, c.MaxAttempts, c.BaseBackoff, c.MaxBackoff)...)
	if c.UsagePageLimit < 0 {
		errs = append(errs, errors.New("UsagePageLimit is negative"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

func validatePolicy(timeout time.Duration, attempts int, base, maxWait time.Duration) []error {
	var errs []error
	if timeout < 0 {
		errs = append(errs, errors.New("Timeout is negative"))
	}
	if attempts < 0 {
		errs = append(errs, errors.New("MaxAttempts is negative"))
	}
	if base < 0 || maxWait < 0 {
		errs = append(errs, errors.New("backoff is negative"))
	}
	if base > 0 && maxWait > 0 && base > maxWait {
		errs = append(errs, errors.New("BaseBackoff is larger than MaxBackoff"))
	}
	return errs
}

// Client calls the provider's charge and usage APIs. It is safe for
// concurrent use.
type Client struct {
	baseURL string
	apiKey  string
	limit   int
	http    *http.Client
	policy  retryPolicy
	log     *slog.Logger
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Client{
		baseURL: strings.TrimRight(cfg.BaseURL, "/"),
		apiKey:  cfg.APIKey,
		limit:   cfg.UsagePageLimit,
		http:    httpClientOrDefault(cfg.HTTPClient),
		policy:  newPolicy(cfg.Timeout, cfg.MaxAttempts, cfg.BaseBackoff, cfg.MaxBackoff),
		log:     loggerOrDiscard(cfg.Logger),
	}, nil
}

// httpClientOrDefault returns a copy of c, or a pooled default, that never
// follows redirects: net/http would turn a redirected POST into a GET, and a
// redirect is not a charge.
func httpClientOrDefault(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	} else {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 256
		t.MaxIdleConnsPerHost = 128
		out.Transport = t
	}
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &out
}

func loggerOrDiscard(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// response is one HTTP exchange that produced a status line.
type response struct {
	status int
	header http.Header
	body   []byte
}

// request describes one HTTP call.
type request struct {
	method string
	url    string
	body   []byte
	header http.Header
}

// send performs one attempt bounded by timeout. A non-nil error means no
// complete response was received.
func send(ctx context.Context, hc *http.Client, timeout time.Duration, r request) (response, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		return response{}, fmt.Errorf("%w: build request: %w", ErrInvalidRequest, err)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	// Without GetBody, net/http will not replay a request that carries an
	// Idempotency-Key on its own after a dropped connection. Every replay
	// must be a decision of this package.
	req.GetBody = nil
	resp, err := hc.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return response{}, fmt.Errorf("read body: %w", err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// notSent reports whether err proves the request never reached the server:
// the connection could not be opened, or the request could not be built.
func notSent(err error) bool {
	if errors.Is(err, ErrInvalidRequest) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// notExecuted reports whether status proves the provider did not execute
// the request and asks for it again later: 429 only. A rate limiter answers
// before the request reaches the charge logic.
func notExecuted(status int) bool {
	return status == http.StatusTooManyRequests
}

// ambiguous reports whether status leaves the effect of a request unknown:
// 408 (the server gave up on a request it may have started), 409 (another
// request with the key is in flight and may commit) and every 5xx (a proxy
// can answer 502 or 504 after the backend committed).
func ambiguous(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500
}

// retryableRead reports whether a read (a lookup, an export page) that got
// status may simply be sent again: it has no effect to repeat.
func retryableRead(status int) bool { return notExecuted(status) || ambiguous(status) }

// retryAfter parses a Retry-After header: delay seconds or an HTTP date.
// It returns 0 for a missing or malformed value.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := parseSeconds(v); err == nil {
		return secs
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	if d := t.Sub(now); d > 0 {
		return d
	}
	return 0
}

// maxRetryAfterSeconds clamps absurd Retry-After values (about 12 days).
const maxRetryAfterSeconds = 1 << 20

func parseSeconds(v string) (time.Duration, error) {
	n := 0
	if v == "" {
		return 0, errors.New("empty")
	}
	for _, r := range v {
		if r < '0' || r > '9' {
			return 0, errors.New("not a number")
		}
		n = min(n*10+int(r-'0'), maxRetryAfterSeconds)
	}
	return time.Duration(n) * time.Second, nil
}
