package openaiusage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/hookline/hookline/internal/paced"
	"github.com/hookline/hookline/internal/sums"
)

// maxBody bounds an answer's body: a page of 1,440 minute buckets of one
// project is some 700 KiB.
const maxBody = 8 << 20

// get calls GET u through the paced client (pace, retries,
// retry-after-ms and Retry-After: package paced) and decodes a 2xx answer
// into out. Every error wraps [sums.ErrRead].
func (r *Reader) get(ctx context.Context, endpoint string, u *url.URL, out any) error {
	header := http.Header{"Authorization": {"Bearer " + r.cfg.Key}, "Accept": {"application/json"}}
	resp, err := r.call.Get(ctx, endpoint, u.String(), header)
	switch {
	case errors.Is(err, paced.ErrTooLarge):
		return fmt.Errorf("%w: %w: %w", sums.ErrRead, ErrBadPage, err)
	case err != nil:
		return fmt.Errorf("%w: %w", sums.ErrRead, paced.As(err, ErrRateLimited, ErrUnavailable))
	}
	switch s := resp.Status; {
	case s >= 400:
		return r.apiError(endpoint, resp)
	case s < 200 || s >= 300:
		return fmt.Errorf("%w: GET %s: unexpected status %d", sums.ErrRead, endpoint, s)
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return fmt.Errorf("%w: %w: GET %s: %s", sums.ErrRead, ErrBadPage, endpoint, err)
	}
	return nil
}

// apiError reads OpenAI's error body.
func (r *Reader) apiError(endpoint string, resp *paced.Response) *APIError {
	e := &APIError{Endpoint: endpoint, Status: resp.Status, RequestID: r.redact(resp.Header.Get("X-Request-Id"))}
	var wrapped struct {
		Error OpenAIError `json:"error"`
	}
	if json.Unmarshal(resp.Body, &wrapped) == nil {
		w := wrapped.Error
		e.OpenAIError = OpenAIError{Message: r.redact(w.Message), Type: r.redact(w.Type), Param: r.redact(w.Param),
			Code: r.redact(w.Code)}
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.Status)
	}
	return e
}
