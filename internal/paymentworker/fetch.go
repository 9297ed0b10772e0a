package paymentworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/pkg/queue"
)

// Errors of a [Fetcher].
var (
	// ErrNotFound means the provider has no such object: the ID was not
	// issued by it, so the message is acknowledged as not an effect
	// (fetch_not_found) and counted, never acted on and never paged on.
	ErrNotFound = errors.New("paymentworker: fetched object not found")
	// ErrFetch means the provider could not be read now; the message is
	// retried.
	ErrFetch = errors.New("paymentworker: fetch failed")
)

// Fetched is an object as its provider holds it now.
type Fetched struct {
	// Status is the object's status. It is part of the message's event
	// ID (id:status), not of the idempotency key: that is the source
	// and the effect key, the object's ID for the presets, so the
	// statuses of one object make one effect.
	Status string
	// Object is the provider's JSON for the object.
	Object json.RawMessage
	// Act says what the status asks of the worker.
	Act Act
}

// Act is what a fetched status asks of the worker.
type Act int

const (
	// ActCharge: the object reached a status to act on (Mollie: paid);
	// the worker applies its source's rule to the fetched object.
	ActCharge Act = iota
	// ActWait: the status is not settled (open, pending), or the read
	// lags the webhook; the message is retried, since the provider will
	// not ping again for the status it pinged about.
	ActWait
	// ActSkip: the status ends the object without an effect (failed,
	// canceled, expired); the message is acknowledged and counted.
	ActSkip
	// ActAwaitCapture: the payment is authorised and awaits a capture
	// that may come days later (Mollie's authorized); the message is
	// acknowledged and recorded, not retried: the provider pings again
	// at paid, expired or canceled. An authorisation is never acted on.
	ActAwaitCapture
)

// Fetcher reads an object whose webhook does not vouch for it (Mollie's
// is unsigned, PayPal signs only a CRC32 of the body) from its
// provider's API, so that the worker acts on what the provider says,
// never on the webhook's claim.
type Fetcher interface {
	Fetch(ctx context.Context, ref FetchRef) (Fetched, error)
}

// FetchRef is what an untrusted item says about the object to fetch.
// None of it is vouched for: a fetcher reads only an ID from it, checks
// the ID's shape, and trusts nothing but the provider's answer.
type FetchRef struct {
	// ID is the item's identity in the envelope (Mollie: the tr_ ID).
	ID string
	// Type is the provider's event type, or "".
	Type string
	// Item is the item as the provider sent it.
	Item json.RawMessage
}

// untrusted is the part of a preset's item envelope ([webhook.ItemEnvelope])
// that marks an item to fetch.
type untrusted struct {
	Provider string          `json:"provider"`
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Item     json.RawMessage `json:"item"`
	Fetch    bool            `json:"fetch"`
}

// fetchUntrusted replaces an untrusted item with the object its
// provider holds: the body becomes {"provider", "id", "status", "item":
// the fetched object} and the event ID the object's ID and fetched
// status, so that each status change is one event and a repeated ping
// none (the effect key, the object's ID, makes all of one object's
// events one effect). A message that is not untrusted is returned as it
// is. A non-nil outcome ends the message without a charge: retried when
// the provider could not be read, acknowledged as not an effect when it
// has no such object.
func (w *Worker) fetchUntrusted(ctx context.Context, m events.SQSMessage) (events.SQSMessage, *outcome) {
	payload, err := queue.Payload(m) // one that does not decode is dead-lettered as malformed
	if err != nil || !strings.Contains(payload, `"fetch":true`) {
		return m, nil
	}
	var u untrusted
	if err := json.Unmarshal([]byte(payload), &u); err != nil || !u.Fetch {
		return m, nil
	}
	f := w.cfg.Fetchers[u.Provider]
	if f == nil {
		return m, &outcome{name: "dead_lettered", reason: "malformed_message: no fetcher for provider " + u.Provider}
	}
	got, err := f.Fetch(ctx, FetchRef{ID: u.ID, Type: u.Type, Item: u.Item})
	switch {
	case errors.Is(err, ErrNotFound):
		// Anyone can send an ID: one the provider never issued is no
		// effect, counted, and no page.
		return m, &outcome{name: "not_an_effect", ok: true, reason: "fetch_not_found: " + u.Provider + " has no such object"}
	case err != nil:
		return m, &outcome{name: "retry", reason: "fetch_unavailable", retry: w.backoff(receiveCount(m))}
	case got.Act == ActWait:
		return m, &outcome{name: "retry", reason: "fetched_status_" + got.Status, retry: w.backoff(receiveCount(m))}
	case got.Act == ActSkip:
		return m, &outcome{name: "not_an_effect", ok: true, reason: "fetched_status: " + got.Status}
	case got.Act == ActAwaitCapture:
		// A capture can come days later, and the provider pings again
		// then: nothing to retry.
		return m, &outcome{name: "not_an_effect", ok: true, reason: "awaiting_capture: " + got.Status}
	}
	body, err := json.Marshal(struct {
		Provider string          `json:"provider"`
		ID       string          `json:"id"`
		Type     string          `json:"type,omitempty"`
		Status   string          `json:"status"`
		Item     json.RawMessage `json:"item"`
	}{u.Provider, u.ID, u.Type, got.Status, got.Object})
	if err != nil {
		return m, &outcome{name: "dead_lettered", reason: "malformed_message: fetched object is not JSON"}
	}
	out := m
	out.Body = string(body)
	out.MessageAttributes = make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes))
	for k, v := range m.MessageAttributes {
		out.MessageAttributes[k] = v
	}
	delete(out.MessageAttributes, queue.BodyEncodingAttribute) // the body is the fetched object, as it is
	eventID := u.ID + ":" + got.Status
	out.MessageAttributes["event_id"] = events.SQSMessageAttribute{DataType: "String", StringValue: &eventID}
	return out, nil
}

// MollieClient fetches payments from Mollie's API, GET /v2/payments/{id},
// with a bounded wait.
type MollieClient struct {
	// BaseURL is https://api.mollie.com, or a double's URL.
	BaseURL string
	// APIKey is the Mollie API key (live_... or test_...). Never log it.
	APIKey string
	// HTTP is the client; nil means one with Timeout.
	HTTP *http.Client
	// Timeout bounds one fetch; zero means 5 s.
	Timeout time.Duration
}

var _ Fetcher = (*MollieClient)(nil)

// mollieID is the shape of a Mollie payment ID.
var mollieID = regexp.MustCompile(`^tr_[A-Za-z0-9]{1,64}$`)

// Fetch reads the payment ref.ID.
func (c *MollieClient) Fetch(ctx context.Context, ref FetchRef) (Fetched, error) {
	id := ref.ID
	if !mollieID.MatchString(id) {
		return Fetched{}, fmt.Errorf("mollie payment %q: %w", id, ErrNotFound)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.BaseURL, "/")+"/v2/payments/"+url.PathEscape(id), nil)
	if err != nil {
		return Fetched{}, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.APIKey)
	client := c.HTTP
	if client == nil {
		client = &http.Client{Timeout: timeout}
	}
	res, err := client.Do(req)
	if err != nil {
		return Fetched{}, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	switch {
	case err != nil:
		return Fetched{}, fmt.Errorf("%w: read: %w", ErrFetch, err)
	case res.StatusCode == http.StatusNotFound:
		return Fetched{}, fmt.Errorf("mollie payment %s: %w", id, ErrNotFound)
	case res.StatusCode != http.StatusOK:
		return Fetched{}, fmt.Errorf("%w: mollie answered %d", ErrFetch, res.StatusCode)
	}
	var p struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(data, &p); err != nil || p.ID != id || p.Status == "" {
		return Fetched{}, fmt.Errorf("%w: mollie payment %s: not a payment with a status", ErrFetch, id)
	}
	return Fetched{Status: p.Status, Object: data, Act: mollieAct(p.Status)}, nil
}

// mollieAct is what each Mollie payment status asks of the worker.
func mollieAct(status string) Act {
	switch status {
	case "paid":
		return ActCharge
	case "authorized":
		return ActAwaitCapture
	case "failed", "canceled", "expired":
		return ActSkip
	}
	return ActWait // open, pending, or a status added later
}
