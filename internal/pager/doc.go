// Package pager delivers pages to PagerDuty (Events API v2) through a
// durable outbox in DynamoDB.
//
// A page is written to the outbox (status pending) before anything is sent,
// usually inside the caller's own TransactWriteItems, so the decision that
// caused it and the page commit together or not at all (see the example of
// [Outbox.EnqueueItem]); [Outbox.Enqueue] writes a page on its own.
//
// [Outbox.Flush] later sends every pending page through a [Sender], retries
// failures with exponential backoff until they succeed, and marks each page
// sent with a conditional update. A page is never lost (it stays pending, or
// becomes failed when PagerDuty rejects it for good) and never enqueued twice:
// the outbox item is keyed by the page's dedup key and its Put is conditioned
// on attribute_not_exists. Sends are claimed with a short lease, so two
// flushers do not send the same page at once; should a flusher die after
// sending and before marking, the page is sent again after the lease, and
// PagerDuty collapses the repeat on its dedup_key.
//
// Item layout (in the table named by [OutboxConfig.Table]; keys.go spells
// every key):
//
//	pk = PAGE#<dedup_key>   sk = PAGE
//	gsi1pk = OUTBOX#pending | OUTBOX#sent | OUTBOX#failed
//	gsi1sk = <created_at or sent_at, fixed-width UTC>#<dedup_key>
//
// [HTTPSender] is the PagerDuty Events API v2 client: POST {base}/v2/enqueue,
// 202 is success, 429, 5xx and network failures are retriable, any other
// status (400) is permanent. It makes one attempt; the outbox does the
// retrying. Routing keys are credentials and are never logged.
package pager
