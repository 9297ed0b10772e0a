package paced

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Defaults applied by [New] to zero fields of a [Config].
const (
	DefaultBurst       = 1
	DefaultMaxAttempts = 4
	DefaultBackoffBase = 500 * time.Millisecond
	DefaultBackoffMax  = 20 * time.Second
	DefaultMaxBody     = 8 << 20
	// MaxRetryAfter is the default cap on a wait a provider names: a wrong
	// header cannot park a reader for longer; the call's context may cut
	// it shorter.
	MaxRetryAfter = 5 * time.Minute
)

// Backoff picks the wait before retry number attempt (1 for the first)
// of a call that failed with err; the AWS SDK's retry.BackoffDelayer is
// one.
type Backoff interface {
	BackoffDelay(attempt int, err error) (time.Duration, error)
}

// Config configures a [Client].
type Config struct {
	// Name names the provider in log lines ("stripe", "openai", ...).
	Name string
	// Rate is the calls a second each endpoint is paced to; 0 or +Inf
	// does not pace. Burst is how many calls an endpoint may make at once
	// (default [DefaultBurst]).
	Rate  float64
	Burst int
	// MaxAttempts bounds the calls of one [Client.Get], the first
	// included (default [DefaultMaxAttempts]).
	MaxAttempts int
	// BackoffBase is the ceiling of the first retry's jittered wait; it
	// doubles per retry up to BackoffMax (defaults [DefaultBackoffBase],
	// [DefaultBackoffMax]). Backoff, when set, picks the wait instead.
	BackoffBase, BackoffMax time.Duration
	Backoff                 Backoff
	// Jitter draws a wait in [0, ceiling] (default [FullJitter]; tests use
	// [SeededJitter] or a fixed draw).
	Jitter func(ceiling time.Duration) time.Duration
	// MaxRetryAfter caps a wait the provider names (default
	// [MaxRetryAfter]).
	MaxRetryAfter time.Duration
	// Timeout bounds each attempt (0: only the HTTP client's own).
	Timeout time.Duration
	// MaxBody bounds an answer's body (default [DefaultMaxBody]).
	MaxBody int64
	// HTTP sends the calls (default: a new http.Client).
	HTTP *http.Client
	// Now is the pace's clock and the reference of a Retry-After date
	// (default time.Now). Sleep waits d or until ctx is done (default: a
	// timer): every wait of the client goes through it.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Secret is cleared from the transport's error text.
	Secret string
	// Logger receives a line per retry, and per call at debug level
	// (default: discarded).
	Logger *slog.Logger
}

// Validate reports every problem of c at once; zero fields are valid.
func (c Config) Validate() error {
	var errs []error
	if c.Rate < 0 || math.IsNaN(c.Rate) {
		errs = append(errs, errors.New("Rate must not be negative"))
	}
	if c.Burst < 0 || c.MaxAttempts < 0 || c.BackoffBase < 0 || c.BackoffMax < 0 ||
		c.MaxRetryAfter < 0 || c.Timeout < 0 || c.MaxBody < 0 {
		errs = append(errs, errors.New("Burst, MaxAttempts, BackoffBase, BackoffMax, MaxRetryAfter, Timeout and MaxBody must not be negative"))
	}
	if c.BackoffBase > 0 && c.BackoffMax > 0 && c.BackoffBase > c.BackoffMax {
		errs = append(errs, errors.New("BackoffBase exceeds BackoffMax"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrBadConfig, errors.Join(errs...))
	}
	return nil
}

func (c Config) withDefaults() Config {
	c.Burst = cmp.Or(c.Burst, DefaultBurst)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, DefaultMaxAttempts)
	c.BackoffBase = cmp.Or(c.BackoffBase, DefaultBackoffBase)
	c.BackoffMax = cmp.Or(c.BackoffMax, max(DefaultBackoffMax, c.BackoffBase))
	c.MaxRetryAfter = cmp.Or(c.MaxRetryAfter, MaxRetryAfter)
	c.MaxBody = cmp.Or(c.MaxBody, DefaultMaxBody)
	if c.Jitter == nil {
		c.Jitter = FullJitter
	}
	if c.HTTP == nil {
		c.HTTP = &http.Client{}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Sleep == nil {
		c.Sleep = Sleep
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Client makes paced, retried GET calls to one provider. It is safe for
// concurrent use.
type Client struct {
	cfg Config

	mu       sync.Mutex
	limiters map[string]*rate.Limiter
	// hold is the instant before which no call goes to the provider, set
	// by the last wait it named, and held the error of the answer that
	// named it ([ErrRateLimited] or [ErrUnavailable]).
	hold   time.Time
	heldBy error

	calls, rateLimited, retries atomic.Int64
}

// New checks cfg ([Config.Validate]) and returns a Client with its
// defaults applied.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Client{cfg: cfg.withDefaults(), limiters: map[string]*rate.Limiter{}}, nil
}

// Settings is the client's configuration with its defaults applied.
func (c *Client) Settings() Config { return c.cfg }

// Stats are a [Client]'s counters since [New].
type Stats struct {
	// Calls is every request sent, retries included; RateLimited every
	// 429; Retries every call repeated after a 429, a 5xx or no answer.
	Calls, RateLimited, Retries int64
}

// Stats returns the counters.
func (c *Client) Stats() Stats {
	return Stats{Calls: c.calls.Load(), RateLimited: c.rateLimited.Load(), Retries: c.retries.Load()}
}

// Response is an answer [Client.Get] hands back: any status but a 429 or
// a 5xx, with its body (at most [Config.MaxBody] bytes), and the calls it
// took.
type Response struct {
	Status   int
	Header   http.Header
	Body     []byte
	Attempts int
}

// failed is an attempt worth repeating, with the wait the provider
// named, if it named one.
type failed struct {
	err      error
	last     *Response
	after    time.Duration
	hasAfter bool
	// until is the hold the named wait set.
	until time.Time
}

// Get calls GET url with header, paced on endpoint's token bucket, until
// an answer other than a 429 or a 5xx comes, or [Config.MaxAttempts]
// calls have failed ([*GaveUpError]). No call is sent before the last
// Retry-After the client was given runs out, whichever call it came on;
// when ctx's deadline comes first, Get fails at once with a
// [*HeldError]. A cancelled ctx stops it at once, with an error wrapping
// ctx's.
func (c *Client) Get(ctx context.Context, endpoint, url string, header http.Header) (*Response, error) {
	var served time.Time // the hold this call has waited out
	for attempt := 1; ; attempt++ {
		resp, f, err := c.try(ctx, endpoint, url, header, served)
		switch {
		case err != nil:
			return nil, err
		case f == nil:
			resp.Attempts = attempt
			return resp, nil
		case attempt >= c.cfg.MaxAttempts:
			return nil, &GaveUpError{Endpoint: endpoint, Attempts: attempt, Last: f.last, Err: f.err}
		}
		wait, err := c.wait(attempt, f)
		if err != nil {
			return nil, fmt.Errorf("paced: GET %s: backoff: %w", endpoint, err)
		}
		c.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "provider call failed, retrying",
			slog.String("provider", c.cfg.Name), slog.String("endpoint", endpoint), slog.Int("attempt", attempt),
			slog.Duration("wait", wait), slog.String("error", f.err.Error()))
		if f.hasAfter {
			if err := c.outlasts(ctx, endpoint, f.until, wait, f.err); err != nil {
				return nil, err
			}
			served = f.until
		}
		if err := c.cfg.Sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("paced: GET %s: waiting to retry: %w", endpoint, err)
		}
		c.retries.Add(1)
	}
}

// try makes one paced call: its answer, or the failure worth repeating,
// or an error that ends the call.
// served is a hold the call has already waited out.
func (c *Client) try(ctx context.Context, endpoint, url string, header http.Header, served time.Time) (*Response, *failed, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("paced: GET %s: %w", endpoint, context.Cause(ctx))
	}
	if err := c.waitHold(ctx, endpoint, served); err != nil {
		return nil, nil, err
	}
	if err := c.pace(ctx, endpoint); err != nil {
		return nil, nil, fmt.Errorf("paced: GET %s: waiting for the pace: %w", endpoint, err)
	}
	actx, cancel := ctx, context.CancelFunc(func() {})
	if c.cfg.Timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
	}
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("paced: GET %s: %s", endpoint, c.redact(err.Error()))
	}
	for k, v := range header {
		req.Header[k] = v
	}
	c.calls.Add(1)
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return nil, c.lost(ctx, endpoint, err), c.stopped(ctx, endpoint, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxBody+1))
	if err != nil {
		return nil, c.lost(ctx, endpoint, err), c.stopped(ctx, endpoint, err)
	}
	c.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "provider call", slog.String("provider", c.cfg.Name),
		slog.String("endpoint", endpoint), slog.Int("status", resp.StatusCode), slog.Int("bytes", len(body)))
	r := &Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
	switch s := resp.StatusCode; {
	case s == http.StatusTooManyRequests:
		c.rateLimited.Add(1)
		return nil, c.again(ErrRateLimited, r), nil
	case s >= 500:
		return nil, c.again(fmt.Errorf("%w: status %d", ErrUnavailable, s), r), nil
	case int64(len(body)) > c.cfg.MaxBody:
		return nil, nil, fmt.Errorf("%w: GET %s: over %d bytes", ErrTooLarge, endpoint, c.cfg.MaxBody)
	}
	return r, nil, nil
}

func (c *Client) again(err error, r *Response) *failed {
	now := c.cfg.Now()
	after, ok := RetryAfter(r.Header, now, c.cfg.MaxRetryAfter)
	f := &failed{err: err, last: r, after: after, hasAfter: ok}
	if ok {
		f.until = now.Add(after)
		c.holdUntil(f.until, err)
	}
	return f
}

// holdUntil keeps every later call of the client, to any endpoint, from
// the provider until t, unless a later hold is already set.
func (c *Client) holdUntil(t time.Time, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.hold) {
		c.hold, c.heldBy = t, cause
	}
}

// waitHold waits out the client's hold ([Client.holdUntil]) through
// [Config.Sleep], unless it is the hold served, which the call has waited
// out already. When ctx's deadline comes before the hold ends, it fails
// at once with a [*HeldError] instead: the call could not be sent in
// time anyway.
func (c *Client) waitHold(ctx context.Context, endpoint string, served time.Time) error {
	c.mu.Lock()
	until, cause := c.hold, c.heldBy
	c.mu.Unlock()
	wait := until.Sub(c.cfg.Now())
	if wait <= 0 || until.Equal(served) {
		return nil
	}
	if err := c.outlasts(ctx, endpoint, until, wait, cause); err != nil {
		return err
	}
	if err := c.cfg.Sleep(ctx, wait); err != nil {
		return fmt.Errorf("paced: GET %s: waiting out the provider's Retry-After: %w", endpoint, err)
	}
	return nil
}

// lost is a call that got no full answer, worth repeating unless the
// caller's context ended it ([Client.stopped] then says so).
func (c *Client) lost(ctx context.Context, endpoint string, err error) *failed {
	if ctx.Err() != nil {
		return nil
	}
	return &failed{err: fmt.Errorf("%w: GET %s: %s", ErrUnavailable, endpoint, c.redact(err.Error()))}
}

// stopped is the error of a call the caller's context ended, or nil.
func (c *Client) stopped(ctx context.Context, endpoint string, err error) error {
	if ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("paced: GET %s: %s: %w", endpoint, c.redact(err.Error()), context.Cause(ctx))
}

// outlasts is the [*HeldError] of a call whose ctx ends before a hold
// until until, wait from now, would let it be sent; else nil.
func (c *Client) outlasts(ctx context.Context, endpoint string, until time.Time, wait time.Duration, cause error) error {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		return &HeldError{Endpoint: endpoint, Until: until, Wait: wait, Err: cause}
	}
	return nil
}

// wait is the pause before retry number attempt: the wait the provider
// named, else the backoff.
func (c *Client) wait(attempt int, f *failed) (time.Duration, error) {
	if f.hasAfter {
		return f.after, nil
	}
	if c.cfg.Backoff != nil {
		d, err := c.cfg.Backoff.BackoffDelay(attempt, f.err)
		return max(d, 0), err
	}
	ceiling, top := c.cfg.BackoffBase, c.cfg.BackoffMax
	for i := 1; i < attempt && ceiling < top; i++ {
		ceiling = min(top, ceiling+min(ceiling, top-ceiling))
	}
	return min(max(c.cfg.Jitter(min(ceiling, top)), 0), top), nil
}

func (c *Client) limiter(endpoint string) *rate.Limiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.limiters[endpoint]
	if !ok {
		limit := rate.Limit(c.cfg.Rate)
		if c.cfg.Rate == 0 {
			limit = rate.Inf
		}
		l = rate.NewLimiter(limit, c.cfg.Burst)
		c.limiters[endpoint] = l
	}
	return l
}

// pace takes endpoint's next token, waiting through [Config.Sleep] when
// it is not yet due.
func (c *Client) pace(ctx context.Context, endpoint string) error {
	now := c.cfg.Now()
	res := c.limiter(endpoint).ReserveN(now, 1)
	if !res.OK() {
		return errors.New("the limiter admits no call")
	}
	d := res.DelayFrom(now)
	if d <= 0 {
		return nil
	}
	if err := c.cfg.Sleep(ctx, d); err != nil {
		res.CancelAt(c.cfg.Now())
		return err
	}
	return nil
}

func (c *Client) redact(text string) string {
	if c.cfg.Secret == "" {
		return text
	}
	return strings.ReplaceAll(text, c.cfg.Secret, "[redacted]")
}

// Sleep waits d, or until ctx is done (then its cause).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
