package stripeusage

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/paced"
	"github.com/hookline/hookline/internal/sums"
)

// SummariesEndpoint is the path template of the meter event summaries:
// the key of its limiter, and its name in errors and logs.
const SummariesEndpoint = "/v1/billing/meters/{id}/event_summaries"

// PageLimit is the summaries asked for per page, Stripe's most.
const PageLimit = 100

// Sums returns one [sums.Sum] per bucket Stripe's meter event summaries
// show for q's meter (ProviderMeter) and customer (Ref), from Start to End
// in buckets of Width, reading every page, in ascending order. Width must
// be an hour or a day, and Start and End aligned to it in UTC. A summary
// of another width or outside [Start, End) is refused; a bucket shown
// again (a summary repeated on a later page, paging under revision) is
// returned once, with its latest value. The pages are walked with a
// [paced.Walk] of one page a bucket: a cursor seen before in this read
// (last IDs A, B, A) or a page past that budget stops it. Every error
// wraps [sums.ErrRead], and no sums are returned with one.
func (r *Reader) Sums(ctx context.Context, q sums.Query) ([]sums.Sum, error) {
	window, err := checkQuery(q)
	if err != nil {
		return nil, err
	}
	values := map[time.Time]float64{}
	walk := paced.NewWalk(int(q.End.Sub(q.Start)/q.Width) + 1)
	after := ""
	for {
		page, err := r.page(ctx, q, window, after)
		if err != nil {
			return nil, err
		}
		if err := add(values, page.Data, q); err != nil {
			return nil, err
		}
		if !page.HasMore {
			return sums.Ascending(values, q.Width), nil
		}
		if len(page.Data) == 0 {
			return nil, fmt.Errorf("%w: %w: has_more on an empty page", sums.ErrRead, ErrBadPage)
		}
		after = page.Data[len(page.Data)-1].ID
		if err := walk.Next(after); err != nil {
			return nil, fmt.Errorf("%w: %w: GET %s: %w", sums.ErrRead, ErrBadPage, SummariesEndpoint, err)
		}
	}
}

// page reads one page of summaries, after the summary ID after.
func (r *Reader) page(ctx context.Context, q sums.Query, window, after string) (*summaryPage, error) {
	v := url.Values{}
	v.Set("customer", q.Ref)
	v.Set("start_time", strconv.FormatInt(q.Start.Unix(), 10))
	v.Set("end_time", strconv.FormatInt(q.End.Unix(), 10))
	v.Set("value_grouping_window", window)
	v.Set("limit", strconv.Itoa(PageLimit))
	if after != "" {
		v.Set("starting_after", after)
	}
	u := *r.base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/billing/meters/" + url.PathEscape(q.Meter.ProviderMeter) + "/event_summaries"
	u.RawPath = ""
	u.RawQuery = v.Encode()
	var page summaryPage
	if err := r.get(ctx, SummariesEndpoint, &u, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// checkQuery refuses what Stripe would, and returns the
// value_grouping_window for q's width.
func checkQuery(q sums.Query) (string, error) {
	bad := func(field, format string, a ...any) (string, error) {
		return "", &FieldError{Field: field, Problem: fmt.Sprintf(format, a...), kind: queryKind}
	}
	window := map[time.Duration]string{time.Hour: "hour", 24 * time.Hour: "day"}[q.Width]
	switch {
	case q.Ref == "":
		return bad("Ref", "a Stripe customer is required")
	case q.Meter.ProviderMeter == "":
		return bad("Meter.ProviderMeter", "a Stripe meter ID is required")
	case window == "":
		return bad("Width", "%s is neither an hour nor a day, Stripe's value_grouping_window", q.Width)
	case !q.End.After(q.Start):
		return bad("End", "%s is not after start %s", stamp(q.End), stamp(q.Start))
	case !aligned(q.Start, q.Width):
		return bad("Start", "%s is not on a UTC %s boundary, as value_grouping_window=%[2]s requires", stamp(q.Start), window)
	case !aligned(q.End, q.Width):
		return bad("End", "%s is not on a UTC %s boundary, as value_grouping_window=%[2]s requires", stamp(q.End), window)
	}
	return window, nil
}

// aligned reports whether t is a multiple of width (an hour or a day)
// in UTC; it is then minute-aligned too.
func aligned(t time.Time, width time.Duration) bool { return t.Equal(t.Truncate(width)) }

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// add puts each summary's value into values by its bucket's start,
// refusing a summary of the other mode, of another width than q's, or
// outside q's window. A bucket seen before takes the later value.
func add(values map[time.Time]float64, data []*summary, q sums.Query) error {
	for _, s := range data {
		if s == nil {
			return fmt.Errorf("%w: %w: a null summary", sums.ErrRead, ErrBadPage)
		}
		if s.Livemode != q.Source.Livemode {
			return fmt.Errorf("%w: %w: summary %s has livemode %t, the source %t",
				sums.ErrRead, ErrLivemode, s.ID, s.Livemode, q.Source.Livemode)
		}
		start, end := time.Unix(s.StartTime, 0).UTC(), time.Unix(s.EndTime, 0).UTC()
		if end.Sub(start) != q.Width || start.Before(q.Start) || end.After(q.End) {
			return fmt.Errorf("%w: %w: summary %s [%s, %s) is not a %s bucket of the query's window [%s, %s)",
				sums.ErrRead, ErrBadPage, s.ID, stamp(start), stamp(end), q.Width, stamp(q.Start), stamp(q.End))
		}
		values[start] = s.AggregatedValue
	}
	return nil
}
