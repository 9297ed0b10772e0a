package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Event actions of the Events API v2.
const (
	PagerTrigger     = "trigger"
	PagerAcknowledge = "acknowledge"
	PagerResolve     = "resolve"
)

// Severities of a triggered event.
const (
	SeverityCritical = "critical"
	SeverityError    = "error"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// Limits of the Events API v2.
const (
	MaxSummaryLen  = 1024
	MaxDedupKeyLen = 255
)

// PagerEvent is the body of POST /v2/enqueue (PagerDuty Events API v2).
type PagerEvent struct {
	// RoutingKey is the integration key of the service to page. It is a
	// credential and is never logged. [Pager] fills it from
	// [PagerConfig.RoutingKey] when empty.
	RoutingKey  string `json:"routing_key"`
	EventAction string `json:"event_action"`
	// DedupKey makes repeats of one incident collapse into one alert.
	DedupKey string `json:"dedup_key,omitempty"`
	// Payload is required for a trigger.
	Payload PagerPayload `json:"payload,omitzero"`
}

// PagerPayload describes the incident of a triggered event.
type PagerPayload struct {
	Summary       string         `json:"summary"`
	Source        string         `json:"source"`
	Severity      string         `json:"severity"`
	Timestamp     time.Time      `json:"timestamp,omitzero"`
	Component     string         `json:"component,omitempty"`
	Group         string         `json:"group,omitempty"`
	Class         string         `json:"class,omitempty"`
	CustomDetails map[string]any `json:"custom_details,omitempty"`
}

// Validate reports every rule of the Events API v2 that e breaks.
func (e PagerEvent) Validate() error {
	var errs []error
	if e.RoutingKey == "" {
		errs = append(errs, errors.New("routing_key is empty"))
	}
	if len(e.DedupKey) > MaxDedupKeyLen {
		errs = append(errs, fmt.Errorf("dedup_key is longer than %d", MaxDedupKeyLen))
	}
	switch e.EventAction {
	case PagerTrigger:
		p := e.Payload
		if p.Summary == "" {
			errs = append(errs, errors.New("payload.summary is empty"))
		}
		if len(p.Summary) > MaxSummaryLen {
			errs = append(errs, fmt.Errorf("payload.summary is longer than %d", MaxSummaryLen))
		}
		if p.Source == "" {
			errs = append(errs, errors.New("payload.source is empty"))
		}
		switch p.Severity {
		case SeverityCritical, SeverityError, SeverityWarning, SeverityInfo:
		default:
			errs = append(errs, fmt.Errorf("payload.severity %q is not one of critical, error, warning, info", p.Severity))
		}
	case PagerAcknowledge, PagerResolve:
		if e.DedupKey == "" {
			errs = append(errs, fmt.Errorf("dedup_key is required to %s", e.EventAction))
		}
	default:
		errs = append(errs, fmt.Errorf("event_action %q is not one of trigger, acknowledge, resolve", e.EventAction))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidEvent, errors.Join(errs...))
	}
	return nil
}

// PagerResponse is the body of a 202 from POST /v2/enqueue.
type PagerResponse struct {
	Status   string `json:"status"`
	Message  string `json:"message"`
	DedupKey string `json:"dedup_key,omitempty"`
}

// DefaultPagerURL is the PagerDuty Events API v2 root.
const DefaultPagerURL = "https://events.pagerduty.com"

// PagerConfig configures a [Pager].
type PagerConfig struct {
	// URL is the Events API root; /v2/enqueue is appended. Default
	// [DefaultPagerURL].
	URL string
	// RoutingKey is used for events that carry none. It is never logged.
	RoutingKey string
	// Timeout bounds one attempt. Default 5s.
	Timeout time.Duration
	// MaxAttempts bounds the attempts of one [Pager.Page]. An outbox that
	// retries on its own may set 1. Default 4.
	MaxAttempts int
	// BaseBackoff and MaxBackoff shape the waits as in [Config].
	BaseBackoff, MaxBackoff time.Duration
	// HTTPClient sends the requests. Default: a pooled client.
	HTTPClient *http.Client
	// Logger receives debug lines about retries. Default: discard.
	Logger *slog.Logger
}

// Validate reports every problem with c at once.
func (c PagerConfig) Validate() error {
	var errs []error
	if c.URL != "" {
		if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("URL %q is not an http(s) URL", c.URL))
		}
	}
	errs = append(errs, validatePolicy(c.Timeout, c.MaxAttempts, c.BaseBackoff, c.MaxBackoff)...)
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// Pager sends events to the Events API v2. It is safe for concurrent use.
type Pager struct {
	url        string
	routingKey string
	http       *http.Client
	policy     retryPolicy
	log        *slog.Logger
}

// NewPager returns a pager for cfg.
func NewPager(cfg PagerConfig) (*Pager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base := cfg.URL
	if base == "" {
		base = DefaultPagerURL
	}
	return &Pager{
		url:        strings.TrimRight(base, "/") + "/v2/enqueue",
		routingKey: cfg.RoutingKey,
		http:       httpClientOrDefault(cfg.HTTPClient),
		policy:     newPolicy(cfg.Timeout, cfg.MaxAttempts, cfg.BaseBackoff, cfg.MaxBackoff),
		log:        loggerOrDiscard(cfg.Logger),
	}, nil
}

// Page sends ev, retrying 5xx, 429 and network failures up to MaxAttempts.
// An error is a [*PageError]; [IsRetriable] tells whether a later retry of
// the same event can succeed. Repeats are harmless when ev has a DedupKey.
func (p *Pager) Page(ctx context.Context, ev PagerEvent) error {
	if ev.RoutingKey == "" {
		ev.RoutingKey = p.routingKey
	}
	if err := ev.Validate(); err != nil {
		return &PageError{Err: err}
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return &PageError{Err: fmt.Errorf("%w: encode: %w", ErrInvalidEvent, err)}
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	r := request{method: http.MethodPost, url: p.url, body: body, header: h}
	for attempt := 1; ; attempt++ {
		perr := p.attempt(ctx, r)
		if perr == nil {
			return nil
		}
		perr.Attempts = attempt
		if !IsRetriable(perr) || attempt >= p.policy.maxAttempts {
			return perr
		}
		d, ok := p.policy.wait(ctx, attempt, perr.RetryAfter)
		if !ok {
			return perr
		}
		p.log.DebugContext(ctx, "pager retry", "dedup_key", ev.DedupKey, "attempt", attempt,
			"status", perr.StatusCode, "wait", d)
		if sleep(ctx, d) != nil {
			return perr
		}
	}
}

func (p *Pager) attempt(ctx context.Context, r request) *PageError {
	resp, err := send(ctx, p.http, p.policy.timeout, r)
	switch {
	case err != nil:
		// A duplicate page is harmless under a dedup key, so every network
		// failure is worth a retry.
		return &PageError{Err: fmt.Errorf("%w: %w", ErrRetriable, err)}
	case resp.status >= 200 && resp.status < 300:
		return nil
	case resp.status == http.StatusTooManyRequests || resp.status >= 500:
		return &PageError{StatusCode: resp.status, RetryAfter: retryAfter(resp.header, time.Now()),
			Err: fmt.Errorf("%w: status %d", ErrRetriable, resp.status)}
	default:
		return &PageError{StatusCode: resp.status,
			Err: fmt.Errorf("%w: status %d%s", ErrRejected, resp.status, pagerReason(resp.body))}
	}
}

// pagerReason extracts the status line of a PagerDuty error body.
func pagerReason(body []byte) string {
	var r PagerResponse
	if json.Unmarshal(body, &r) != nil || r.Message == "" {
		return ""
	}
	return fmt.Sprintf(" (%s)", r.Message)
}
