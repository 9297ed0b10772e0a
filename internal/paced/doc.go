// Package paced is the one HTTP client hookline's provider readers call
// providers' APIs with: Stripe's meter event summaries
// (internal/stripeusage), OpenAI's usage and costs (internal/openaiusage),
// and OpenMeter's meter query and event export (internal/openmeter). Each
// reader keeps only its own request and decoding; the rules every
// provider's API is read under live here, once.
//
// # Calls
//
// [Client.Get] sends one GET and repeats it while the provider says to:
//
//   - Pacing. Each endpoint (a path template, such as Stripe's
//     /v1/billing/meters/{id}/event_summaries) has its own token bucket of
//     [Config.Rate] calls a second and [Config.Burst] at once; a call
//     waits for its token. Retries are paced too.
//   - Retries. A 429, a 5xx and a call that got no full answer (the
//     network, or [Config.Timeout]) are repeated, up to
//     [Config.MaxAttempts] calls in all; then the call fails with a
//     [*GaveUpError]. Any other status is the reader's to read: the
//     answer comes back as a [Response]. A GET has no effect to repeat.
//   - Retry-After. When the provider names a wait, no request of the
//     client, to any endpoint, is sent before it runs out: not the retry,
//     nor any later call, though the call that got it has given up. A
//     call whose context's deadline comes before the wait runs out is not
//     sent: it fails at once with a [*HeldError] ([ErrHeld]). A wait is
//     named by OpenAI's retry-after-ms (milliseconds, a decimal), or by
//     Retry-After as delta seconds or as an HTTP date ([RetryAfter]). A wait is never negative
//     (a date in the past is 0) and never longer than [Config.MaxRetryAfter]
//     (default [MaxRetryAfter]): a value too large to represent, such as
//     99999999999 seconds or 1e300 ms, means "wait the cap", not "no
//     header". A malformed value is no header.
//   - Backoff. Without a named wait, retry n waits a draw of
//     [Config.Jitter] (full jitter: uniform in [0, ceiling]) below a
//     ceiling of [Config.BackoffBase] doubled per retry up to
//     [Config.BackoffMax], or what [Config.Backoff] says.
//
// Time is the caller's: [Config.Now] is the pace's clock and
// [Config.Sleep] every wait, pace and retry alike, so a test drives a
// manual clock and records the waits instead of racing a wall clock;
// [SeededJitter] makes the jitter reproducible.
//
// The key sent in the request's headers is the caller's; the transport's
// error text is cleared of [Config.Secret] before it reaches an error or
// a log line. [Client.Stats] counts calls, 429s and retries.
//
// # Pages
//
// A [Walk] is one paged read's guard. Each page that says there is more
// hands [Walk.Next] the cursor it leads to; the walk refuses, with a
// [*WalkError], a page that cannot go on (no cursor), a cursor seen
// before anywhere in this walk (pages whose cursors alternate A, B, A
// stop at the second A, not only a cursor equal to the last), and a page
// past its budget, the most pages the query can take (one a bucket, for
// instance). A provider whose pages loop therefore costs a bounded number
// of calls, never a Lambda's whole deadline.
//
// Usage:
//
//	c, err := paced.New(paced.Config{Name: "stripe", Rate: 25, Secret: key})
//	if err != nil {
//		return err
//	}
//	walk := paced.NewWalk(buckets + 1)
//	for {
//		resp, err := c.Get(ctx, endpoint, u.String(), header)
//		... decode resp.Body; stop on the last page ...
//		if err := walk.Next(lastID); err != nil {
//			return err
//		}
//	}
package paced
