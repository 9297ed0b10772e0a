package paymentworker

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// defaultFetchTimeout bounds one fetch when its client sets no timeout.
const defaultFetchTimeout = 5 * time.Second

// maxAnswer bounds what is read of a provider's answer: a longer one is
// cut, fails to parse, and counts as unreadable.
const maxAnswer = 1 << 20

// StatusNotAnEffect is the status a fetcher answers, with [ActSkip], for
// an event that names nothing to act on, without calling its provider.
const StatusNotAnEffect = "not_an_effect"

// getter GETs u from a provider's API with its credentials.
type getter func(ctx context.Context, hc *http.Client, u string) (int, []byte, error)

// apiClient is what every fetcher's client sets: where the API is, the
// HTTP client and the bound of one fetch.
type apiClient struct {
	base    string
	hc      *http.Client
	timeout time.Duration
}

// fetchObject is what fetchers share once they know what to read: an ID
// not of its provider's shape is [ErrNotFound] with no call; otherwise
// it GETs base+path+id with get, within the bound, and maps the answer:
// 200 is the object, 404 [ErrNotFound], anything else [ErrFetch].
func fetchObject(ctx context.Context, api apiClient, provider string, shape *regexp.Regexp, path, id string, get getter) ([]byte, error) {
	if !shape.MatchString(id) {
		return nil, fmt.Errorf("%s %s%q: %w", provider, path, id, ErrNotFound)
	}
	ctx, cancel, hc := fetchBound(ctx, api.hc, api.timeout)
	defer cancel()
	status, data, err := get(ctx, hc, strings.TrimSuffix(api.base, "/")+path+url.PathEscape(id))
	switch {
	case err != nil:
		return nil, err
	case status == http.StatusNotFound:
		return nil, fmt.Errorf("%s %s%s: %w", provider, path, id, ErrNotFound)
	case status != http.StatusOK:
		return nil, fmt.Errorf("%w: %s answered %d for %s%s", ErrFetch, provider, status, path, id)
	}
	return data, nil
}

// fetchBound bounds a fetch, every call it makes included, by timeout
// (zero: defaultFetchTimeout), and returns the HTTP client to make them
// with: hc, or one with that timeout.
func fetchBound(ctx context.Context, hc *http.Client, timeout time.Duration) (context.Context, context.CancelFunc, *http.Client) {
	if timeout <= 0 {
		timeout = defaultFetchTimeout
	}
	if hc == nil {
		hc = &http.Client{Timeout: timeout}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return ctx, cancel, hc
}

// call sends req and reads at most maxAnswer of the answer. Not getting
// a whole answer (a timeout, a dropped connection, a body cut short) is
// [ErrFetch]; the error never holds the request's credentials.
func call(hc *http.Client, req *http.Request) (int, []byte, error) {
	res, err := hc.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %s %s: read: %w", ErrFetch, req.Method, req.URL.Path, err)
	}
	return res.StatusCode, data, nil
}
