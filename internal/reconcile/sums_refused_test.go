package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/sums"
)

func TestSumsARefusedWorkloadHoldsBackNoOther(t *testing.T) {
	// given three workloads, the first of which Stripe refuses to sum (a
	// customer deleted at Stripe, say), and usage of the two others
	f := newSumsFixture(t)
	for _, id := range []string{"a", "b", "c"} {
		f.workload(t, "wl-"+id, 1_000_000, "cus_"+id)
	}
	f.stripe.refuse = map[string]error{"cus_a": fmt.Errorf("%w: %w: no such customer: 'cus_a'", sums.ErrRead, sums.ErrRefused)}
	f.stripe.set("mtr_api", "cus_b", hour0, 2)
	f.stripe.set("mtr_api", "cus_c", hour0, 3)
	// when the reconciler runs twice, an interval apart
	for range 2 {
		runs, err := f.rec.Run(context.Background(), "run-"+f.now.Format("150405"))
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		// then each run reads the others and records the one refused
		for _, r := range runs {
			if r.Source == "stripe-test" && (r.Outcome != "ok" || fmt.Sprint(r.Refused) != "[wl-a]") {
				t.Fatalf("run = %+v, want ok with wl-a refused", r)
			}
		}
		f.now = f.now.Add(5 * time.Minute)
	}
	if b, c := f.total(t, "wl-b"), f.total(t, "wl-c"); b != 2000 || c != 3000 {
		t.Fatalf("totals b=%d c=%d, want 2000 and 3000", b, c)
	}
	// and the refusal is paged once a day, naming the workload
	if pages := f.pages(t, "sums-refused#stripe-test#wl-a#"); len(pages) != 1 {
		t.Fatalf("refusal pages = %d, want 1", len(pages))
	}
}
