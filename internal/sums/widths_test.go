package sums_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/sums"
)

// widthsSource is one Stripe source started 2026-11-01 with the given
// width fields.
func widthsSource(fields string) string {
	return `{"s": {"provider": "stripe", "usage_source": "usage", "account": "acct_1",
		"start": "2026-11-01T00:00:00Z", ` + fields + `, "meters": {"calls": {"provider_meter": "mtr_1", "aggregation": "sum"}}}}`
}

func TestParseSourcesWidths(t *testing.T) {
	day1 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		fields  string
		wantErr []string
		check   func(t *testing.T, s sums.Source)
	}{
		{name: "a plain width holds from start", fields: `"width": "1h"`,
			check: func(t *testing.T, s sums.Source) {
				if len(s.Widths) != 1 || s.Width.D() != time.Hour || s.WidthAt(day1) != time.Hour {
					t.Fatalf("widths = %+v, width %s", s.Widths, s.Width.D())
				}
			}},
		{name: "hour then day from a midnight", fields: `"widths": [{"width": "1h"}, {"width": "24h", "from": "2026-12-01T00:00:00Z"}]`,
			check: func(t *testing.T, s sums.Source) {
				if s.Width.D() != sums.Day || s.WidthAt(day1.Add(-time.Second)) != time.Hour || s.WidthAt(day1) != sums.Day {
					t.Fatalf("widths = %+v, width %s", s.Widths, s.Width.D())
				}
			}},
		{name: "both width and widths", fields: `"width": "1h", "widths": [{"width": "1h"}]`,
			wantErr: []string{"width and widths are both set"}},
		{name: "a boundary off midnight for day buckets",
			fields:  `"widths": [{"width": "1h"}, {"width": "24h", "from": "2026-12-01T05:00:00Z"}]`,
			wantErr: []string{"widths[1].from 2026-12-01T05:00:00Z is not aligned to both 1h0m0s and 24h0m0s"}},
		{name: "a boundary off the old width",
			fields:  `"widths": [{"width": "1h"}, {"width": "30m", "from": "2026-12-01T05:30:00Z"}]`,
			wantErr: []string{"widths[1].from 2026-12-01T05:30:00Z is not aligned to both 1h0m0s and 30m0s"}},
		{name: "no boundary", fields: `"widths": [{"width": "1h"}, {"width": "24h"}]`,
			wantErr: []string{"widths[1].from is required"}},
		{name: "a boundary at start", fields: `"widths": [{"width": "1h"}, {"width": "24h", "from": "2026-11-01T00:00:00Z"}]`,
			wantErr: []string{"widths[1].from 2026-11-01T00:00:00Z must be after start"}},
		{name: "boundaries out of order", fields: `"widths": [{"width": "1h"}, {"width": "24h", "from": "2026-12-02T00:00:00Z"},
			{"width": "1h", "from": "2026-12-01T00:00:00Z"}]`, wantErr: []string{"widths[2].from 2026-12-01T00:00:00Z must be after"}},
		{name: "the same width again", fields: `"widths": [{"width": "1h"}, {"width": "1h", "from": "2026-12-01T00:00:00Z"}]`,
			wantErr: []string{"widths[1].width 1h0m0s is the width before it"}},
		{name: "a first width with a from", fields: `"widths": [{"width": "1h", "from": "2026-11-02T00:00:00Z"}]`,
			wantErr: []string{"widths[0].from must be left out"}},
		{name: "a width that does not divide a day", fields: `"widths": [{"width": "1h"}, {"width": "7h", "from": "2026-12-01T00:00:00Z"}]`,
			wantErr: []string{"widths[1].width 7h0m0s must be at least a minute and divide a day"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// given a source's width fields, when they are parsed
			ss, err := sums.ParseSources(widthsSource(tt.fields))
			// then each problem is named by its field, or the history holds
			for _, want := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("err = %v, want it to contain %q", err, want)
				}
			}
			if tt.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				tt.check(t, ss["s"])
			}
		})
	}
}

func TestSourceBucketsByTheWidthAtTheirStart(t *testing.T) {
	// given hour buckets until 2026-12-01 and day buckets from then on
	ss, err := sums.ParseSources(widthsSource(`"widths": [{"width": "1h"}, {"width": "24h", "from": "2026-12-01T00:00:00Z"}]`))
	if err != nil {
		t.Fatal(err)
	}
	src, day1 := ss["s"], time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		at         time.Time
		start, end time.Time
	}{
		{name: "the last hour before", at: day1.Add(-time.Second), start: day1.Add(-time.Hour), end: day1},
		{name: "the boundary", at: day1, start: day1, end: day1.Add(sums.Day)},
		{name: "within the day", at: day1.Add(23*time.Hour + time.Minute), start: day1, end: day1.Add(sums.Day)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// when an instant is bucketed, then its bucket has the width at its start
			if start, end := src.Bucket(tt.at); !start.Equal(tt.start) || !end.Equal(tt.end) {
				t.Fatalf("Bucket(%s) = %s..%s, want %s..%s", tt.at, start, end, tt.start, tt.end)
			}
		})
	}
	// when a window across the boundary is cut, then each side is read at its own width
	spans := src.Spans(day1.Add(-2*time.Hour), day1.Add(2*sums.Day))
	want := []sums.Span{{Start: day1.Add(-2 * time.Hour), End: day1, Width: time.Hour},
		{Start: day1, End: day1.Add(2 * sums.Day), Width: sums.Day}}
	if len(spans) != 2 || spans[0] != want[0] || spans[1] != want[1] {
		t.Fatalf("spans = %+v, want %+v", spans, want)
	}
	// and a plain hour agrees with it before the boundary, not after
	plain, err := sums.ParseSources(widthsSource(`"width": "1h"`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := src.WidthsAgree(plain["s"], src.Start, day1); !ok {
		t.Fatal("the histories disagree before the boundary")
	}
	if at, ok := src.WidthsAgree(plain["s"], src.Start, day1.Add(time.Hour)); ok || !at.Equal(day1) {
		t.Fatalf("WidthsAgree past the boundary = %s, %v, want it to differ at %s", at, ok, day1)
	}
}
