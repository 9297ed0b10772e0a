package openmeter

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/usagein"
)

// Errors of the openmeter package.
var (
	// ErrInvalidConfig means New or NewReader was given a bad config.
	ErrInvalidConfig = errors.New("openmeter: invalid config")
	// ErrStatus means OpenMeter answered with an error status; it comes
	// in a [*StatusError].
	ErrStatus = errors.New("openmeter: error status")
	// ErrBadResponse means an answer that does not follow OpenMeter's
	// spec: not its shape, more items than asked for, a full page with
	// no cursor, or a cursor seen before.
	ErrBadResponse = errors.New("openmeter: malformed response")
	// ErrUnreachable means no answer came (a network failure or timeout).
	ErrUnreachable = errors.New("openmeter: unreachable")
)

// StatusError is an error status with the problem's detail
// (application/problem+json), cut to a line.
type StatusError struct {
	Status int
	Detail string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("openmeter: status %d: %s", e.Status, e.Detail)
}

// Unwrap returns [ErrStatus].
func (e *StatusError) Unwrap() error { return ErrStatus }

// Retriable reports whether a later call may succeed: 429 and 5xx.
func (e *StatusError) Retriable() bool {
	return e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// IsRetriable reports whether err is worth a later call: a network
// failure, 429 or a 5xx.
func IsRetriable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Retriable()
	}
	return errors.Is(err, ErrUnreachable)
}

// Ways a record's workload reference is found.
const (
	// WorkloadSubject is the event's subject, read by the source's
	// mapping as the door reads it (the default).
	WorkloadSubject = "subject"
	// WorkloadCustomer is the OpenMeter customer ID the event belongs to.
	WorkloadCustomer = "customer"
)

// Defaults applied to zero fields of [Config].
const (
	DefaultPageLimit = 100
	DefaultStep      = 5 * time.Minute
	DefaultLag       = 2 * time.Minute
	DefaultMaxLag    = 6 * time.Hour
	DefaultAttempts  = 4
	DefaultTimeout   = 10 * time.Second
	// MaxPageLimit is the spec's maxItems of a page.
	MaxPageLimit = 100
)

// Pages enqueues pages durably; [*pager.Outbox] is one.
type Pages interface {
	Enqueue(ctx context.Context, ev pager.Event) (bool, error)
}

// Config configures [New].
type Config struct {
	// BaseURL is OpenMeter's API address (https://openmeter.cloud).
	BaseURL string
	// APIKey is sent as a bearer token. It is a credential and is never
	// logged.
	APIKey string
	// Source is the hookline usage source whose events OpenMeter holds:
	// it scopes each record's key, as at the door. Mapping is its usage
	// mapping (a CloudEvents one).
	Source  string
	Mapping usagein.Mapping
	// Workload is [WorkloadSubject] (default) or [WorkloadCustomer].
	Workload string
	// PageLimit is the events asked for per page, at most 100. Default 100.
	PageLimit int
	// Step is the width of the parts of a window read one after another,
	// each held in memory to be handed on oldest first. Default 5m.
	Step time.Duration
	// Lag is the ingest-to-store lag the reads allow for: the least they
	// reach back before a window, and the lag above which a growing lag
	// pages. Default 2m. MaxLag bounds the reach back. Default 6h.
	Lag, MaxLag time.Duration
	// Attempts is how many times a call is made before it fails; Timeout
	// bounds each. Defaults 4 and 10s.
	Attempts int
	Timeout  time.Duration
	// Pages and RoutingKey page the reconciliation owner when the lag
	// grows past Lag. Without Pages the growth is only logged and
	// measured.
	Pages      Pages
	RoutingKey string
	// Metrics receives EMF lines; Logger log lines. Defaults: none.
	Metrics *emf.Logger
	Logger  *slog.Logger
	// HTTP is the client. Default: a new http.Client.
	HTTP *http.Client
	// Wait waits between attempts. Default: a timer, cut short by ctx.
	Wait func(ctx context.Context, d time.Duration) error
}

func (c *Config) defaults() {
	c.Workload = cmp.Or(c.Workload, WorkloadSubject)
	c.PageLimit = cmp.Or(c.PageLimit, DefaultPageLimit)
	c.Step = cmp.Or(c.Step, DefaultStep)
	c.Lag = cmp.Or(c.Lag, DefaultLag)
	c.MaxLag = cmp.Or(c.MaxLag, DefaultMaxLag)
	c.Attempts = cmp.Or(c.Attempts, DefaultAttempts)
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.HTTP == nil {
		c.HTTP = &http.Client{}
	}
	if c.Wait == nil {
		c.Wait = wait
	}
}

// Validate reports every problem with c (after defaults) at once.
func (c Config) Validate() error {
	c.defaults()
	var errs []error
	if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("BaseURL %q is not an http(s) URL", c.BaseURL))
	}
	if c.Source == "" {
		errs = append(errs, errors.New("Source is required: it scopes every record's key"))
	}
	if c.Mapping.Format != usagein.FormatCloudEvents {
		errs = append(errs, fmt.Errorf("Mapping: source %q must read %s, not %q", c.Source, usagein.FormatCloudEvents, c.Mapping.Format))
	}
	if c.Workload != WorkloadSubject && c.Workload != WorkloadCustomer {
		errs = append(errs, fmt.Errorf("Workload %q: want %s or %s", c.Workload, WorkloadSubject, WorkloadCustomer))
	}
	if c.PageLimit < 1 || c.PageLimit > MaxPageLimit {
		errs = append(errs, fmt.Errorf("PageLimit %d outside 1..%d", c.PageLimit, MaxPageLimit))
	}
	if c.Step < time.Second || c.Lag < 0 || c.MaxLag < c.Lag || c.Attempts < 1 || c.Timeout <= 0 {
		errs = append(errs, errors.New("Step must be at least 1s, Lag not negative, MaxLag at least Lag, Attempts and Timeout positive"))
	}
	if c.Pages != nil && c.RoutingKey == "" {
		errs = append(errs, errors.New("RoutingKey is required with Pages"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// maxBody bounds an answer's body: a page of 100 events is well under it.
const maxBody = 8 << 20

// caller makes OpenMeter's GET calls; [Client] and [Reader] share it.
type caller struct {
	base     string
	key      string
	http     *http.Client
	timeout  time.Duration
	attempts int
	wait     func(ctx context.Context, d time.Duration) error
	log      *slog.Logger
}

// get calls GET path?q until it decodes a 200 into out, meets an error
// no retry cures, or has tried attempts times, backing off 200ms, 400ms,
// 800ms... between tries. It reports the attempts made.
func (c caller) get(ctx context.Context, path string, q url.Values, out any) (int, error) {
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := c.try(ctx, path, q, out)
		if err == nil || !IsRetriable(err) || attempt >= c.attempts {
			return attempt, err
		}
		c.log.WarnContext(ctx, "openmeter call failed, retrying", "path", path, "attempt", attempt, "err", err)
		if werr := c.wait(ctx, backoff); werr != nil {
			return attempt, err
		}
		backoff *= 2
	}
}

// try makes one call.
func (c caller) try(ctx context.Context, path string, q url.Values, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path+"?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadResponse, err)
	}
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: GET %s: %w", ErrUnreachable, path, redact(err, c.key))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	switch {
	case err != nil:
		return fmt.Errorf("%w: GET %s: read: %w", ErrUnreachable, path, err)
	case resp.StatusCode != http.StatusOK:
		return &StatusError{Status: resp.StatusCode, Detail: problem(body)}
	case len(body) > maxBody:
		return fmt.Errorf("%w: GET %s: answer over %d bytes", ErrBadResponse, path, maxBody)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%w: GET %s: %w", ErrBadResponse, path, err)
	}
	return nil
}

// problem is an error answer's detail (RFC 7807), or its first line.
func problem(body []byte) string {
	var p struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
	}
	text := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &p) == nil && (p.Detail != "" || p.Title != "") {
		text = strings.TrimSpace(p.Title + ": " + p.Detail)
	}
	text, _, _ = strings.Cut(text, "\n")
	if len(text) > 200 {
		text = text[:200]
	}
	return text
}

// redact clears the key from a transport error's text.
func redact(err error, key string) error {
	if key == "" || !strings.Contains(err.Error(), key) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), key, "[key]"))
}

func wait(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
