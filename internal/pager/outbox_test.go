package pager

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/testkit"
)

// pagerDuty is a test Events API that answers with the given statuses in
// turn (the last one repeats) and counts accepted events per dedup key.
type pagerDuty struct {
	mu       sync.Mutex
	statuses []int
	calls    int
	accepted map[string]int
}

func (p *pagerDuty) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	status := p.statuses[min(p.calls, len(p.statuses)-1)]
	p.calls++
	if status == http.StatusAccepted {
		ev, _ := decodeBody(r)
		p.accepted[ev.DedupKey]++
	}
	w.WriteHeader(status)
}

func newOutboxForTest(t *testing.T, statuses ...int) (*Outbox, *pagerDuty, *testkit.ManualClock) {
	t.Helper()
	env := localaws.StartForTest(t)
	pd := &pagerDuty{statuses: statuses, accepted: map[string]int{}}
	srv := httptest.NewServer(pd)
	t.Cleanup(srv.Close)
	sender, err := NewHTTPSender(HTTPSenderConfig{URL: srv.URL, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	clk := testkit.NewManualClock(time.Date(2026, 11, 30, 3, 17, 0, 0, time.UTC))
	o, err := NewOutbox(OutboxConfig{DB: env.DynamoDB, Table: env.TableName("LedgerTable"), Sender: sender,
		BaseBackoff: time.Second, MaxBackoff: 8 * time.Second, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return o, pd, clk
}

func TestOutboxDeliversAfterRecoveryExactlyOnce(t *testing.T) {
	ctx := context.Background()
	// given PagerDuty answering 503 twice, then 202
	o, pd, clk := newOutboxForTest(t, http.StatusServiceUnavailable, http.StatusServiceUnavailable, http.StatusAccepted)
	if ok, err := o.Enqueue(ctx, testEvent("cap:w1:pause:e0")); err != nil || !ok {
		t.Fatalf("Enqueue = %v, %v", ok, err)
	}

	// when flushing: the first attempt fails and the page stays pending
	res, err := o.Flush(ctx)
	if err != nil || res.Retried != 1 || res.Sent != 0 {
		t.Fatalf("first Flush = %+v, %v; want one retry", res, err)
	}
	// and a flush before the backoff has passed sends nothing
	if res, err = o.Flush(ctx); err != nil || res.Skipped != 1 || pd.calls != 1 {
		t.Fatalf("early Flush = %+v, %v, calls %d; want skipped", res, err, pd.calls)
	}
	// then after each backoff the page is retried, and delivered once
	clk.Advance(time.Second)
	if res, err = o.Flush(ctx); err != nil || res.Retried != 1 {
		t.Fatalf("second Flush = %+v, %v", res, err)
	}
	p, err := o.Get(ctx, "cap:w1:pause:e0")
	if err != nil || p.Attempts != 2 || !p.NextAttemptAt.Equal(clk.Now().Add(2*time.Second)) || p.LastError == "" {
		t.Fatalf("page after two failures = %+v, %v; want attempts 2, next in 2s", p, err)
	}
	clk.Advance(2 * time.Second)
	if res, err = o.Flush(ctx); err != nil || res.Sent != 1 {
		t.Fatalf("third Flush = %+v, %v; want sent", res, err)
	}
	for range 3 {
		clk.Advance(time.Minute)
		if res, err = o.Flush(ctx); err != nil || res.Sent+res.Retried != 0 {
			t.Fatalf("later Flush = %+v, %v; want nothing to do", res, err)
		}
	}
	if pd.accepted["cap:w1:pause:e0"] != 1 || pd.calls != 3 {
		t.Errorf("accepted %v after %d calls, want exactly one delivery after 3 calls", pd.accepted, pd.calls)
	}
	pending, _ := o.Pending(ctx)
	sent, _ := o.Sent(ctx, 0)
	if len(pending) != 0 || len(sent) != 1 || sent[0].Status != StatusSent || sent[0].Attempts != 3 {
		t.Errorf("pending %d, sent %+v", len(pending), sent)
	}
}

func TestOutboxEnqueueOnce(t *testing.T) {
	ctx := context.Background()
	o, _, clk := newOutboxForTest(t, http.StatusAccepted)
	env := o.db.(*dynamodb.Client)

	// given a page enqueued on its own
	if ok, err := o.Enqueue(ctx, testEvent("k-1")); err != nil || !ok {
		t.Fatalf("Enqueue = %v, %v", ok, err)
	}
	// when enqueued again, then it is reported as already there
	if ok, err := o.Enqueue(ctx, testEvent("k-1")); err != nil || ok {
		t.Fatalf("second Enqueue = %v, %v; want false, nil", ok, err)
	}
	// and the same key inside a transaction cancels that transaction
	item, err := o.EnqueueItem(testEvent("k-1"), clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{item}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("transaction err = %v, want cancelled", err)
	}
	// while a new key in a transaction is enqueued
	item, _ = o.EnqueueItem(testEvent("k-2"), clk.Now())
	if _, err = env.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{item}}); err != nil {
		t.Fatal(err)
	}
	pending, err := o.Pending(ctx)
	if err != nil || len(pending) != 2 {
		t.Fatalf("Pending = %d, %v; want 2", len(pending), err)
	}
	if pending[0].Event.RoutingKey != "rk-test" || pending[0].Event.Payload.Summary == "" {
		t.Errorf("stored event lost fields: %+v", pending[0].Event)
	}
}

func TestOutboxConcurrentFlushSendsOnce(t *testing.T) {
	ctx := context.Background()
	// given five pending pages
	o, pd, _ := newOutboxForTest(t, http.StatusAccepted)
	keys := []string{"a", "b", "c", "d", "e"}
	for _, k := range keys {
		if _, err := o.Enqueue(ctx, testEvent(k)); err != nil {
			t.Fatal(err)
		}
	}
	// when four flushers run at once
	var wg sync.WaitGroup
	var sent atomic.Int64
	for range 4 {
		wg.Go(func() {
			res, err := o.Flush(ctx)
			if err != nil {
				t.Errorf("Flush: %v", err)
			}
			sent.Add(int64(res.Sent))
		})
	}
	wg.Wait()
	// then every page was sent exactly once
	if sent.Load() != int64(len(keys)) || pd.calls != len(keys) {
		t.Errorf("sent %d in %d calls, want %d", sent.Load(), pd.calls, len(keys))
	}
	for _, k := range keys {
		if pd.accepted[k] != 1 {
			t.Errorf("page %s delivered %d times", k, pd.accepted[k])
		}
	}
}

func TestOutboxRejectedPageIsKeptAsFailed(t *testing.T) {
	ctx := context.Background()
	// given PagerDuty rejecting the event for good
	o, pd, clk := newOutboxForTest(t, http.StatusBadRequest)
	if _, err := o.Enqueue(ctx, testEvent("bad")); err != nil {
		t.Fatal(err)
	}
	// when flushed, then it is failed, listed, and never retried
	res, err := o.Flush(ctx)
	if err != nil || res.Failed != 1 {
		t.Fatalf("Flush = %+v, %v", res, err)
	}
	clk.Advance(time.Hour)
	if _, err := o.Flush(ctx); err != nil || pd.calls != 1 {
		t.Fatalf("retry of a rejected page: calls %d, %v", pd.calls, err)
	}
	failed, err := o.Failed(ctx)
	if err != nil || len(failed) != 1 || failed[0].DedupKey != "bad" {
		t.Errorf("Failed = %+v, %v", failed, err)
	}
}

func TestBackoff(t *testing.T) {
	o := &Outbox{base: time.Second, max: 8 * time.Second}
	tests := []struct {
		name     string
		attempts int
		want     time.Duration
	}{
		{name: "first failure", attempts: 1, want: time.Second},
		{name: "second", attempts: 2, want: 2 * time.Second},
		{name: "fourth", attempts: 4, want: 8 * time.Second},
		{name: "capped", attempts: 30, want: 8 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given attempts failures, when the next wait is computed, then it doubles up to the cap
			if got := o.backoff(tc.attempts); got != tc.want {
				t.Errorf("backoff(%d) = %v, want %v", tc.attempts, got, tc.want)
			}
		})
	}
}

func decodeBody(r *http.Request) (Event, error) {
	var ev Event
	err := json.NewDecoder(r.Body).Decode(&ev)
	return ev, err
}

func TestFlushKeysSendsOnlyTheNamedPendingPages(t *testing.T) {
	ctx := context.Background()
	// given two pending pages
	o, pd, _ := newOutboxForTest(t, http.StatusAccepted)
	for _, k := range []string{"cap:w1:pause:e0", "cap:w2:pause:e0"} {
		if ok, err := o.Enqueue(ctx, testEvent(k)); err != nil || !ok {
			t.Fatalf("Enqueue %s = %v, %v", k, ok, err)
		}
	}
	// when one is flushed by its key, with an unknown key beside it
	res, err := o.FlushKeys(ctx, []string{"cap:w1:pause:e0", "no-such-page"})
	// then only that page is sent, and the other stays pending
	if err != nil || res.Sent != 1 || res.Skipped != 1 {
		t.Fatalf("FlushKeys = %+v, %v; want one sent, one skipped", res, err)
	}
	if pd.accepted["cap:w1:pause:e0"] != 1 || pd.accepted["cap:w2:pause:e0"] != 0 {
		t.Fatalf("accepted %v", pd.accepted)
	}
	// and flushing the sent key again sends nothing
	if res, err := o.FlushKeys(ctx, []string{"cap:w1:pause:e0"}); err != nil || res.Sent != 0 || pd.calls != 1 {
		t.Fatalf("second FlushKeys = %+v, %v, calls %d", res, err, pd.calls)
	}
	pending, _ := o.Pending(ctx)
	if len(pending) != 1 || pending[0].DedupKey != "cap:w2:pause:e0" {
		t.Fatalf("pending = %+v", pending)
	}
}
