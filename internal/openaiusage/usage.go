package openaiusage

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/paced"
	"github.com/hookline/hookline/internal/sums"
)

// Widths OpenAI serves, as bucket_width, with the most buckets one page
// may hold (limit) for a usage endpoint; costs take up to
// [CostsPageLimit] day buckets.
var widths = map[time.Duration]struct {
	name  string
	limit int
}{
	time.Minute: {"1m", 1440},
	time.Hour:   {"1h", 168},
	sums.Day:    {"1d", 31},
}

// CostsPageLimit is the most day buckets one page of costs holds.
const CostsPageLimit = 180

// Path is the path of an endpoint of sums: /v1/organization/costs, or
// /v1/organization/usage/{endpoint}. It names the endpoint in errors,
// logs and the pace.
func Path(endpoint string) string {
	if endpoint == sums.OpenAICosts {
		return "/v1/organization/costs"
	}
	return "/v1/organization/usage/" + endpoint
}

// page is one page of an endpoint's buckets, as OpenAI answers it.
type page struct {
	Data     []bucket `json:"data"`
	HasMore  bool     `json:"has_more"`
	NextPage *string  `json:"next_page"`
}

// bucket is one time bucket of a page.
type bucket struct {
	StartTime int64    `json:"start_time"`
	EndTime   int64    `json:"end_time"`
	Results   []result `json:"results"`
}

// result is one result of a bucket: its group (the project) and its
// fields, kept raw until a meter says which count.
type result struct {
	ProjectID *string `json:"project_id"`
	Amount    *struct {
		Value    float64 `json:"value"`
		Currency string  `json:"currency"`
	} `json:"amount"`
	fields map[string]json.RawMessage
}

// UnmarshalJSON keeps the result's fields by name.
func (r *result) UnmarshalJSON(b []byte) error {
	type plain result
	if err := json.Unmarshal(b, (*plain)(r)); err != nil {
		return err
	}
	return json.Unmarshal(b, &r.fields)
}

// Sums returns one [sums.Sum] per bucket in which OpenAI shows results
// for q's project (Ref), from Start to End in buckets of Width, reading
// every page. Every error wraps [sums.ErrRead], and no sums are returned
// with one.
func (r *Reader) Sums(ctx context.Context, q sums.Query) ([]sums.Sum, error) {
	v, limit, err := query(q)
	if err != nil {
		return nil, err
	}
	path := Path(q.Meter.Endpoint)
	u := *r.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	values := map[time.Time]float64{}
	walk := paced.NewWalk(limit + 1)
	for {
		u.RawQuery = v.Encode()
		var p page
		if err := r.get(ctx, path, &u, &p); err != nil {
			return nil, err
		}
		if err := add(values, p.Data, q); err != nil {
			return nil, fmt.Errorf("%w: GET %s: %w", sums.ErrRead, path, err)
		}
		if !p.HasMore {
			return sums.Ascending(values, q.Width), nil
		}
		next := ""
		if p.NextPage != nil {
			next = *p.NextPage
		}
		if err := walk.Next(next); err != nil {
			return nil, fmt.Errorf("%w: %w: GET %s: %w", sums.ErrRead, ErrBadPage, path, err)
		}
		v.Set("page", next)
	}
}

// query checks q as OpenAI would, and returns its parameters and the
// most pages its window may take (one a bucket).
func query(q sums.Query) (url.Values, int, error) {
	w, ok := widths[q.Width]
	costs := q.Meter.Endpoint == sums.OpenAICosts
	switch {
	case q.Ref == "":
		return nil, 0, &QueryError{Field: "Ref", Problem: "an OpenAI project ID is required"}
	case q.Meter.Endpoint == "":
		return nil, 0, &QueryError{Field: "Meter.Endpoint", Problem: "an OpenAI usage endpoint or costs is required"}
	case strings.ContainsAny(q.Meter.Endpoint, "/?#%"):
		return nil, 0, &QueryError{Field: "Meter.Endpoint", Problem: fmt.Sprintf("%q is not an endpoint name", q.Meter.Endpoint)}
	case !ok || (costs && q.Width != sums.Day):
		return nil, 0, &QueryError{Field: "Width", Problem: fmt.Sprintf("%s is not a bucket_width OpenAI serves here", q.Width)}
	case !q.End.After(q.Start):
		return nil, 0, &QueryError{Field: "End", Problem: "is not after Start"}
	case !q.Start.Equal(q.Start.Truncate(q.Width)) || !q.End.Equal(q.End.Truncate(q.Width)):
		return nil, 0, &QueryError{Field: "Start, End", Problem: fmt.Sprintf("not on UTC %s boundaries", w.name)}
	case costs && q.Meter.Currency == "":
		return nil, 0, &QueryError{Field: "Meter.Currency", Problem: "a costs meter names its currency"}
	case !costs && len(q.Meter.Weights()) == 0:
		return nil, 0, &QueryError{Field: "Meter.Field", Problem: "a usage meter names the fields that count"}
	}
	if costs {
		w.limit = CostsPageLimit
	}
	v := url.Values{}
	v.Set("start_time", strconv.FormatInt(q.Start.Unix(), 10))
	v.Set("end_time", strconv.FormatInt(q.End.Unix(), 10))
	v.Set("bucket_width", w.name)
	v.Set("limit", strconv.Itoa(w.limit))
	v.Set("group_by[]", "project_id")
	v.Set("project_ids[]", q.Ref)
	return v, int(q.End.Sub(q.Start) / q.Width), nil
}

// add puts each bucket's value for the project into values. A bucket
// shown again on a later page (paging under revision) takes its latest
// value; a bucket without results for the project is left out.
func add(values map[time.Time]float64, data []bucket, q sums.Query) error {
	for _, b := range data {
		start, end := time.Unix(b.StartTime, 0).UTC(), time.Unix(b.EndTime, 0).UTC()
		if end.Sub(start) != q.Width || start.Before(q.Start) || end.After(q.End) {
			return fmt.Errorf("%w: bucket [%s, %s) is not a %s bucket of the query's window",
				ErrBadPage, stamp(start), stamp(end), q.Width)
		}
		if len(b.Results) == 0 {
			continue
		}
		v, err := value(b.Results, q)
		if err != nil {
			return fmt.Errorf("bucket %s: %w", stamp(start), err)
		}
		values[start] = v
	}
	return nil
}

// value is a bucket's value for q's meter over the project's results.
func value(results []result, q sums.Query) (float64, error) {
	var total int64
	var money float64
	weights := q.Meter.Weights()
	for _, res := range results {
		if res.ProjectID == nil || *res.ProjectID != q.Ref {
			return 0, fmt.Errorf("%w: a result of project %s, not %s", ErrBadPage, orNull(res.ProjectID), q.Ref)
		}
		if q.Meter.Endpoint == sums.OpenAICosts {
			m, err := cost(res, q.Meter.Currency)
			if err != nil {
				return 0, err
			}
			money += m
			continue
		}
		n, err := weighted(res, weights)
		if err != nil {
			return 0, err
		}
		if total += n; total > 1<<53 || total < 0 {
			return 0, fmt.Errorf("%w: the weighted sum exceeds 2^53", ErrBadPage)
		}
	}
	if q.Meter.Endpoint == sums.OpenAICosts {
		return money, nil
	}
	return float64(total), nil
}

// cost is a costs result's amount, in the meter's currency.
func cost(res result, currency string) (float64, error) {
	if res.Amount == nil {
		return 0, fmt.Errorf("%w: a costs result without an amount", ErrBadPage)
	}
	if !strings.EqualFold(res.Amount.Currency, currency) {
		return 0, fmt.Errorf("%w: %q, the meter's is %q", ErrCurrency, res.Amount.Currency, currency)
	}
	return res.Amount.Value, nil
}

// weighted is Σ weight × field over a usage result; an absent or null
// field counts 0 (OpenAI leaves some out of older answers).
func weighted(res result, weights map[string]int64) (int64, error) {
	var total int64
	for f, w := range weights {
		raw, ok := res.fields[f]
		if !ok || string(raw) == "null" {
			continue
		}
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil || n < 0 {
			return 0, fmt.Errorf("%w: field %s is %s, not a count", ErrBadPage, f, raw)
		}
		if n > (1<<53)/max(w, 1) {
			return 0, fmt.Errorf("%w: field %s × %d exceeds 2^53", ErrBadPage, f, w)
		}
		if total += n * w; total > 1<<53 {
			return 0, fmt.Errorf("%w: the weighted sum exceeds 2^53", ErrBadPage)
		}
	}
	return total, nil
}

func orNull(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
