package pager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Sender delivers one event. Implementations return a [*SendError] so the
// outbox can tell a retriable failure from a permanent one.
type Sender interface {
	Send(ctx context.Context, ev Event) error
}

// DefaultURL is the PagerDuty Events API v2 root.
const DefaultURL = "https://events.pagerduty.com"

// HTTPSenderConfig configures an [HTTPSender].
type HTTPSenderConfig struct {
	// URL is the Events API root; /v2/enqueue is appended. Default DefaultURL.
	URL string
	// Timeout bounds one attempt. Default 5s.
	Timeout time.Duration
	// Client sends the requests. Default: a client with Timeout.
	Client *http.Client
}

// Validate reports every problem with c at once.
func (c HTTPSenderConfig) Validate() error {
	var errs []error
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("URL %q is not an http(s) URL", c.URL))
		}
	}
	if c.Timeout < 0 {
		errs = append(errs, errors.New("Timeout is negative"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// HTTPSender posts events to the PagerDuty Events API v2, one attempt per
// Send. It is safe for concurrent use.
type HTTPSender struct {
	url    string
	client *http.Client
}

var _ Sender = (*HTTPSender)(nil)

// NewHTTPSender returns a sender for cfg.
func NewHTTPSender(cfg HTTPSenderConfig) (*HTTPSender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base := cfg.URL
	if base == "" {
		base = DefaultURL
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{Timeout: timeout}
	}
	return &HTTPSender{url: strings.TrimRight(base, "/") + "/v2/enqueue", client: client}, nil
}

// Send posts ev. 202 (any 2xx) is success; 429, 5xx and network failures
// are retriable; any other status is permanent.
func (s *HTTPSender) Send(ctx context.Context, ev Event) error {
	if err := ev.Validate(); err != nil {
		return &SendError{Err: err}
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return &SendError{Err: fmt.Errorf("pager: encode: %w", err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return &SendError{Err: fmt.Errorf("pager: build request: %w", err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		// A repeat is harmless under a dedup key, so any network failure is
		// worth another try.
		return &SendError{Retriable: true, Err: errors.New("request failed")}
	}
	defer resp.Body.Close()
	msg := responseMessage(resp.Body)
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return &SendError{StatusCode: resp.StatusCode, Retriable: true,
			RetryAfter: retryAfter(resp.Header.Get("Retry-After")), Err: errors.New("retriable" + msg)}
	default:
		return &SendError{StatusCode: resp.StatusCode, Err: errors.New("rejected" + msg)}
	}
}

// responseMessage returns the "message" of an Events API reply, prefixed
// for an error text, or "" when there is none. The body is bounded.
func responseMessage(r io.Reader) string {
	var body struct {
		Message string `json:"message"`
	}
	raw, _ := io.ReadAll(io.LimitReader(r, 4096))
	if json.Unmarshal(raw, &body) != nil || body.Message == "" {
		return ""
	}
	return ": " + body.Message
}

// retryAfter parses a Retry-After header given in seconds.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}
