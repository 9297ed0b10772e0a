package stripeusage

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v84"

	"github.com/hookline/hookline/internal/sums"
)

// SummariesEndpoint is the path template of the meter event summaries:
// the key of its limiter, and its name in errors and logs.
const SummariesEndpoint = "/v1/billing/meters/{id}/event_summaries"

// PageLimit is the summaries asked for per page, Stripe's most.
const PageLimit = 100

// Sums returns one [sums.Sum] per meter event summary Stripe shows for
// q's meter (ProviderMeter) and customer (Ref), from Start to End in
// buckets of Width, reading every page. Width must be an hour or a day,
// and Start and End aligned to it in UTC. Every error wraps
// [sums.ErrRead], and no sums are returned with one.
func (r *Reader) Sums(ctx context.Context, q sums.Query) ([]sums.Sum, error) {
	window, err := checkQuery(q)
	if err != nil {
		return nil, err
	}
	var out []sums.Sum
	after := ""
	for {
		page, err := r.page(ctx, q, window, after)
		if err != nil {
			return nil, err
		}
		got, err := toSums(page.Data, q.Source.Livemode)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		if !page.HasMore {
			return out, nil
		}
		if after, err = cursor(page.Data, after); err != nil {
			return nil, err
		}
	}
}

// page reads one page of summaries, after the summary ID after.
func (r *Reader) page(ctx context.Context, q sums.Query, window, after string) (*stripe.BillingMeterEventSummaryList, error) {
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
	var page stripe.BillingMeterEventSummaryList
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

// toSums converts a page, refusing a summary of the other mode.
func toSums(data []*stripe.BillingMeterEventSummary, livemode bool) ([]sums.Sum, error) {
	out := make([]sums.Sum, 0, len(data))
	for _, s := range data {
		if s == nil {
			return nil, fmt.Errorf("%w: %w: a null summary", sums.ErrRead, ErrBadPage)
		}
		if s.Livemode != livemode {
			return nil, fmt.Errorf("%w: %w: summary %s has livemode %t, the source %t",
				sums.ErrRead, ErrLivemode, s.ID, s.Livemode, livemode)
		}
		out = append(out, sums.Sum{
			Start: time.Unix(s.StartTime, 0).UTC(),
			End:   time.Unix(s.EndTime, 0).UTC(),
			Value: s.AggregatedValue,
		})
	}
	return out, nil
}

// cursor is the starting_after of the page after data: its last
// summary's ID, which must move on from the previous cursor.
func cursor(data []*stripe.BillingMeterEventSummary, previous string) (string, error) {
	if len(data) == 0 {
		return "", fmt.Errorf("%w: %w: has_more on an empty page", sums.ErrRead, ErrBadPage)
	}
	id := data[len(data)-1].ID
	if id == "" || id == previous {
		return "", fmt.Errorf("%w: %w: has_more, but the last summary's id %q does not move the cursor", sums.ErrRead, ErrBadPage, id)
	}
	return id, nil
}
