// Package stripeusage reads Stripe Billing usage for the reconciler: a
// [sums.Reader] over Stripe's meter event summaries, and [ParseAlert] for
// Stripe's billing.alert.triggered event.
//
// [Reader.Sums] lists GET /v1/billing/meters/{id}/event_summaries for one
// meter and one customer, hour or day buckets, every page, and returns
// one [sums.Sum] per bucket, in ascending order. It refuses a query
// Stripe would refuse (a time not aligned to the bucket width, a width
// other than an hour or a day) before any call; and it checks what Stripe
// serves, as the OpenAI reader does: a summary whose livemode is not the
// source's (so a test-mode summary never tops up a live workload), of
// another width than the query's, or outside its window is refused, and a
// bucket shown twice (a summary repeated on a later page) is counted once,
// with its latest value. The pages are walked with a [paced.Walk] of one
// page a bucket: a starting_after seen before in the read (last IDs A, B,
// A), an empty page with has_more, or a page past that budget stops the
// read with a [*paced.WalkError], after a bounded number of calls.
//
// The calls go through a [paced.Client]. Stripe answers a call over its
// rate limit with 429 and no Retry-After, and stripe-go does not retry
// it. The reader paces its calls with one token bucket per endpoint
// ([Config.Rate], [Config.Burst]) and retries a 429, a 5xx or a network
// failure (a GET is safe to repeat) with full jitter backoff, honouring a
// Retry-After header (seconds or an HTTP date, at most [MaxRetryAfter],
// a larger one waiting the cap) when a proxy sends one, up to
// [Config.MaxAttempts] calls. Any other 4xx is an [*APIError] and is not
// retried. Every error of [Reader.Sums] wraps [sums.ErrRead]: nothing of a
// failed call is complete. [Reader.Stats] counts calls, 429s and retries.
//
// The secret key is sent in the Authorization header only: it is never
// logged, and any text of Stripe's that echoes it is redacted before it
// reaches an error.
//
// Usage:
//
//	r, err := stripeusage.New(stripeusage.Config{Key: key, Logger: log})
//	if err != nil {
//		return err
//	}
//	got, err := r.Sums(ctx, sums.Query{Source: src, Meter: m, Ref: "cus_...",
//		Start: start, End: end, Width: time.Hour})
package stripeusage
