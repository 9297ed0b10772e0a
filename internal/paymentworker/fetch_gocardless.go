package paymentworker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"time"
)

// GoCardlessClient fetches the payment of a GoCardless payments.confirmed
// event from GoCardless's API, GET /payments/{links.payment}, since
// GoCardless's events carry no amount. Any other event is no effect,
// with no call. The fetched object is the payment itself (its id, amount
// in minor units, currency, status, links and metadata), not the
// {"payments": ...} wrapper it comes in.
type GoCardlessClient struct {
	// BaseURL is https://api.gocardless.com (or the sandbox's), or a
	// double's URL.
	BaseURL string
	// AccessToken is a GoCardless access token that may read payments.
	// Never log it.
	AccessToken string
	// HTTP is the client; nil means one with Timeout.
	HTTP *http.Client
	// Timeout bounds one fetch; zero means 5 s.
	Timeout time.Duration
}

var _ Fetcher = (*GoCardlessClient)(nil)

// GoCardlessVersion is the API version the client asks for.
const GoCardlessVersion = "2015-07-06"

// gocardlessPaymentID is the shape of a GoCardless payment ID.
var gocardlessPaymentID = regexp.MustCompile(`^PM[0-9A-Z]{1,64}$`)

// Fetch reads the payment that ref.Item's links.payment names, for a
// payments.confirmed event (the preset's type: resource_type and action
// joined by a dot).
func (c *GoCardlessClient) Fetch(ctx context.Context, ref FetchRef) (Fetched, error) {
	var ev struct {
		ResourceType string `json:"resource_type"`
		Action       string `json:"action"`
		Links        struct {
			Payment string `json:"payment"`
		} `json:"links"`
	}
	if err := json.Unmarshal(ref.Item, &ev); err != nil {
		return Fetched{}, fmt.Errorf("gocardless event %s: %w", ref.ID, ErrNotFound)
	}
	if ev.ResourceType+"."+ev.Action != "payments.confirmed" {
		return Fetched{Status: StatusNotAnEffect, Act: ActSkip}, nil
	}
	id := ev.Links.Payment
	data, err := fetchObject(ctx, apiClient{c.BaseURL, c.HTTP, c.Timeout}, "gocardless", gocardlessPaymentID, "/payments/", id, c.get)
	if err != nil {
		return Fetched{}, err
	}
	var answer struct {
		Payments json.RawMessage `json:"payments"`
	}
	var p struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if json.Unmarshal(data, &answer) != nil || json.Unmarshal(answer.Payments, &p) != nil || p.ID != id || p.Status == "" {
		return Fetched{}, fmt.Errorf("%w: gocardless payment %s: not the payment asked for, with a status", ErrFetch, id)
	}
	return Fetched{Status: p.Status, Object: answer.Payments, Act: gocardlessAct(p.Status)}, nil
}

// gocardlessAct is what each GoCardless payment status asks of the
// worker.
func gocardlessAct(status string) Act {
	switch status {
	case "confirmed", "paid_out":
		return ActCharge
	case "failed", "cancelled", "customer_approval_denied", "charged_back":
		return ActSkip
	}
	return ActWait // pending_submission, submitted, pending_customer_approval, or one added later
}

// get GETs u with the access token and the API version.
func (c *GoCardlessClient) get(ctx context.Context, hc *http.Client, u string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.AccessToken)
	req.Header.Set("GoCardless-Version", GoCardlessVersion)
	req.Header.Set("Accept", "application/json")
	return call(hc, req)
}
