package stripeusage_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/paced"
	"github.com/hookline/hookline/internal/stripeusage"
	"github.com/hookline/hookline/internal/sums"
)

// stopAfter bounds a fake that would page forever: past this many calls
// it refuses, so that a reader that follows a loop fails the test rather
// than hanging it.
const stopAfter = 1000

func TestSumsStopsAWalkThatLoops(t *testing.T) {
	tests := []struct {
		name  string
		end   time.Time
		next  func(n int) summary
		is    error
		calls int
	}{
		{
			name: "last IDs alternate A, B, A: stops at the second A",
			end:  dayStart.Add(24 * time.Hour),
			next: func(n int) summary {
				return []summary{{"mtrusg_A", 0, 3, false}, {"mtrusg_B", 1, 4, false}}[n%2]
			},
			is: paced.ErrCursorLoop, calls: 3,
		},
		{
			name:  "fresh IDs forever: stops at the page budget, one a bucket",
			end:   dayStart.Add(4 * time.Hour),
			next:  func(n int) summary { return summary{fmt.Sprintf("mtrusg_%d", n), n % 4, 1, false} },
			is:    paced.ErrPageBudget,
			calls: 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a Stripe whose pages always say has_more,
			f, srv := newFake(t, func(n int, _ url.Values) reply {
				if n >= stopAfter {
					return stripeError(400, "invalid_request_error", "", "stop")
				}
				return page(true, tt.next(n))
			})
			r, _ := fakeReader(t, srv, nil)
			// when a window is read,
			got, err := r.Sums(t.Context(), query(false, dayStart, tt.end, time.Hour))
			// then the walk stops with a typed error after a bounded number
			// of calls.
			var we *paced.WalkError
			if got != nil || !errors.As(err, &we) || !errors.Is(err, tt.is) || !errors.Is(err, stripeusage.ErrBadPage) ||
				!errors.Is(err, sums.ErrRead) {
				t.Fatalf("got %v, %v; want a WalkError wrapping %v, ErrBadPage and sums.ErrRead", got, err, tt.is)
			}
			if n := len(f.calls()); n != tt.calls {
				t.Fatalf("%d calls, want %d", n, tt.calls)
			}
		})
	}
}

// raw is a summary of any span, as Stripe writes it.
type raw struct {
	id         string
	start, end time.Time
	value      float64
}

func rawPage(hasMore bool, items ...raw) reply {
	data := make([]map[string]any, 0, len(items))
	for _, s := range items {
		data = append(data, map[string]any{"id": s.id, "object": "billing.meter_event_summary", "meter": "mtr_123",
			"aggregated_value": s.value, "livemode": false, "start_time": s.start.Unix(), "end_time": s.end.Unix()})
	}
	body, _ := json.Marshal(map[string]any{"object": "list", "has_more": hasMore, "data": data})
	return reply{status: http.StatusOK, body: string(body)}
}

func hour(h int) time.Time { return dayStart.Add(time.Duration(h) * time.Hour) }

func TestSumsChecksWhatStripeServes(t *testing.T) {
	tests := []struct {
		name    string
		replies []reply
		want    []sums.Sum
		is      error
	}{
		{
			name:    "a summary of a day in an hourly query is refused",
			replies: []reply{rawPage(false, raw{"mtrusg_1", hour(0), hour(24), 5})},
			is:      stripeusage.ErrBadPage,
		},
		{
			name:    "a summary of half an hour is refused",
			replies: []reply{rawPage(false, raw{"mtrusg_1", hour(1), hour(1).Add(30 * time.Minute), 5})},
			is:      stripeusage.ErrBadPage,
		},
		{
			name:    "a summary before the window is refused",
			replies: []reply{rawPage(false, raw{"mtrusg_1", hour(-1), hour(0), 5})},
			is:      stripeusage.ErrBadPage,
		},
		{
			name:    "a summary after the window is refused",
			replies: []reply{rawPage(false, raw{"mtrusg_1", hour(6), hour(7), 5})},
			is:      stripeusage.ErrBadPage,
		},
		{
			name: "a summary repeated on the next page is counted once",
			replies: []reply{
				rawPage(true, raw{"mtrusg_2", hour(2), hour(3), 7}, raw{"mtrusg_1", hour(1), hour(2), 5}),
				rawPage(false, raw{"mtrusg_1", hour(1), hour(2), 5}, raw{"mtrusg_0", hour(0), hour(1), 2}),
			},
			want: []sums.Sum{{Start: hour(0), End: hour(1), Value: 2}, {Start: hour(1), End: hour(2), Value: 5},
				{Start: hour(2), End: hour(3), Value: 7}},
		},
		{
			name: "a bucket shown again takes its latest value",
			replies: []reply{
				rawPage(true, raw{"mtrusg_1", hour(1), hour(2), 5}),
				rawPage(false, raw{"mtrusg_1b", hour(1), hour(2), 6}),
			},
			want: []sums.Sum{{Start: hour(1), End: hour(2), Value: 6}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given Stripe's pages,
			_, srv := newFake(t, func(n int, _ url.Values) reply { return tt.replies[n] })
			r, _ := fakeReader(t, srv, nil)
			// when the window [00:00, 06:00) is read by the hour,
			got, err := r.Sums(t.Context(), query(false, dayStart, hour(6), time.Hour))
			// then what is not a bucket of the query is refused, and a
			// bucket is returned once.
			if tt.is != nil {
				if got != nil || !errors.Is(err, tt.is) || !errors.Is(err, sums.ErrRead) {
					t.Fatalf("got %v, %v; want an error wrapping %v and sums.ErrRead", got, err, tt.is)
				}
				return
			}
			if err != nil || !equalSums(got, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
