package reconcile_test

import (
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
)

// TestAnOldRecordIsJudgedFromWhenItWasSeen: a source may send usage up
// to its reach back (Stripe takes meter events 35 days back). A webhook
// record that happened 20 days ago but reached hookline just now has had
// no time to appear in the export: it is unseen only once the export has
// been read a horizon past when hookline saw it, not at once.
func TestAnOldRecordIsJudgedFromWhenItWasSeen(t *testing.T) {
	t.Parallel()
	// Given a webhook record of 20 days ago, seen now
	f := newFixture(t, options{})
	f.workload(t, "w1", 1000)
	f.webhook(t, "late-1", "w1", 4, t0.Add(-20*24*time.Hour))

	// When the next run reads an export that does not show it yet
	first := f.run(t)

	// Then nothing is paged
	if first.Unseen != 0 {
		t.Fatalf("unseen = %d on the first run, want 0: a record seen now was judged by when it happened", first.Unseen)
	}
	if pages := f.pages(t, "spend-unseen:"); len(pages) != 0 {
		t.Fatalf("unseen pages = %+v", pages)
	}
	// And once the export has been read a horizon past its sighting
	// without it, it is unseen, once
	f.clock.Advance(horizon + 10*time.Minute)
	if late := f.run(t); late.Unseen != 1 {
		t.Fatalf("unseen = %d past the horizon, want 1", late.Unseen)
	}
	if got := f.total(t, "w1"); got != 4 {
		t.Fatalf("total = %d, want 4", got)
	}
}

// TestTheExportAgesARecordByItsSourcesRule: the export path applies the
// time rule of the source it holds, as the door does: a record published
// now that happened 20 days ago is quarantined under the default 72 h,
// and counted where the source allows 35 days.
func TestTheExportAgesARecordByItsSourcesRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		maxAge      time.Duration
		total       int64
		quarantined int64
	}{
		{"the default 72 h", 0, 0, 1},
		{"a source allowing 35 days", 35 * 24 * time.Hour, 6, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Given a record of 20 days ago, published now
			f := newFixture(t, options{exportMaxAge: tc.maxAge})
			f.workload(t, "w1", 1000)
			f.usage(t, "old-1", "w1", 6, t0.Add(-20*24*time.Hour), providersim.UsageOptions{PublishDelay: 20 * 24 * time.Hour, Webhook: providersim.WebhookDrop})
			// When the reconciler reads it
			f.clock.Advance(5 * time.Minute)
			run := f.run(t)
			// Then the source's rule decides
			if got := f.total(t, "w1"); got != tc.total || run.Quarantined != tc.quarantined {
				t.Fatalf("total %d, quarantined %d; want %d, %d", got, run.Quarantined, tc.total, tc.quarantined)
			}
		})
	}
}
