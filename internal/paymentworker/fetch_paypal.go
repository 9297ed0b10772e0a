package paymentworker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// PayPalClient fetches what a PayPal webhook names from PayPal's REST
// API, since PayPal signs only a CRC32 of the body and anyone holding one
// genuine delivery can write another body under its signature. It reads
// only the event_type and resource.id of the item: a
// PAYMENT.CAPTURE.COMPLETED is fetched as GET /v2/payments/captures/{id},
// a PAYMENT.SALE.COMPLETED as GET /v1/payments/sale/{id}, and any other
// event is no effect, with no call. It authenticates with OAuth2 client
// credentials (POST /v1/oauth2/token), keeps the token until shortly
// before it expires, and asks for a new one once when PayPal answers 401.
// One fetch, token included, is bounded by Timeout.
type PayPalClient struct {
	// BaseURL is https://api-m.paypal.com (or the sandbox's), or a
	// double's URL.
	BaseURL string
	// ClientID and ClientSecret are the REST app's credentials. Never log
	// the secret, nor the token they buy.
	ClientID     string
	ClientSecret string
	// HTTP is the client; nil means one with Timeout.
	HTTP *http.Client
	// Timeout bounds one fetch; zero means 5 s.
	Timeout time.Duration
	// Now is the clock the token's expiry is read on; nil means
	// time.Now.
	Now func() time.Time

	mu      sync.Mutex
	token   string
	expires time.Time
}

var _ Fetcher = (*PayPalClient)(nil)

// paypalID is the shape of a PayPal capture or sale ID.
var paypalID = regexp.MustCompile(`^[A-Z0-9]{1,64}$`)

// paypalObject is what each PayPal event type is fetched as: the path of
// the object, and the member of its answer that holds its status (v1
// sales call it state, in lower case).
type paypalObject struct {
	path, status string
}

// paypalEffects are the events whose object is fetched; every other
// event is no effect.
var paypalEffects = map[string]paypalObject{
	"PAYMENT.CAPTURE.COMPLETED": {path: "/v2/payments/captures/", status: "status"},
	"PAYMENT.SALE.COMPLETED":    {path: "/v1/payments/sale/", status: "state"},
}

// Fetch reads the capture or sale that ref.Item's resource.id names.
func (c *PayPalClient) Fetch(ctx context.Context, ref FetchRef) (Fetched, error) {
	var ev struct {
		EventType string `json:"event_type"`
		Resource  struct {
			ID string `json:"id"`
		} `json:"resource"`
	}
	if err := json.Unmarshal(ref.Item, &ev); err != nil {
		return Fetched{}, fmt.Errorf("paypal event %s: %w", ref.ID, ErrNotFound)
	}
	obj, ok := paypalEffects[ev.EventType]
	if !ok {
		return Fetched{Status: StatusNotAnEffect, Act: ActSkip}, nil
	}
	id := ev.Resource.ID
	data, err := fetchObject(ctx, apiClient{c.BaseURL, c.HTTP, c.Timeout}, "paypal", paypalID, obj.path, id, c.get)
	if err != nil {
		return Fetched{}, err
	}
	var answer map[string]json.RawMessage
	var got, state string
	if json.Unmarshal(data, &answer) != nil || json.Unmarshal(answer["id"], &got) != nil ||
		json.Unmarshal(answer[obj.status], &state) != nil || got != id || state == "" {
		return Fetched{}, fmt.Errorf("%w: paypal %s%s: not the object asked for, with a %s", ErrFetch, obj.path, id, obj.status)
	}
	state = strings.ToUpper(state)
	return Fetched{Status: state, Object: data, Act: paypalAct(state)}, nil
}

// paypalAct is what each capture status (or sale state, upper-cased)
// asks of the worker.
func paypalAct(status string) Act {
	switch status {
	case "COMPLETED":
		return ActCharge
	case "DECLINED", "DENIED", "FAILED", "REFUNDED", "PARTIALLY_REFUNDED", "REVERSED":
		return ActSkip
	}
	return ActWait // PENDING, or a status added later
}

// get GETs u with a bearer token, and once more with a new token when
// PayPal answers 401 (the token expired or was revoked early).
func (c *PayPalClient) get(ctx context.Context, hc *http.Client, u string) (int, []byte, error) {
	stale := ""
	for {
		token, err := c.bearer(ctx, hc, stale)
		if err != nil {
			return 0, nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return 0, nil, fmt.Errorf("%w: %w", ErrFetch, err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "application/json")
		status, data, err := call(hc, req)
		if err != nil || status != http.StatusUnauthorized || stale != "" {
			return status, data, err
		}
		stale = token
	}
}

// bearer returns the cached token, or a new one when there is none, it
// is about to expire, or it is stale (PayPal refused it). Concurrent
// fetches wait for one token request.
func (c *PayPalClient) bearer(ctx context.Context, hc *http.Client, stale string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.token != "" && c.token != stale && now.Before(c.expires) {
		return c.token, nil
	}
	c.token = ""
	form := url.Values{"grant_type": {"client_credentials"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.BaseURL, "/")+"/v1/oauth2/token", strings.NewReader(form))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrFetch, err)
	}
	req.SetBasicAuth(c.ClientID, c.ClientSecret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	status, data, err := call(hc, req)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("%w: paypal's token endpoint answered %d", ErrFetch, status)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if json.Unmarshal(data, &tok) != nil || tok.AccessToken == "" || tok.ExpiresIn <= 0 {
		return "", fmt.Errorf("%w: paypal's token endpoint answered no token with a lifetime", ErrFetch)
	}
	// Renew a tenth of its life early, a minute at the most, so that a
	// token never expires between this check and PayPal's.
	life := time.Duration(min(tok.ExpiresIn, int64(24*time.Hour/time.Second))) * time.Second
	c.token, c.expires = tok.AccessToken, now.Add(life-min(life/10, time.Minute))
	return c.token, nil
}

func (c *PayPalClient) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
