package queue

import (
	"context"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// HandleBatch runs process for every record of an SQS batch, at most
// concurrency at a time, and returns the partial-batch response listing the
// records process did not acknowledge (ReportBatchItemFailures).
func HandleBatch(ctx context.Context, ev events.SQSEvent, concurrency int, process func(context.Context, events.SQSMessage) bool) events.SQSEventResponse {
	var mu sync.Mutex
	var resp events.SQSEventResponse
	sem := make(chan struct{}, max(concurrency, 1))
	one := func(rec events.SQSMessage) {
		defer func() { <-sem }()
		if !process(ctx, rec) {
			mu.Lock()
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	for i, rec := range ev.Records {
		sem <- struct{}{}
		if i == len(ev.Records)-1 {
			// The last record runs on the caller's goroutine, whose stack
			// has grown already: a batch of one starts no goroutine.
			one(rec)
			continue
		}
		wg.Go(func() { one(rec) })
	}
	wg.Wait()
	return resp
}
