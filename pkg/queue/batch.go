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
	var wg sync.WaitGroup
	for _, rec := range ev.Records {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if !process(ctx, rec) {
				mu.Lock()
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return resp
}
