package stripeusage

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/hookline/hookline/internal/paced"
	"github.com/hookline/hookline/internal/sums"
)

// maxBody bounds an answer's body: a page of 100 summaries is about 25 KiB.
const maxBody = 4 << 20

// get calls GET u through the paced client (pace, retries, Retry-After:
// package paced) and decodes a 2xx answer into out. Every error wraps
// [sums.ErrRead].
func (r *Reader) get(ctx context.Context, endpoint string, u *url.URL, out any) error {
	header := http.Header{"Authorization": {"Bearer " + r.cfg.Key}, "Stripe-Version": {apiVersion}}
	resp, err := r.call.Get(ctx, endpoint, u.String(), header)
	if err != nil {
		return fmt.Errorf("%w: %w", sums.ErrRead, paced.As(err, ErrRateLimited, ErrUnavailable))
	}
	switch s := resp.Status; {
	case s >= 400:
		return r.apiError(endpoint, resp)
	case s < 200 || s >= 300:
		return fmt.Errorf("%w: GET %s: unexpected status %d", sums.ErrRead, endpoint, s)
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return fmt.Errorf("%w: GET %s: decode the answer: %w", sums.ErrRead, endpoint, err)
	}
	return nil
}

// apiError reads Stripe's error body ({"error": {...}}).
func (r *Reader) apiError(endpoint string, resp *paced.Response) *APIError {
	e := &APIError{Endpoint: endpoint, Status: resp.Status, RequestID: r.redact(resp.Header.Get("Request-Id"))}
	var wrapped apiErrorBody
	if json.Unmarshal(resp.Body, &wrapped) == nil && wrapped.Error != nil {
		se := wrapped.Error
		e.Type, e.Code, e.Param = r.redact(se.Type), r.redact(se.Code), r.redact(se.Param)
		e.Message = r.redact(se.Message)
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.Status)
	}
	return e
}
