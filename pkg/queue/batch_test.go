package queue_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/pkg/queue"
)

func TestHandleBatchBoundsConcurrencyAndReportsFailures(t *testing.T) {
	for _, n := range []int{1, 2, 7} {
		var ev events.SQSEvent
		for i := range n {
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: string(rune('a' + i))})
		}
		var running, peak atomic.Int64
		var mu sync.Mutex
		var seen []string
		resp := queue.HandleBatch(context.Background(), ev, 2, func(_ context.Context, m events.SQSMessage) bool {
			now := running.Add(1)
			for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
			}
			time.Sleep(5 * time.Millisecond)
			running.Add(-1)
			mu.Lock()
			seen = append(seen, m.MessageId)
			mu.Unlock()
			return m.MessageId != "b" // b fails
		})
		slices.Sort(seen)
		if len(seen) != n || peak.Load() > 2 {
			t.Fatalf("batch of %d: processed %v, peak concurrency %d (want all, at most 2)", n, seen, peak.Load())
		}
		var failed []string
		for _, f := range resp.BatchItemFailures {
			failed = append(failed, f.ItemIdentifier)
		}
		want := []string(nil)
		if n >= 2 {
			want = []string{"b"}
		}
		if !slices.Equal(failed, want) {
			t.Fatalf("batch of %d: failures %v, want %v", n, failed, want)
		}
	}
}
