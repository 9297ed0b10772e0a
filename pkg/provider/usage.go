package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// UsageRecord is one record of the provider's usage export. RecordID is its
// stable identity: the webhook for the same usage carries the same ID.
type UsageRecord struct {
	RecordID    string `json:"record_id"`
	WorkloadRef string `json:"workload_ref"`
	Units       int64  `json:"units"`
	// OccurredAt is when the usage happened.
	OccurredAt time.Time `json:"occurred_at"`
	// PublishedAt is when the record became visible in the export. The
	// export filters and orders on it.
	PublishedAt time.Time `json:"published_at"`
	// Source is the door's usage source whose records the export holds,
	// and Meter and Unit what the record counts, as the export's adapter
	// read them with that source's mapping (OpenMeter's); empty when the
	// export does not say (GET /v1/usage). With them, the ledger counts
	// the record in its bucket of a provider of sums, as it counts the
	// webhook for the same usage.
	Source string `json:"-"`
	Meter  string `json:"-"`
	Unit   string `json:"-"`
	// Invalid is set, by [DecodeUsagePage], on a record that cannot become
	// a ledger record: it names the field and why. The reconciler
	// quarantines such a record and never counts it.
	Invalid *FieldError `json:"-"`
}

// UsagePage is the body of GET /v1/usage.
type UsagePage struct {
	Records []UsageRecord `json:"records"`
	// NextPageToken is empty on the last page.
	NextPageToken string `json:"next_page_token,omitempty"`
}

// UsageEvent is the body of the provider's usage webhook. ID is the event's
// identity, stable across the provider's retries of the same webhook.
type UsageEvent struct {
	ID      string      `json:"id"`
	Type    string      `json:"type"`
	Created time.Time   `json:"created"`
	Data    UsageRecord `json:"data"`
}

// UsageEventType is the Type of a [UsageEvent].
const UsageEventType = "usage.recorded"

// MaxUsagePages bounds the pages of one listing, so that an export whose
// tokens never end cannot hold a run forever.
const MaxUsagePages = 10000

// ErrPageLoop means the export's page tokens repeat (A, B, A) or run past
// [MaxUsagePages]: the listing would never end. It comes wrapped in an
// [*ExportError].
var ErrPageLoop = errors.New("provider: usage export page tokens loop")

// ListUsage reads every usage record published in [since, until) and hands
// the records to fn one page at a time, in (published_at, record_id) order.
// Each page is retried on 5xx, 429 and network failures with the client's
// backoff; when a page still fails, ListUsage returns an [*ExportError].
// An error from fn stops the listing and is returned wrapped.
//
// Choose until no later than the provider's present: then the set of records
// in the window is fixed and a cursor at until misses nothing.
func (c *Client) ListUsage(ctx context.Context, since, until time.Time, fn func([]UsageRecord) error) error {
	if !until.After(since) {
		return fmt.Errorf("%w: usage window [%s, %s) is empty", ErrInvalidRequest,
			since.Format(time.RFC3339), until.Format(time.RFC3339))
	}
	token := ""
	seen := map[string]bool{}
	for page := 1; ; page++ {
		pg, err := c.usagePage(ctx, page, since, until, token)
		if err != nil {
			return err
		}
		if len(pg.Records) > 0 {
			if err := fn(pg.Records); err != nil {
				return fmt.Errorf("provider: usage page %d: %w", page, err)
			}
		}
		if pg.NextPageToken == "" {
			return nil
		}
		if err := nextToken(seen, pg.NextPageToken, page); err != nil {
			return err
		}
		token = pg.NextPageToken
	}
}

// nextToken records the token that leads past page and refuses one the
// listing has already followed, or a page past [MaxUsagePages].
func nextToken(seen map[string]bool, token string, page int) error {
	switch {
	case seen[token]:
		return &ExportError{Page: page, StatusCode: http.StatusOK, Attempts: 1,
			Err: fmt.Errorf("%w: %w: page token of page %d seen before", ErrBadResponse, ErrPageLoop, page)}
	case page >= MaxUsagePages:
		return &ExportError{Page: page, StatusCode: http.StatusOK, Attempts: 1,
			Err: fmt.Errorf("%w: %w: more than %d pages", ErrBadResponse, ErrPageLoop, MaxUsagePages)}
	}
	seen[token] = true
	return nil
}

// usagePage reads one page, retrying transient failures.
func (c *Client) usagePage(ctx context.Context, page int, since, until time.Time, token string) (UsagePage, error) {
	q := url.Values{
		"since": {since.UTC().Format(time.RFC3339Nano)},
		"until": {until.UTC().Format(time.RFC3339Nano)},
	}
	if token != "" {
		q.Set("page_token", token)
	}
	if c.limit > 0 {
		q.Set("limit", strconv.Itoa(c.limit))
	}
	r := request{method: http.MethodGet, url: c.baseURL + "/v1/usage?" + q.Encode(), header: c.header("")}
	for attempt := 1; ; attempt++ {
		resp, err := send(ctx, c.http, c.policy.timeout, r)
		status, asked := 0, time.Duration(0)
		switch {
		case err != nil:
			err = fmt.Errorf("%w: %w", ErrRetriable, err)
		case resp.status == http.StatusOK:
			pg, derr := DecodeUsagePage(resp.body)
			if derr != nil {
				return UsagePage{}, &ExportError{Page: page, StatusCode: resp.status, Attempts: attempt, Err: derr}
			}
			return pg, nil
		case retryableRead(resp.status):
			status, asked = resp.status, retryAfter(resp.header, time.Now())
			err = fmt.Errorf("%w: status %d", ErrRetriable, resp.status)
		default:
			return UsagePage{}, &ExportError{Page: page, StatusCode: resp.status, Attempts: attempt,
				Err: fmt.Errorf("%w: status %d%s", ErrRejected, resp.status, errorType(resp.body))}
		}
		if attempt >= c.policy.maxAttempts {
			return UsagePage{}, &ExportError{Page: page, StatusCode: status, Attempts: attempt, Err: err}
		}
		d, ok := c.policy.wait(ctx, attempt, asked)
		if !ok {
			return UsagePage{}, &ExportError{Page: page, StatusCode: status, Attempts: attempt, Err: err}
		}
		c.log.DebugContext(ctx, "provider usage page retry", "page", page, "attempt", attempt,
			"status", status, "wait", d)
		if serr := sleep(ctx, d); serr != nil {
			return UsagePage{}, &ExportError{Page: page, StatusCode: status, Attempts: attempt,
				Err: errors.Join(err, serr)}
		}
	}
}
