package stripecharge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/stripe/stripe-go/v84"

	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/pkg/provider"
)

// Metadata keys stored on the PaymentIntents the adapter creates.
const (
	// MetadataKey holds the provider key ([paymentworker.ProviderKey]),
	// which [Client.LookupCharge] searches for.
	MetadataKey = "hookline_pkey"
	// MetadataLegacyKey holds a key of the encoding before the hash
	// ([paymentworker.LegacyProviderKey]): intents created before it carry
	// their key here, and lookups of such keys search this field.
	MetadataLegacyKey = "hookline_key"
	// MetadataReference is the attempt in a form people read
	// ([provider.ChargeRequest.Reference]); nothing searches it.
	MetadataReference = "hookline_ref"
	MetadataEventID   = "event_id"
)

// MaxKeyLen is the longest Idempotency-Key Stripe takes.
const MaxKeyLen = provider.MaxKeyLen

// DefaultURL is Stripe's API.
const DefaultURL = "https://api.stripe.com"

// Errors of the adapter. Each result's Err also wraps the provider
// category ([provider.ErrRejected], ...), so the worker reads it as it
// reads the generic client's.
var (
	// ErrNoPaymentMethod means the customer has no default payment method
	// (invoice_settings.default_payment_method or default_source).
	ErrNoPaymentMethod = errors.New("stripecharge: customer has no default payment method")
	// ErrNoAPIKey means [Config.APIKey] is empty.
	ErrNoAPIKey = errors.New("stripecharge: an API key is required")
)

// Config configures a [Client].
type Config struct {
	// APIKey is the Stripe secret key. It is sent to Stripe only and never
	// logged.
	APIKey string
	// URL is the API's base URL: [DefaultURL] unless a test points it at
	// stripe-mock or a fake.
	URL string
	// HTTPClient sends the requests (default: a client with Timeout).
	HTTPClient *http.Client
	// Timeout bounds one request when HTTPClient is nil (default 10s).
	// A charge call's own deadline comes from its context.
	Timeout time.Duration
	Logger  *slog.Logger
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if c.APIKey == "" {
		errs = append(errs, ErrNoAPIKey)
	}
	if c.URL != "" && !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
		errs = append(errs, fmt.Errorf("stripecharge: URL %q is not http(s)", c.URL))
	}
	return errors.Join(errs...)
}

// Client is a [paymentworker.Charger] on Stripe PaymentIntents.
type Client struct {
	sc  *stripe.Client
	log *slog.Logger
}

var _ paymentworker.Charger = (*Client)(nil)

// New validates cfg and builds a Client. The stripe-go client is built
// with no retries of its own: a charge is sent once per call, and what
// happens after an ambiguous answer is the worker's decision.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: cmp.Or(cfg.Timeout, 10*time.Second)}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	url := cmp.Or(strings.TrimSuffix(cfg.URL, "/"), DefaultURL)
	backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(url),
		HTTPClient:        hc,
		MaxNetworkRetries: stripe.Int64(0),
		EnableTelemetry:   stripe.Bool(false),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	return &Client{sc: stripe.NewClient(cfg.APIKey, stripe.WithBackends(backends)), log: log}, nil
}

// CreateCharge creates and confirms a PaymentIntent for req with key as
// its Idempotency-Key. It first reads the customer's default payment
// method; that read has no effect, so a failure of it is
// [provider.Retriable] (nothing was charged). See the package doc for how
// Stripe's answers map onto outcomes.
func (c *Client) CreateCharge(ctx context.Context, key string, req provider.ChargeRequest) provider.Result {
	if err := validate(key, req); err != nil {
		return provider.Result{Outcome: provider.Rejected, Err: err}
	}
	pm, res, ok := c.paymentMethod(ctx, key, req.Customer)
	if !ok {
		return res
	}
	canon := req.Canonical()
	params := &stripe.PaymentIntentCreateParams{
		Amount:        stripe.Int64(req.Amount),
		Currency:      stripe.String(canon.Currency),
		Customer:      stripe.String(canon.Customer),
		PaymentMethod: stripe.String(pm),
		Confirm:       stripe.Bool(true),
		OffSession:    stripe.Bool(true),
	}
	if req.Description != "" {
		params.Description = stripe.String(req.Description)
	}
	params.SetIdempotencyKey(key)
	params.AddMetadata(metadataField(key), key)
	params.AddMetadata(MetadataEventID, req.EventID)
	if req.Reference != "" {
		params.AddMetadata(MetadataReference, req.Reference)
	}
	pi, err := c.sc.V1PaymentIntents.Create(ctx, params)
	if err != nil {
		res := classify(err, key, req)
		c.log.DebugContext(ctx, "stripe charge", "key", key, "outcome", res.Outcome.String(), "status", res.StatusCode)
		return res
	}
	res = result(pi)
	res.Attempts = 1
	if res.Err != nil {
		res.Err = fmt.Errorf("stripecharge: charge %s: %w", key, res.Err)
	}
	return res
}

// paymentMethod reads the customer's default payment method. ok is false
// when the charge must not be sent; res then says why.
func (c *Client) paymentMethod(ctx context.Context, key, customer string) (string, provider.Result, bool) {
	cus, err := c.sc.V1Customers.Retrieve(ctx, customer, nil)
	if err != nil {
		res := classify(err, key, provider.ChargeRequest{})
		if res.Outcome != provider.Rejected {
			// A read has no effect: whatever went wrong, nothing was charged.
			res.Outcome = provider.Retriable
			res.Err = fmt.Errorf("stripecharge: customer of %s: %w: %w", key, provider.ErrRetriable, err)
		}
		return "", res, false
	}
	switch {
	case cus.Deleted:
		return "", rejected(fmt.Errorf("stripecharge: customer of %s: %w: customer is deleted", key, provider.ErrRejected)), false
	case cus.InvoiceSettings != nil && cus.InvoiceSettings.DefaultPaymentMethod != nil && cus.InvoiceSettings.DefaultPaymentMethod.ID != "":
		return cus.InvoiceSettings.DefaultPaymentMethod.ID, provider.Result{}, true
	case cus.DefaultSource != nil && cus.DefaultSource.ID != "":
		return cus.DefaultSource.ID, provider.Result{}, true
	}
	return "", rejected(fmt.Errorf("stripecharge: charge %s: %w: %w", key, provider.ErrRejected, ErrNoPaymentMethod)), false
}

func rejected(err error) provider.Result {
	return provider.Result{Outcome: provider.Rejected, Err: err}
}

func validate(key string, req provider.ChargeRequest) error {
	err := req.Validate()
	if key == "" {
		err = errors.Join(errors.New("idempotency key is empty"), err)
	}
	if len(key) > MaxKeyLen {
		err = errors.Join(fmt.Errorf("idempotency key is %d characters, Stripe takes at most %d", len(key), MaxKeyLen), err)
	}
	if err != nil {
		return fmt.Errorf("stripecharge: %w: %w", provider.ErrInvalidRequest, err)
	}
	return nil
}

// result classifies a PaymentIntent by its status.
func result(pi *stripe.PaymentIntent) provider.Result {
	ch := Charge(pi)
	res := provider.Result{Charge: ch, StatusCode: http.StatusOK}
	switch ch.Status {
	case provider.StatusSucceeded:
		res.Outcome = provider.Succeeded
	case provider.StatusDeclined:
		res.Outcome = provider.Declined
		res.Err = declineErr(ch.DeclineCode)
	default:
		res.Outcome = provider.Unknown
		res.Err = fmt.Errorf("%w: payment intent %s is %s", provider.ErrUnknownOutcome, pi.ID, pi.Status)
	}
	return res
}

// Charge is a PaymentIntent in the worker's terms. Its status is
// succeeded, declined (an intent whose confirmation failed, back in
// requires_payment_method with a last_payment_error, or canceled), or
// Stripe's own status for an intent still on its way (requires_action,
// processing, ...), which the worker treats as pending. The key and event
// ID come from the intent's metadata; the currency is in lower case.
func Charge(pi *stripe.PaymentIntent) *provider.Charge {
	ch := &provider.Charge{
		ID:             pi.ID,
		Status:         string(pi.Status),
		Amount:         pi.Amount,
		Currency:       strings.ToLower(string(pi.Currency)),
		IdempotencyKey: cmp.Or(pi.Metadata[MetadataKey], pi.Metadata[MetadataLegacyKey]),
		EventID:        pi.Metadata[MetadataEventID],
	}
	if pi.Customer != nil {
		ch.Customer = pi.Customer.ID
	}
	switch {
	case pi.Status == stripe.PaymentIntentStatusSucceeded:
		ch.Status = provider.StatusSucceeded
	case pi.Status == stripe.PaymentIntentStatusRequiresPaymentMethod && pi.LastPaymentError != nil,
		pi.Status == stripe.PaymentIntentStatusCanceled:
		ch.Status = provider.StatusDeclined
		if e := pi.LastPaymentError; e != nil {
			ch.DeclineCode = cmp.Or(string(e.DeclineCode), string(e.Code))
		}
		if pi.Status == stripe.PaymentIntentStatusCanceled {
			ch.DeclineCode = cmp.Or(ch.DeclineCode, "canceled")
		}
	}
	return ch
}

func declineErr(code string) error {
	if code == "" {
		return provider.ErrDeclined
	}
	return fmt.Errorf("%w: %s", provider.ErrDeclined, code)
}

// classify maps an error of a Stripe call for req onto an outcome. Only
// answers that prove the request was not executed are Retriable; anything
// that cannot be read is Unknown.
func classify(err error, key string, req provider.ChargeRequest) provider.Result {
	var se *stripe.Error
	if !errors.As(err, &se) {
		if notSent(err) {
			return provider.Result{Outcome: provider.Retriable,
				Err: fmt.Errorf("stripecharge: charge %s: %w: %w", key, provider.ErrRetriable, err)}
		}
		return provider.Result{Outcome: provider.Unknown,
			Err: fmt.Errorf("stripecharge: charge %s: %w: %w", key, provider.ErrUnknownOutcome, err)}
	}
	res := provider.Result{StatusCode: se.HTTPStatusCode}
	if se.LastResponse != nil {
		res.RetryAfter = retryAfter(se.LastResponse.Header)
	}
	what := describe(se)
	switch {
	case se.Type == stripe.ErrorTypeCard:
		res.Outcome = provider.Declined
		res.Charge = declinedCharge(se, key, req)
		res.Err = fmt.Errorf("stripecharge: charge %s: %w", key, declineErr(res.Charge.DeclineCode))
	case se.Code == stripe.ErrorCodeIdempotencyKeyInUse:
		// The first request with this key is still in flight.
		res.Outcome = provider.Unknown
		res.Err = fmt.Errorf("stripecharge: charge %s: %w: %s", key, provider.ErrUnknownOutcome, what)
	case se.Type == stripe.ErrorTypeIdempotency:
		res.Outcome = provider.Rejected
		res.Err = fmt.Errorf("stripecharge: charge %s: %w: %w: %s", key, provider.ErrRejected, provider.ErrKeyConflict, what)
	case se.HTTPStatusCode == http.StatusTooManyRequests || se.Code == stripe.ErrorCodeRateLimit:
		res.Outcome = provider.Retriable
		res.Err = fmt.Errorf("stripecharge: charge %s: %w: %s", key, provider.ErrRetriable, what)
	case se.Type == stripe.ErrorTypeAPI, se.HTTPStatusCode >= 500, se.HTTPStatusCode == http.StatusRequestTimeout,
		se.HTTPStatusCode == http.StatusConflict, se.HTTPStatusCode < 400:
		res.Outcome = provider.Unknown
		res.Err = fmt.Errorf("stripecharge: charge %s: %w: %s", key, provider.ErrUnknownOutcome, what)
	default:
		res.Outcome = provider.Rejected
		res.Err = fmt.Errorf("stripecharge: charge %s: %w: %s", key, provider.ErrRejected, what)
	}
	return res
}

// describe names a Stripe error by its status, type and code, never its
// free-text message.
func describe(se *stripe.Error) string {
	s := fmt.Sprintf("status %d (%s", se.HTTPStatusCode, cmp.Or(string(se.Type), "no type"))
	if se.Code != "" {
		s += ": " + string(se.Code)
	}
	return s + ")"
}

// declinedCharge is the charge a card_error declined: the PaymentIntent
// the error carries, or one made from the error and the request.
func declinedCharge(se *stripe.Error, key string, req provider.ChargeRequest) *provider.Charge {
	code := cmp.Or(string(se.DeclineCode), string(se.Code))
	if pi := se.PaymentIntent; pi != nil && pi.ID != "" {
		ch := Charge(pi)
		ch.Status = provider.StatusDeclined
		ch.DeclineCode = cmp.Or(code, ch.DeclineCode)
		ch.Amount = cmp.Or(ch.Amount, req.Amount)
		ch.Currency = cmp.Or(ch.Currency, req.Canonical().Currency)
		ch.Customer = cmp.Or(ch.Customer, req.Customer)
		ch.EventID = cmp.Or(ch.EventID, req.EventID)
		ch.IdempotencyKey = cmp.Or(ch.IdempotencyKey, key)
		return ch
	}
	return &provider.Charge{
		ID:             se.ChargeID,
		Status:         provider.StatusDeclined,
		Amount:         req.Amount,
		Currency:       req.Canonical().Currency,
		Customer:       req.Customer,
		IdempotencyKey: key,
		EventID:        req.EventID,
		DeclineCode:    code,
	}
}

// notSent reports an error that proves the request never reached Stripe:
// the connection could not be opened.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

func retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	var secs int
	if _, err := fmt.Sscan(h.Get("Retry-After"), &secs); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	return 0
}

// LookupCharge finds the PaymentIntent created under key with Stripe's
// Search API ([SearchQuery]: metadata['hookline_pkey']:'key', or the
// legacy field for a legacy key). Search results lag commits
// by up to about a minute, which the worker's settle horizon covers. When
// several intents carry the key (none should: the key is the
// Idempotency-Key of the only create), a settled one wins.
func (c *Client) LookupCharge(ctx context.Context, key string) (*provider.Charge, bool, error) {
	if key == "" {
		return nil, false, fmt.Errorf("stripecharge: lookup: %w: idempotency key is empty", provider.ErrInvalidRequest)
	}
	params := &stripe.PaymentIntentSearchParams{}
	params.Query = SearchQuery(key)
	params.Limit = stripe.Int64(10)
	var found *provider.Charge
	for pi, err := range c.sc.V1PaymentIntents.Search(ctx, params) {
		if err != nil {
			return nil, false, fmt.Errorf("stripecharge: lookup %s: %w", key, lookupErr(err))
		}
		if pi.Metadata[metadataField(key)] != key {
			continue // search matched loosely; only the exact key counts
		}
		ch := Charge(pi)
		if found == nil || (!settled(found) && settled(ch)) {
			found = ch
		}
	}
	return found, found != nil, nil
}

func settled(ch *provider.Charge) bool {
	return ch.Status == provider.StatusSucceeded || ch.Status == provider.StatusDeclined
}

// lookupErr wraps a failed search in the provider's categories: the
// worker treats every lookup failure alike, but logs and tests read them.
func lookupErr(err error) error {
	var se *stripe.Error
	if errors.As(err, &se) {
		if se.HTTPStatusCode >= 500 || se.HTTPStatusCode == http.StatusTooManyRequests {
			return fmt.Errorf("%w: %s", provider.ErrRetriable, describe(se))
		}
		return fmt.Errorf("%w: %s", provider.ErrRejected, describe(se))
	}
	return fmt.Errorf("%w: %w", provider.ErrRetriable, err)
}

// SearchQuery is the Search API query that finds the intent created under
// key. A provider key of the current encoding is searched in its own field,
// metadata['hookline_pkey']:'hl1_...', and needs no escaping. A legacy key
// is searched in metadata['hookline_key'], with each ' written \' (the only
// escape Stripe documents; a legacy key that ends in a backslash cannot be
// searched exactly, which is one reason keys are hashed now).
func SearchQuery(key string) string {
	field := metadataField(key)
	if field == MetadataLegacyKey {
		key = strings.ReplaceAll(key, "'", `\'`)
	}
	return fmt.Sprintf("metadata['%s']:'%s'", field, key)
}

// metadataField is the metadata field a key is stored and searched in:
// [MetadataKey] for a key of [paymentworker.ProviderKey]'s encoding,
// [MetadataLegacyKey] for any other.
func metadataField(key string) string {
	if isProviderKey(key) {
		return MetadataKey
	}
	return MetadataLegacyKey
}

// isProviderKey reports whether key has the shape of
// [paymentworker.ProviderKey]: its prefix and lower-case hex.
func isProviderKey(key string) bool {
	hexPart, ok := strings.CutPrefix(key, paymentworker.ProviderKeyPrefix)
	if !ok || len(key) != paymentworker.ProviderKeyLen {
		return false
	}
	return strings.Trim(hexPart, "0123456789abcdef") == ""
}
