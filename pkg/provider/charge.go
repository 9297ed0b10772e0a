package provider

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
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
	// Description is shown on the provider's charge (optional). It does
	// not identify the charge: payload hashes and [Match] leave it out.
	Description string `json:"description,omitempty"`
	// Reference names the attempt for people (source, event ID and
	// attempt), since the idempotency key is a hash. It identifies
	// nothing: payload hashes and [Match] leave it out, and no lookup
	// searches it.
	Reference string `json:"reference,omitempty"`
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

// Canonical returns r in the form that identifies a charge: the currency
// in lower case and surrounding spaces trimmed. Two requests are the same
// charge when their canonical forms are equal; payload hashes and the
// comparison of a charge found by lookup both use it, so a provider that
// normalises fields ("USD" comes back as "usd") is not taken for a
// different charge.
func (r ChargeRequest) Canonical() ChargeRequest {
	r.EventID = strings.TrimSpace(r.EventID)
	r.Customer = strings.TrimSpace(r.Customer)
	r.Currency = strings.ToLower(strings.TrimSpace(r.Currency))
	return r
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
	// Retriable: the provider proved it did not execute the request (a 429,
	// or the connection could not be opened) and retries ran out. Nothing
	// was charged by this call.
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
	// Charge is the provider's charge object. It is never nil for
	// [Succeeded] and [Declined]: a decline answered with an error object
	// instead of a charge gets one made from the error and the request.
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

// CreateCharge sends the charge with key as its Idempotency-Key. It sends
// again, with the same key and backoff, only after an answer that proves
// the provider did not execute the request ([Retriable]: a 429, a refused
// connection), up to MaxAttempts; a Retry-After longer than MaxBackoff or
// than the time left before ctx's deadline ends the call at once.
//
// Every ambiguous answer (a timeout, a dropped connection, a 408, 409 or
// 5xx, an unreadable body) ends the call with [Unknown]: the charge may
// exist. Whether it does is for [Client.LookupCharge] to tell, once the
// provider can no longer commit it (see docs/provider-contract.md). Sending
// it again before then could charge twice.
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
		res = c.chargeAttempt(ctx, r, req)
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

// MaxKeyLen is the longest idempotency key a charge may carry: Stripe's
// documented limit, which hookline's provider API shares.
const MaxKeyLen = 255

func validateCharge(key string, req ChargeRequest) error {
	err := req.Validate()
	if key == "" {
		err = errors.Join(errors.New("idempotency key is empty"), err)
	}
	if len(key) > MaxKeyLen {
		err = errors.Join(fmt.Errorf("idempotency key is %d characters, at most %d are allowed", len(key), MaxKeyLen), err)
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
func (c *Client) chargeAttempt(ctx context.Context, r request, req ChargeRequest) Result {
	resp, err := send(ctx, c.http, c.policy.timeout, r)
	if err != nil {
		if notSent(err) {
			return Result{Outcome: Retriable, Err: fmt.Errorf("%w: %w", ErrRetriable, err)}
		}
		return Result{Outcome: Unknown, Err: fmt.Errorf("%w: %w", ErrUnknownOutcome, err)}
	}
	return classify(resp, req, time.Now())
}

// classify maps one HTTP response of POST /v1/charges for req to a
// [Result].
func classify(resp response, req ChargeRequest, now time.Time) Result {
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
		res.Charge = declinedCharge(resp.body, req)
		res.Err = declineErr(res.Charge)
		return res
	case notExecuted(resp.status):
		res.Outcome = Retriable
		res.RetryAfter = retryAfter(resp.header, now)
		res.Err = fmt.Errorf("%w: status %d%s", ErrRetriable, resp.status, errorType(resp.body))
		return res
	case ambiguous(resp.status):
		res.Outcome = Unknown
		res.RetryAfter = retryAfter(resp.header, now)
		res.Err = fmt.Errorf("%w: status %d%s", ErrUnknownOutcome, resp.status, errorType(resp.body))
		return res
	case resp.status >= 300 && resp.status < 500:
		res.Outcome = Rejected
		res.Err = fmt.Errorf("%w: status %d%s", ErrRejected, resp.status, errorType(resp.body))
		if isKeyConflict(resp.body) {
			res.Err = fmt.Errorf("%w: %w: status %d", ErrRejected, ErrKeyConflict, resp.status)
		}
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

// declinedCharge returns the charge a 402 declined: the body's charge
// object, or one made from a Stripe-style error object
// ({"error":{"type":"card_error","decline_code":...,"charge":"ch_..."}})
// and the request, or from the request alone when the body says nothing.
func declinedCharge(body []byte, req ChargeRequest) *Charge {
	if ch, err := decodeCharge(body); err == nil {
		return ch
	}
	e := errorObject(body)
	return &Charge{
		ID:          e.Charge,
		Status:      StatusDeclined,
		Amount:      req.Amount,
		Currency:    req.Currency,
		Customer:    req.Customer,
		EventID:     req.EventID,
		DeclineCode: cmp.Or(e.DeclineCode, e.Code),
	}
}

// apiError is the error object of a provider's error body.
type apiError struct {
	Type        string `json:"type"`
	Code        string `json:"code"`
	DeclineCode string `json:"decline_code"`
	Charge      string `json:"charge"`
}

// errorObject decodes {"error":{...}}; a body without one gives zero.
func errorObject(body []byte) apiError {
	var e struct {
		Error apiError `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Error
}

// isKeyConflict reports a body saying the idempotency key was used with
// other parameters.
func isKeyConflict(body []byte) bool {
	e := errorObject(body)
	return e.Type == "idempotency_error" && e.Code != "idempotency_key_in_use"
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
	e := errorObject(body)
	switch {
	case e.Type == "":
		return ""
	case e.Code != "":
		return fmt.Sprintf(" (%s: %s)", e.Type, e.Code)
	default:
		return fmt.Sprintf(" (%s)", e.Type)
	}
}

// LookupCharge returns the charge made with key, and whether one exists.
// Lookups have no effect, so it also retries network failures and timeouts.
// A charge that was made with key but for another event is returned as
// found; [Match] checks that.
//
// "Not found" is only an answer once the provider can no longer commit a
// request sent with key and its lookup has caught up: a provider's lookup
// may lag its commits (docs/provider-contract.md).
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
	case retryableRead(resp.status):
		return nil, false, retryAfter(resp.header, time.Now()),
			fmt.Errorf("%w: status %d", ErrRetriable, resp.status)
	default:
		return nil, false, 0, fmt.Errorf("%w: status %d%s", ErrRejected, resp.status, errorType(resp.body))
	}
}

// Match classifies a charge found by lookup for req: [Succeeded] or
// [Declined] when it is req's charge (compared in canonical form, see
// [ChargeRequest.Canonical]), [Unknown] while it is still pending, and
// [Rejected] with [ErrKeyConflict] when the key was used for another
// event, amount, currency or customer.
func Match(key string, req ChargeRequest, ch *Charge) Result {
	res := Result{Charge: ch, StatusCode: http.StatusOK}
	want := req.Canonical()
	got := ChargeRequest{EventID: ch.EventID, Customer: ch.Customer, Amount: ch.Amount, Currency: ch.Currency}.Canonical()
	if got.EventID != want.EventID || got.Amount != want.Amount ||
		(got.Currency != "" && got.Currency != want.Currency) || (got.Customer != "" && got.Customer != want.Customer) {
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
