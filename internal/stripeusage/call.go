package stripeusage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v84"
	"golang.org/x/time/rate"

	"github.com/hookline/hookline/internal/sums"
)

// maxBody bounds an answer's body: a page of 100 summaries is about 25 KiB.
const maxBody = 4 << 20

// retryable is a failed call worth repeating, with the wait Stripe asked
// for, if it asked.
type retryable struct {
	err      error
	after    time.Duration
	hasAfter bool
}

func (e *retryable) Error() string { return e.err.Error() }
func (e *retryable) Unwrap() error { return e.err }

// redacted is a foreign error whose text has been cleared of the key.
type redacted struct {
	text string
	err  error
}

func (e *redacted) Error() string { return e.text }
func (e *redacted) Unwrap() error { return e.err }

// get calls GET u, paced on endpoint's limiter, until it decodes a 2xx
// answer into out, meets an error not worth repeating, or has made
// [Config.MaxAttempts] calls.
func (r *Reader) get(ctx context.Context, endpoint string, u *url.URL, out any) error {
	for attempt := 1; ; attempt++ {
		err := r.try(ctx, endpoint, u, out)
		var again *retryable
		if !errors.As(err, &again) {
			return err
		}
		if attempt >= r.cfg.MaxAttempts {
			return fmt.Errorf("%w: GET %s: gave up after %d attempts: %w", sums.ErrRead, endpoint, attempt, again.err)
		}
		wait := r.backoff(attempt, again)
		r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "stripe call failed, retrying",
			slog.String("endpoint", endpoint), slog.Int("attempt", attempt),
			slog.Duration("wait", wait), slog.String("error", err.Error()))
		if err := r.cfg.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("%w: GET %s: waiting to retry: %w", sums.ErrRead, endpoint, err)
		}
		r.retries.Add(1)
	}
}

// try makes one call.
func (r *Reader) try(ctx context.Context, endpoint string, u *url.URL, out any) error {
	if err := r.pace(ctx, endpoint); err != nil {
		return fmt.Errorf("%w: GET %s: waiting for the pace: %w", sums.ErrRead, endpoint, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("%w: GET %s: %w", sums.ErrRead, endpoint, err)
	}
	req.Header.Set("Authorization", "Bearer "+r.cfg.Key)
	req.Header.Set("Stripe-Version", stripe.APIVersion)
	r.calls.Add(1)
	resp, err := r.cfg.HTTPClient.Do(req)
	if err != nil {
		return r.transportError(ctx, endpoint, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return r.transportError(ctx, endpoint, err)
	}
	r.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "stripe call",
		slog.String("endpoint", endpoint), slog.Int("status", resp.StatusCode), slog.Int("bytes", len(body)))
	return r.answer(endpoint, resp, body, out)
}

// answer reads a response: a page into out, or the error it is.
func (r *Reader) answer(endpoint string, resp *http.Response, body []byte, out any) error {
	switch s := resp.StatusCode; {
	case s == http.StatusTooManyRequests:
		r.rateLimited.Add(1)
		return again(ErrRateLimited, resp.Header)
	case s >= 500:
		return again(fmt.Errorf("%w: status %d", ErrUnavailable, s), resp.Header)
	case s >= 400:
		return r.apiError(endpoint, resp, body)
	case s < 200 || s >= 300:
		return fmt.Errorf("%w: GET %s: unexpected status %d", sums.ErrRead, endpoint, s)
	case len(body) > maxBody:
		return fmt.Errorf("%w: GET %s: answer exceeds %d bytes", sums.ErrRead, endpoint, maxBody)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%w: GET %s: decode the answer: %w", sums.ErrRead, endpoint, err)
	}
	return nil
}

func again(err error, h http.Header) *retryable {
	after, ok := retryAfter(h)
	return &retryable{err: err, after: after, hasAfter: ok}
}

// retryAfter reads a Retry-After header of whole seconds, capped at
// [MaxRetryAfter]. Stripe documents none, but a proxy may send one.
func retryAfter(h http.Header) (time.Duration, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || n < 0 {
		return 0, false
	}
	if n >= int(MaxRetryAfter/time.Second) {
		return MaxRetryAfter, true
	}
	return time.Duration(n) * time.Second, true
}

// transportError is a call that got no full answer: retried, unless the
// caller's context ended it.
func (r *Reader) transportError(ctx context.Context, endpoint string, err error) error {
	e := &redacted{text: fmt.Sprintf("GET %s: %s", endpoint, r.redact(err.Error())), err: err}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", sums.ErrRead, e)
	}
	return &retryable{err: fmt.Errorf("%w: %w", ErrUnavailable, e)}
}

// apiError reads Stripe's error body ({"error": {...}}) with stripe-go's
// type.
func (r *Reader) apiError(endpoint string, resp *http.Response, body []byte) *APIError {
	e := &APIError{Endpoint: endpoint, Status: resp.StatusCode, RequestID: r.redact(resp.Header.Get("Request-Id"))}
	var wrapped struct {
		Error *stripe.Error `json:"error"`
	}
	if json.Unmarshal(body, &wrapped) == nil && wrapped.Error != nil {
		se := wrapped.Error
		e.Type, e.Code, e.Param = r.redact(string(se.Type)), r.redact(string(se.Code)), r.redact(se.Param)
		e.Message = r.redact(se.Msg)
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

// backoff is the wait before retry number retry (1 for the first): the
// Retry-After Stripe sent, or full jitter below BackoffBase doubled per
// retry, at most BackoffMax.
func (r *Reader) backoff(retry int, f *retryable) time.Duration {
	if f.hasAfter {
		return f.after
	}
	ceiling, top := r.cfg.BackoffBase, r.cfg.BackoffMax
	for i := 1; i < retry && ceiling < top; i++ {
		ceiling = min(top, ceiling+min(ceiling, top-ceiling))
	}
	return r.jitter(min(ceiling, top))
}

// fullJitter draws a wait uniformly from [0, ceiling].
func fullJitter(ceiling time.Duration) time.Duration {
	if ceiling <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

func (r *Reader) limiter(endpoint string) *rate.Limiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.limiters[endpoint]
	if !ok {
		l = rate.NewLimiter(rate.Limit(r.cfg.Rate), r.cfg.Burst)
		r.limiters[endpoint] = l
	}
	return l
}

// pace takes endpoint's next token, waiting through [Config.Sleep] when it
// is not yet due.
func (r *Reader) pace(ctx context.Context, endpoint string) error {
	now := r.now()
	res := r.limiter(endpoint).ReserveN(now, 1)
	if !res.OK() {
		return errors.New("the limiter admits no call")
	}
	d := res.DelayFrom(now)
	if d <= 0 {
		return nil
	}
	if err := r.cfg.Sleep(ctx, d); err != nil {
		res.CancelAt(r.now())
		return err
	}
	return nil
}
