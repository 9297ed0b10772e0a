package reconcile_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/sums"
)

// sentPages records the pages an outbox sends.
type sentPages struct {
	mu   sync.Mutex
	keys []string
}

func (s *sentPages) Send(_ context.Context, ev pager.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, ev.DedupKey)
	return nil
}

func (s *sentPages) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

// cancelling is a provider whose read ends the run's invocation: it
// cancels the run's context, as a Lambda deadline does, and fails.
// Before cancel is set, it reads nothing.
type cancelling struct{ cancel context.CancelFunc }

func (c *cancelling) Sums(ctx context.Context, _ sums.Query) ([]sums.Sum, error) {
	if c.cancel == nil {
		return nil, nil
	}
	c.cancel()
	return nil, ctx.Err()
}

func TestSumsADownwardRevisionIsPagedEvenWhenTheRunEndsEarly(t *testing.T) {
	// given a bucket the provider revises down, in a source read before
	// another whose read ends the invocation
	config := `{"stripe-other": {"provider": "stripe", "usage_source": "meters", "account": "acct_1",
		"start": "2026-11-30T00:00:00Z", "settle": "3h", "lag": "2m", "interval": "5m",
		"meters": {"api": {"provider_meter": "mtr_api", "aggregation": "sum", "scale": 1000}}},
		"stripe-test": {"provider": "stripe", "usage_source": "other", "account": "acct_2",
		"start": "2026-11-30T00:00:00Z", "meters": {"api": {"provider_meter": "mtr_other", "aggregation": "count"}}}}`
	f := newSumsFixtureOf(t, config, time.Date(2026, 11, 30, 3, 30, 0, 0, time.UTC))
	f.workload(t, "wl-d", 1_000_000, "cus_d")
	f.other.set("mtr_api", "cus_d", hour0.Add(time.Hour), 441)
	srcs, err := sums.ParseSources(config)
	if err != nil {
		t.Fatal(err)
	}
	sender := &sentPages{}
	ledger := f.env.TableName("LedgerTable")
	flush, err := pager.NewOutbox(pager.OutboxConfig{DB: f.env.DynamoDB, Table: ledger, Sender: sender,
		Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	ender := &cancelling{}
	rec, err := reconcile.NewSums(reconcile.SumsConfig{Spend: f.spend, Sources: srcs,
		Readers: map[string]sums.Reader{"stripe-other": f.other, "stripe-test": ender}, DB: f.env.DynamoDB,
		Table: ledger, Flush: flush, Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Run(context.Background(), "run-1"); err != nil {
		t.Fatal(err)
	}
	// when the provider cancels the bucket to 0 and the next run ends early
	f.now = f.now.Add(10 * time.Minute)
	f.other.set("mtr_api", "cus_d", hour0.Add(time.Hour), 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ender.cancel = cancel
	runs, _ := rec.Run(ctx, "run-2")
	if len(runs) == 0 || runs[0].Downs != 1 {
		t.Fatalf("runs = %+v, want stripe-other with one downward revision", runs)
	}
	// then the downward revision was paged all the same
	var downs []string
	for _, k := range sender.sent() {
		if len(k) > len("bucket-down#") && k[:len("bucket-down#")] == "bucket-down#" {
			downs = append(downs, k)
		}
	}
	if len(downs) != 1 {
		t.Fatalf("downward revision pages sent = %v, want 1 (recorded pending: %d)", downs, len(f.pages(t, "bucket-down#")))
	}
}
