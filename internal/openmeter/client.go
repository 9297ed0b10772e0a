package openmeter

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/paced"
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
	// More are further door sources whose events OpenMeter holds, each
	// with its own mapping (another meter, another scale). An event is
	// read by the source whose mapping's usage_types name its type, under
	// that source's name, as the door reads it when it arrives there; an
	// event of a type no source names is read by Source's mapping.
	More []ExportSource
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
	// bounds each. Defaults 4 and 10s. Rate paces the calls, per
	// endpoint, in calls a second (default 0: OpenMeter documents no
	// limit, so the calls are not paced).
	Attempts int
	Timeout  time.Duration
	Rate     float64
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
	// Wait waits between attempts, for a Retry-After OpenMeter names or a
	// jittered backoff from 200ms (package paced). Default: a timer, cut
	// short by ctx. Now is the clock a Retry-After date is read against
	// (default time.Now).
	Wait func(ctx context.Context, d time.Duration) error
	Now  func() time.Time
	// Paced, when set, is the paced client the calls go through, shared
	// with the other readers of the same account, so that a wait the
	// provider names to one holds them all (package paced). Its pace,
	// retries and clock are its own: Attempts, Timeout, Rate, HTTP, Wait and Now are then unused.
	Paced *paced.Client
}

// ExportSource is a door source whose events OpenMeter holds, and its
// usage mapping (a CloudEvents one).
type ExportSource struct {
	Name    string
	Mapping usagein.Mapping
}

// sources are every source the export reads: Source first, then More.
func (c Config) sources() []ExportSource {
	return append([]ExportSource{{Name: c.Source, Mapping: c.Mapping}}, c.More...)
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
		c.Wait = paced.Sleep
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
	errs = append(errs, checkSources(c.sources())...)
	if c.Workload != WorkloadSubject && c.Workload != WorkloadCustomer {
		errs = append(errs, fmt.Errorf("Workload %q: want %s or %s", c.Workload, WorkloadSubject, WorkloadCustomer))
	}
	if c.PageLimit < 1 || c.PageLimit > MaxPageLimit {
		errs = append(errs, fmt.Errorf("PageLimit %d outside 1..%d", c.PageLimit, MaxPageLimit))
	}
	if c.Step < time.Second || c.Lag < 0 || c.MaxLag < c.Lag || c.Attempts < 1 || c.Timeout <= 0 || c.Rate < 0 {
		errs = append(errs, errors.New("Step must be at least 1s, Lag not negative, MaxLag at least Lag, Attempts and Timeout positive, Rate not negative"))
	}
	if c.Pages != nil && c.RoutingKey == "" {
		errs = append(errs, errors.New("RoutingKey is required with Pages"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// checkSources refuses a source without a name, twice, or not read as
// CloudEvents, and an event type two sources claim: its events would be
// counted under either key.
func checkSources(srcs []ExportSource) []error {
	var errs []error
	names, types := map[string]bool{}, map[string]string{}
	for i, src := range srcs {
		switch {
		case src.Name == "" && i == 0:
			errs = append(errs, errors.New("Source is required: it scopes every record's key"))
		case src.Name == "":
			errs = append(errs, fmt.Errorf("More[%d]: Name is required: it scopes every record's key", i-1))
		case names[src.Name]:
			errs = append(errs, fmt.Errorf("source %q is named twice", src.Name))
		}
		names[src.Name] = true
		if src.Mapping.Format != usagein.FormatCloudEvents {
			errs = append(errs, fmt.Errorf("Mapping: source %q must read %s, not %q", src.Name, usagein.FormatCloudEvents, src.Mapping.Format))
		}
		for _, t := range src.Mapping.UsageTypes {
			if other, ok := types[t]; ok && other != src.Name {
				errs = append(errs, fmt.Errorf("Mapping: usage type %q is claimed by sources %q and %q", t, other, src.Name))
			}
			types[t] = src.Name
		}
	}
	return errs
}

// maxBody bounds an answer's body: a page of 100 events is well under it.
const maxBody = 8 << 20

// caller makes OpenMeter's GET calls through a [paced.Client]; [Client]
// and [Reader] share it.
type caller struct {
	base string
	key  string
	call *paced.Client
}

func newCaller(cfg Config) (caller, error) {
	base := strings.TrimSuffix(cfg.BaseURL, "/")
	if cfg.Paced != nil {
		return caller{base: base, key: cfg.APIKey, call: cfg.Paced}, nil
	}
	call, err := paced.New(paced.Config{Name: "openmeter", Rate: cfg.Rate, MaxAttempts: cfg.Attempts,
		BackoffBase: 200 * time.Millisecond, BackoffMax: 10 * time.Second, Timeout: cfg.Timeout, MaxBody: maxBody,
		HTTP: cfg.HTTP, Now: cfg.Now, Sleep: cfg.Wait, Secret: cfg.APIKey, Logger: cfg.Logger})
	if err != nil {
		return caller{}, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return caller{base: base, key: cfg.APIKey, call: call}, nil
}

// get calls GET path?q, paced on endpoint (path's template), until it
// decodes a 200 into out: a 429, a 5xx or a lost call is retried as
// package paced says, honouring Retry-After. It reports the attempts
// made.
func (c caller) get(ctx context.Context, endpoint, path string, q url.Values, out any) (int, error) {
	header := http.Header{"Accept": {"application/json"}}
	if c.key != "" {
		header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.call.Get(ctx, endpoint, c.base+path+"?"+q.Encode(), header)
	var gu *paced.GaveUpError
	switch {
	case errors.As(err, &gu) && gu.Last != nil:
		return gu.Attempts, fmt.Errorf("%w (%w)", &StatusError{Status: gu.Last.Status, Detail: problem(gu.Last.Body)}, err)
	case errors.As(err, &gu):
		return gu.Attempts, fmt.Errorf("%w: %w", ErrUnreachable, err)
	case errors.Is(err, paced.ErrTooLarge):
		return 1, fmt.Errorf("%w: %w", ErrBadResponse, err)
	case err != nil:
		return 1, fmt.Errorf("%w: %w", ErrUnreachable, err)
	case resp.Status != http.StatusOK:
		return resp.Attempts, &StatusError{Status: resp.Status, Detail: problem(resp.Body)}
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return resp.Attempts, fmt.Errorf("%w: GET %s: %w", ErrBadResponse, endpoint, err)
	}
	return resp.Attempts, nil
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
