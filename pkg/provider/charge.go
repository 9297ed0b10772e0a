package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Charge statuses in a provider response body.
const (
	StatusSucceeded = "succeeded"
	StatusDeclined  = "declined"
)

// ChargeRequest is the body of POST /v1/charges.
type ChargeRequest struct {
	EventID  string `json:"event_id"`
	Customer string `json:"customer"`
	// Amount is in minor units (cents).
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

// Validate reports every missing or bad field at once.
func (r ChargeRequest) Validate() error {
	var errs []error
	if r.EventID == "" {
		errs = append(errs, errors.New("event_id is empty"))
	}
	if r.Customer == "" {
		errs = append(errs, errors.New("customer is empty"))
	}
	if r.Currency == "" {
		errs = append(errs, errors.New("currency is empty"))
	}
	if r.Amount <= 0 {
		errs = append(errs, errors.New("amount is not positive"))
	}
	return errors.Join(errs...)
}

// Charge is a charge object as the provider returns it.
type Charge struct {
	ID             string `json:"id"`
	Status         string `json:"status"`
	Amount         int64  `json:"amount"`
	Currency       string `json:"currency,omitempty"`
	Customer       string `json:"customer,omitempty"`
	IdempotencyKey string `json:"idempotency_key"`
	EventID        string `json:"event_id"`
	DeclineCode    string `json:"decline_code,omitempty"`
}

// Outcome classifies the result of a charge call.
type Outcome int

// Outcomes. The zero value is [Unknown], the only safe assumption about a
// call nobody classified.
const (
	// Unknown: the charge may or may not exist. Call [Client.LookupCharge]
	// with the same key before sending it again.
	Unknown Outcome = iota
	// Succeeded: the charge exists and succeeded. Final.
	Succeeded
	// Declined: the charge was declined. Final.
	Declined
	// Rejected: the provider refused the request itself (bad request, bad
	// credentials, idempotency key reused with other parameters). Final;
	// sending it again cannot help.
	Rejected
	// Retriable: the provider did not complete the request or asked to be
	// called again; retries ran out. Safe to send again with the same key.
	Retriable
)

func (o Outcome) String() string {
	switch o {
	case Succeeded:
		return "succeeded"
	case Declined:
		return "declined"
	case Rejected:
		return "rejected"
	case Retriable:
		return "retriable"
	default:
		return "unknown"
	}
}

// Final reports whether o settles the charge: [Succeeded] or [Declined].
func (o Outcome) Final() bool { return o == Succeeded || o == Declined }

// Result is the classified result of a charge call.
type Result struct {
	Outcome Outcome
	// Charge is the provider's charge object, when the response had one.
	Charge *Charge
	// Err explains every outcome but [Succeeded]. It wraps [ErrDeclined],
	// [ErrRejected], [ErrRetriable] or [ErrUnknownOutcome].
	Err error
	// StatusCode is the last HTTP status, 0 when no response arrived.
	StatusCode int
	// RetryAfter is the last wait the provider asked for, 0 if none.
	RetryAfter time.Duration
	// Attempts counts the requests sent by this call.
	Attempts int
}

// CreateCharge sends the charge with key as its Idempotency-Key. It retries
// [Retriable] responses with backoff, always with the same key, up to
// MaxAttempts; a Retry-After longer than MaxBackoff or than the time left
// before ctx's deadline ends the call at once with [Retriable].
//
// It never re-sends after an [Unknown] result. The caller must call
// [Client.LookupCharge] with the same key before sending the charge again,
// or use [Client.ChargeOnce].
func (c *Client) CreateCharge(ctx context.Context, key string, req ChargeRequest) Result {
	if err := validateCharge(key, req); err != nil {
		return Result{Outcome: Rejected, Err: err}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return Result{Outcome: Rejected, Err: fmt.Errorf("%w: encode: %w", ErrInvalidRequest, err)}
	}
	r := request{method: http.MethodPost, url: c.baseURL + "/v1/charges", body: body, header: c.header(key)}
	var res Result
	for attempt := 1; ; attempt++ {
		res = c.chargeAttempt(ctx, r)
		res.Attempts = attempt
		if res.Outcome != Retriable || attempt >= c.policy.maxAttempts {
			break
		}
		d, ok := c.policy.wait(ctx, attempt, res.RetryAfter)
		if !ok {
			break
		}
		c.log.DebugContext(ctx, "provider charge retry", "key", key, "attempt", attempt,
			"status", res.StatusCode, "wait", d)
		if sleep(ctx, d) != nil {
			break
		}
	}
	if res.Err != nil {
		res.Err = fmt.Errorf("charge %s: %w", key, res.Err)
	}
	return res
}

func validateCharge(key string, req ChargeRequest) error {
	err := req.Validate()
	if key == "" {
		err = errors.Join(errors.New("idempotency key is empty"), err)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return nil
}

func (c *Client) header(key string) http.Header {
	h := http.Header{}
	h.Set("Accept", "application/json")
	if key != "" {
		h.Set("Idempotency-Key", key)
		h.Set("Content-Type", "application/json")
	}
	if c.apiKey != "" {
		h.Set("Authorization", "Bearer "+c.apiKey)
	}
	return h
}

// chargeAttempt sends one request and classifies what came back.
func (c *Client) chargeAttempt(ctx context.Context, r request) Result {
	resp, err := send(ctx, c.http, c.policy.timeout, r)
	if err != nil {
		if notSent(err) {
			return Result{Outcome: Retriable, Err: fmt.Errorf("%w: %w", ErrRetriable, err)}
		}
		return Result{Outcome: Unknown, Err: fmt.Errorf("%w: %w", ErrUnknownOutcome, err)}
	}
	return classify(resp, time.Now())
}

// classify maps one HTTP response of POST /v1/charges to a [Result].
func classify(resp response, now time.Time) Result {
	res := Result{StatusCode: resp.status}
	switch {
	case resp.status >= 200 && resp.status < 300:
		ch, err := decodeCharge(resp.body)
		if err != nil {
			// The provider accepted something, but we cannot tell what.
			res.Outcome = Unknown
			res.Err = fmt.Errorf("%w: status %d: %w", ErrUnknownOutcome, resp.status, err)
			return res
		}
		res.Charge = ch
		return settle(res)
	case resp.status == http.StatusPaymentRequired:
		res.Outcome = Declined
		if ch, err := decodeCharge(resp.body); err == nil {
			res.Charge = ch
		}
		res.Err = declineErr(res.Charge)
		return res
	case transient(resp.status):
		res.Outcome = Retriable
		res.RetryAfter = retryAfter(resp.header, now)
		res.Err = fmt.Errorf("%w: status %d%s", ErrRetriable, resp.status, errorType(resp.body))
		return res
	case resp.status >= 300 && resp.status < 500:
		res.Outcome = Rejected
		res.Err = fmt.Errorf("%w: status %d%s", ErrRejected, resp.status, errorType(resp.body))
		return res
	default:
		res.Outcome = Unknown
		res.Err = fmt.Errorf("%w: unexpected status %d", ErrUnknownOutcome, resp.status)
		return res
	}
}

// settle classifies a result that carries a charge by the charge's status.
func settle(res Result) Result {
	switch res.Charge.Status {
	case StatusSucceeded:
		res.Outcome = Succeeded
		res.Err = nil
	case StatusDeclined:
		res.Outcome = Declined
		res.Err = declineErr(res.Charge)
	default:
		// For example "pending": not settled yet, so look it up later.
		res.Outcome = Unknown
		res.Err = fmt.Errorf("%w: charge %s has status %q", ErrUnknownOutcome, res.Charge.ID, res.Charge.Status)
	}
	return res
}

func declineErr(ch *Charge) error {
	if ch == nil || ch.DeclineCode == "" {
		return ErrDeclined
	}
	return fmt.Errorf("%w: %s", ErrDeclined, ch.DeclineCode)
}

func decodeCharge(body []byte) (*Charge, error) {
	var ch Charge
	if err := json.Unmarshal(body, &ch); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadResponse, err)
	}
	if ch.ID == "" || ch.Status == "" {
		return nil, fmt.Errorf("%w: charge without id or status", ErrBadResponse)
	}
	return &ch, nil
}

// errorType extracts the provider's error type from a body shaped like
// {"error":{"type":"..."}}, for error messages. It never returns the
// provider's free-text message.
func errorType(body []byte) string {
	var e struct {
		Error struct {
			Type string `json:"type"`
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Type == "" {
		return ""
	}
	if e.Error.Code != "" {
		return fmt.Sprintf(" (%s: %s)", e.Error.Type, e.Error.Code)
	}
	return fmt.Sprintf(" (%s)", e.Error.Type)
}

// LookupCharge returns the charge made with key, and whether one exists.
// Lookups have no effect, so it also retries network failures and timeouts.
// A charge that was made with key but for another event is returned as
// found; [Client.ChargeOnce] checks that.
func (c *Client) LookupCharge(ctx context.Context, key string) (*Charge, bool, error) {
	if key == "" {
		return nil, false, fmt.Errorf("%w: idempotency key is empty", ErrInvalidRequest)
	}
	r := request{
		method: http.MethodGet,
		url:    c.baseURL + "/v1/charges?" + url.Values{"idempotency_key": {key}}.Encode(),
		header: c.header(""),
	}
	var last error
	for attempt := 1; ; attempt++ {
		ch, found, asked, err := c.lookupAttempt(ctx, r)
		if err == nil {
			return ch, found, nil
		}
		last = err
		if !IsRetriable(err) || attempt >= c.policy.maxAttempts {
			break
		}
		d, ok := c.policy.wait(ctx, attempt, asked)
		if !ok || sleep(ctx, d) != nil {
			break
		}
	}
	return nil, false, fmt.Errorf("lookup charge %s: %w", key, last)
}

func (c *Client) lookupAttempt(ctx context.Context, r request) (*Charge, bool, time.Duration, error) {
	resp, err := send(ctx, c.http, c.policy.timeout, r)
	switch {
	case err != nil:
		return nil, false, 0, fmt.Errorf("%w: %w", ErrRetriable, err)
	case resp.status == http.StatusOK:
		ch, err := decodeCharge(resp.body)
		if err != nil {
			return nil, false, 0, err
		}
		return ch, true, 0, nil
	case resp.status == http.StatusNotFound:
		return nil, false, 0, nil
	case transient(resp.status):
		return nil, false, retryAfter(resp.header, time.Now()),
			fmt.Errorf("%w: status %d", ErrRetriable, resp.status)
	default:
		return nil, false, 0, fmt.Errorf("%w: status %d%s", ErrRejected, resp.status, errorType(resp.body))
	}
}

// ChargeOnce charges at most once under key, which is what a payment worker
// needs. It calls [Client.CreateCharge]; on [Unknown] it looks the charge up
// and returns it if one exists, and only if none exists sends the charge
// again with the same key. It gives up after MaxAttempts rounds and then
// returns the last [Unknown] result.
//
// The lookup-then-resend step is safe when the provider honours idempotency
// keys, or when it has finished with the earlier attempt before the lookup.
// A provider that does neither can still charge twice; that is why the
// caller claims the key in its own registry before calling.
//
// A charge found under key but made for another event or amount yields
// [Rejected] with [ErrKeyConflict] and the found charge.
func (c *Client) ChargeOnce(ctx context.Context, key string, req ChargeRequest) Result {
	var res Result
	attempts := 0
	for round := 1; round <= c.policy.maxAttempts; round++ {
		res = c.CreateCharge(ctx, key, req)
		attempts += res.Attempts
		res.Attempts = attempts
		if res.Outcome != Unknown {
			return res
		}
		ch, found, err := c.LookupCharge(ctx, key)
		if err != nil {
			res.Err = errors.Join(res.Err, err)
			return res
		}
		if found {
			return fromLookup(key, req, ch, attempts)
		}
		c.log.InfoContext(ctx, "provider charge outcome unknown and no charge found; sending again",
			"key", key, "round", round)
	}
	return res
}

func fromLookup(key string, req ChargeRequest, ch *Charge, attempts int) Result {
	res := Result{Charge: ch, StatusCode: http.StatusOK, Attempts: attempts}
	if ch.EventID != req.EventID || ch.Amount != req.Amount ||
		(ch.Currency != "" && ch.Currency != req.Currency) || (ch.Customer != "" && ch.Customer != req.Customer) {
		res.Outcome = Rejected
		res.Err = fmt.Errorf("charge %s: %w: found %s for event %s", key, ErrKeyConflict, ch.ID, ch.EventID)
		return res
	}
	res = settle(res)
	if res.Err != nil {
		res.Err = fmt.Errorf("charge %s: %w", key, res.Err)
	}
	return res
}
