package providersim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Signer returns the signature headers of one webhook attempt: the event
// id, the attempt's timestamp and the exact body bytes. Package webhook
// provides signers for the Standard Webhooks and Stripe schemes.
type Signer func(id string, ts time.Time, body []byte) (http.Header, error)

// Defaults of a [Sender]. Real providers wait minutes to days between
// attempts; the simulator keeps the same shape at test speed.
const (
	DefaultSendAttempts = 5
	DefaultSendBackoff  = 50 * time.Millisecond
	DefaultSendMaxWait  = 2 * time.Second
	DefaultSendTimeout  = 5 * time.Second
)

// SenderConfig configures a [Sender].
type SenderConfig struct {
	// URL receives the webhooks.
	URL string
	// Sign signs each attempt anew, with a fresh timestamp. Nil sends
	// unsigned webhooks.
	Sign Signer
	// MaxAttempts bounds the attempts per webhook. Default 5.
	MaxAttempts int
	// BaseBackoff is the first wait; it doubles up to MaxBackoff, with
	// jitter. Defaults 50ms and 2s.
	BaseBackoff, MaxBackoff time.Duration
	// Timeout bounds one attempt. Default 5s.
	Timeout time.Duration
	// HTTPClient sends the requests. Default: a pooled client.
	HTTPClient *http.Client
	// Now stamps each attempt. Default time.Now.
	Now func() time.Time
	// Logger receives one line per failed attempt. Default: discard.
	Logger *slog.Logger
}

// Validate reports every problem with c at once.
func (c SenderConfig) Validate() error {
	var errs []error
	if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("URL %q is not an http(s) URL", c.URL))
	}
	if c.MaxAttempts < 0 || c.BaseBackoff < 0 || c.MaxBackoff < 0 || c.Timeout < 0 {
		errs = append(errs, errors.New("attempts, backoff and timeout must not be negative"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// Attempt is one try to deliver a webhook.
type Attempt struct {
	At time.Time
	// StatusCode is the answer, 0 when none arrived.
	StatusCode int
	// Body is the start of the answer's body (at most 1 KiB).
	Body string
	// Err describes a network failure or a signing failure.
	Err      string
	Duration time.Duration
}

// Delivery is the record of one webhook: every attempt and the final state.
type Delivery struct {
	ID       string
	Attempts []Attempt
	// Delivered is true once an attempt got a 2xx.
	Delivered bool
	// StatusCode is the last answer, 0 when none arrived.
	StatusCode int
	// Err explains an undelivered webhook.
	Err error
}

// Sender posts webhooks and retries like a provider: on a non-2xx answer or
// a network failure it waits with exponential backoff and tries again, a
// bounded number of times. It is safe for concurrent use.
type Sender struct {
	url      string
	sign     Signer
	attempts int
	base     time.Duration
	maxWait  time.Duration
	timeout  time.Duration
	http     *http.Client
	now      func() time.Time
	log      *slog.Logger

	mu         sync.Mutex
	deliveries []Delivery
}

// NewSender returns a sender for cfg.
func NewSender(cfg SenderConfig) (*Sender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sender{
		url: cfg.URL, sign: cfg.Sign, attempts: cfg.MaxAttempts, base: cfg.BaseBackoff,
		maxWait: cfg.MaxBackoff, timeout: cfg.Timeout, http: cfg.HTTPClient, now: cfg.Now, log: cfg.Logger,
	}
	if s.attempts == 0 {
		s.attempts = DefaultSendAttempts
	}
	if s.base == 0 {
		s.base = DefaultSendBackoff
	}
	if s.maxWait == 0 {
		s.maxWait = DefaultSendMaxWait
	}
	if s.timeout == 0 {
		s.timeout = DefaultSendTimeout
	}
	if s.http == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		s.http = &http.Client{Transport: t}
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Send delivers body as webhook id, retrying until a 2xx, until the
// attempts run out or until ctx is done. The delivery is also recorded for
// [Sender.Deliveries].
func (s *Sender) Send(ctx context.Context, id string, body []byte) Delivery {
	d := Delivery{ID: id}
	wait := s.base
	for n := 1; n <= s.attempts; n++ {
		a := s.attempt(ctx, id, body)
		d.Attempts = append(d.Attempts, a)
		d.StatusCode = a.StatusCode
		if a.StatusCode >= 200 && a.StatusCode < 300 {
			d.Delivered = true
			break
		}
		s.log.DebugContext(ctx, "webhook attempt failed", "id", id, "attempt", n, "status", a.StatusCode)
		if n == s.attempts {
			break
		}
		half := wait / 2
		pause := half + rand.N(wait-half+1)
		if !sleepCtx(ctx, pause) {
			break
		}
		wait = min(wait*2, s.maxWait)
	}
	if !d.Delivered {
		last := d.Attempts[len(d.Attempts)-1]
		d.Err = fmt.Errorf("providersim: webhook %s undelivered after %d attempts (last status %d%s)",
			id, len(d.Attempts), last.StatusCode, errSuffix(last.Err))
	}
	s.mu.Lock()
	s.deliveries = append(s.deliveries, d)
	s.mu.Unlock()
	return d
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

func (s *Sender) attempt(ctx context.Context, id string, body []byte) Attempt {
	at := s.now()
	start := time.Now()
	a := Attempt{At: at}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		a.Err = err.Error()
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	if s.sign != nil {
		h, err := s.sign(id, at, body)
		if err != nil {
			a.Err = "sign: " + err.Error()
			return a
		}
		for k, v := range h {
			req.Header[k] = v
		}
	}
	resp, err := s.http.Do(req)
	a.Duration = time.Since(start)
	if err != nil {
		a.Err = err.Error()
		return a
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	a.StatusCode = resp.StatusCode
	a.Body = string(answer)
	return a
}

// Deliveries returns a copy of every delivery this sender finished.
func (s *Sender) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.deliveries...)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
