package openaiusage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/hookline/hookline/internal/sums"
)

// maxBody bounds an answer's body: a page of 1,440 minute buckets of one
// project is some 700 KiB.
const maxBody = 8 << 20

// transient is a failed call worth repeating, with the wait OpenAI asked
// for, if it asked.
type transient struct {
	err   error
	after time.Duration // < 0: OpenAI named no wait
}

func (e *transient) Error() string { return e.err.Error() }
func (e *transient) Unwrap() error { return e.err }

// get calls GET u, paced per endpoint, until a 2xx answer decodes into
// out, an error is not worth repeating, or [Config.MaxAttempts] calls
// were made.
func (r *Reader) get(ctx context.Context, endpoint string, u *url.URL, out any) error {
	for attempt := 1; ; attempt++ {
		err := r.once(ctx, endpoint, u, out)
		var t *transient
		switch {
		case !errors.As(err, &t):
			return err
		case attempt >= r.cfg.MaxAttempts:
			return fmt.Errorf("%w: GET %s: gave up after %d calls: %w", sums.ErrRead, endpoint, attempt, t.err)
		}
		if err := r.pause(ctx, endpoint, attempt, t); err != nil {
			return err
		}
	}
}

// pause waits before the retry that follows call number attempt.
func (r *Reader) pause(ctx context.Context, endpoint string, attempt int, t *transient) error {
	wait := t.after
	if wait < 0 {
		d, err := r.cfg.Backoff.BackoffDelay(attempt, t.err)
		if err != nil {
			return fmt.Errorf("%w: GET %s: backoff: %w", sums.ErrRead, endpoint, err)
		}
		wait = d
	}
	r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "openai usage call failed, retrying",
		slog.String("endpoint", endpoint), slog.Int("call", attempt), slog.Duration("wait", wait),
		slog.String("error", t.err.Error()))
	if err := r.cfg.Sleep(ctx, wait); err != nil {
		return fmt.Errorf("%w: GET %s: waiting to retry: %w", sums.ErrRead, endpoint, err)
	}
	r.retries.Add(1)
	return nil
}

// once makes one paced call and reads its answer into out.
func (r *Reader) once(ctx context.Context, endpoint string, u *url.URL, out any) error {
	if err := r.limiter(endpoint).Wait(ctx); err != nil {
		return fmt.Errorf("%w: GET %s: waiting for the pace: %w", sums.ErrRead, endpoint, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("%w: GET %s: %s", sums.ErrRead, endpoint, r.redact(err.Error()))
	}
	req.Header = http.Header{"Authorization": {"Bearer " + r.cfg.Key}, "Accept": {"application/json"}}
	status, header, body, err := r.send(req)
	if err != nil {
		return r.lost(ctx, endpoint, err)
	}
	r.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "openai usage call",
		slog.String("endpoint", endpoint), slog.Int("status", status), slog.Int("bytes", len(body)))
	if err := r.refusal(endpoint, status, header, body); err != nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%w: %w: GET %s: %s", sums.ErrRead, ErrBadPage, endpoint, err)
	}
	return nil
}

// send sends req: its answer's status, headers and body (at most
// maxBody+1 bytes).
func (r *Reader) send(req *http.Request) (int, http.Header, []byte, error) {
	r.calls.Add(1)
	resp, err := r.cfg.HTTPClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	return resp.StatusCode, resp.Header, body, err
}

// refusal is the error a non-2xx answer is, or nil.
func (r *Reader) refusal(endpoint string, s int, header http.Header, body []byte) error {
	switch {
	case s == http.StatusTooManyRequests:
		r.rateLimited.Add(1)
		return &transient{err: ErrRateLimited, after: retryAfter(header)}
	case s >= 500:
		return &transient{err: fmt.Errorf("%w: status %d", ErrUnavailable, s), after: retryAfter(header)}
	case s >= 400:
		return r.apiError(endpoint, s, header, body)
	case s < 200 || s >= 300:
		return fmt.Errorf("%w: GET %s: unexpected status %d", sums.ErrRead, endpoint, s)
	case len(body) > maxBody:
		return fmt.Errorf("%w: %w: GET %s: answer exceeds %d bytes", sums.ErrRead, ErrBadPage, endpoint, maxBody)
	}
	return nil
}

// lost is a call that got no full answer: repeated, unless the caller's
// context ended it. The transport's text is cleared of the key.
func (r *Reader) lost(ctx context.Context, endpoint string, err error) error {
	e := fmt.Errorf("%w: GET %s: %s", ErrUnavailable, endpoint, r.redact(err.Error()))
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", sums.ErrRead, e)
	}
	return &transient{err: e, after: -1}
}

// retryAfter reads OpenAI's retry-after-ms, or a Retry-After of whole
// seconds, capped at [MaxRetryAfter]; -1 when there is neither.
func retryAfter(h http.Header) time.Duration {
	for _, f := range []struct {
		name string
		unit time.Duration
	}{{"Retry-After-Ms", time.Millisecond}, {"Retry-After", time.Second}} {
		n, err := strconv.ParseFloat(strings.TrimSpace(h.Get(f.name)), 64)
		if err == nil && n >= 0 {
			return min(time.Duration(n*float64(f.unit)), MaxRetryAfter)
		}
	}
	return -1
}

// apiError reads OpenAI's error body.
func (r *Reader) apiError(endpoint string, status int, header http.Header, body []byte) *APIError {
	e := &APIError{Endpoint: endpoint, Status: status, RequestID: r.redact(header.Get("X-Request-Id"))}
	var wrapped struct {
		Error OpenAIError `json:"error"`
	}
	if json.Unmarshal(body, &wrapped) == nil {
		w := wrapped.Error
		e.OpenAIError = OpenAIError{Message: r.redact(w.Message), Type: r.redact(w.Type), Param: r.redact(w.Param),
			Code: r.redact(w.Code)}
	}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	return e
}

// limiter is endpoint's token bucket, made on its first call.
func (r *Reader) limiter(endpoint string) *rate.Limiter {
	l, _ := r.limiters.LoadOrStore(endpoint, rate.NewLimiter(r.cfg.Rate, r.cfg.Burst))
	return l.(*rate.Limiter)
}
