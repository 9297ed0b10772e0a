package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/ops"
)

func TestSumsSettlePageShowsEveryBucketItCovers(t *testing.T) {
	// given thirty hours of webhook usage that Stripe never showed
	f := newSumsFixture(t)
	f.workload(t, "wl-g", 1_000_000_000, "cus_g")
	const hours = 30
	for h := range hours {
		at := hour0.Add(time.Duration(h) * time.Hour)
		f.now = at.Add(time.Minute)
		f.webhook(t, fmt.Sprintf("g%02d", h), "wl-g", 1000, at)
	}
	// when the reconciler settles them all in one run
	f.now = hour0.Add((hours + 4) * time.Hour)
	if r := f.runStripe(t); r.Gaps != hours {
		t.Fatalf("run settled %d gaps, want %d", r.Gaps, hours)
	}
	// then one page covers them, and points to the explain that lists them
	pages := f.pages(t, "bucket-gap#wl-g#")
	if len(pages) != 1 {
		t.Fatalf("gap pages = %d, want 1", len(pages))
	}
	summary := pages[0].Event.Payload.Summary
	if !strings.Contains(summary, "buckets=30") || !strings.Contains(summary, "hookline workload explain wl-g") {
		t.Fatalf("page %q does not point to the workload's explain", summary)
	}
	// and that explain shows every one of its buckets
	x, err := f.spend.Explainer.Explain(context.Background(), "wl-g")
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := ops.NewRunbook(x, f.now).WriteText(&text); err != nil {
		t.Fatal(err)
	}
	var missing []string
	for h := range hours {
		start := hour0.Add(time.Duration(h) * time.Hour)
		b := fmt.Sprintf("[%s,%s)", start.Format(time.RFC3339), start.Add(time.Hour).Format(time.RFC3339))
		if !strings.Contains(text.String(), b) {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("explain lacks %d of the page's buckets: %v", len(missing), missing)
	}
}
