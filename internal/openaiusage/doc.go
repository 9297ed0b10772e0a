// Package openaiusage reads OpenAI's organization usage and costs for the
// reconciler: a [sums.Reader] over GET /v1/organization/usage/{endpoint}
// (completions, embeddings, images, audio_speeches, audio_transcriptions,
// ...) and GET /v1/organization/costs.
//
// OpenAI sends no usage webhook: these sums are the only path, so a cap
// on an OpenAI project acts one poll interval plus OpenAI's lag late.
//
// [Reader.Sums] reads one meter for one project (the query's Ref, a
// proj_ alias): bucket_width 1m, 1h or 1d (costs: 1d only),
// group_by[]=project_id and project_ids[]=Ref, every page, following
// next_page while has_more is true however short a page is. A usage
// meter's value per bucket is the weighted sum of the fields it names
// ([sums.Meter.Weights]), integers over the project's results; a costs
// meter's is the sum of amount.value, a float in the meter's currency,
// which the reconciler rounds at the bucket to the meter's scale. A
// bucket whose results are empty for the project is not observed: OpenAI
// serves every bucket of the range, and an empty one says nothing the max
// rule could count. A result of another project or currency, a bucket of
// another width and a page that cannot go on are refused, so no partial
// read is taken as complete.
//
// The calls go through a [paced.Client], and the pages through a
// [paced.Walk] of one page a bucket: a next_page seen before in the read
// or a page past that budget stops it. The reader paces its calls with
// one token bucket per endpoint ([Config.Rate]; OpenAI documents no limit
// for these endpoints) and retries a 429, a 5xx or a network failure with
// full jitter backoff ([Config.Backoff], the AWS SDK's), honouring
// retry-after-ms or Retry-After (seconds or an HTTP date) when OpenAI
// sends one, capped at [MaxRetryAfter] (a value too large for a number
// waits the cap), up to [Config.MaxAttempts] calls. Any other 4xx is an
// [*APIError]. Every error of [Reader.Sums] wraps [sums.ErrRead].
// [Reader.Stats] counts calls, 429s and retries.
//
// The admin key has organisation-owner power. It is sent in the
// Authorization header only, never logged, and redacted from any text of
// OpenAI's or of the transport before it reaches an error.
//
// The answers are decoded into this package's own small types rather than
// openai-go's, whose package would add some 25 MB to the reconciler; the
// package's tests decode the same pages with openai-go v3's types and
// check that both read the same values, and that the fields
// [sums.OpenAIEndpoints] allows are the integer fields of openai-go's
// result types.
//
// Usage:
//
//	r, err := openaiusage.New(openaiusage.Config{Key: adminKey, Logger: log})
//	if err != nil {
//		return err
//	}
//	got, err := r.Sums(ctx, sums.Query{Source: src, Meter: m, Ref: "proj_...",
//		Start: start, End: end, Width: time.Hour})
package openaiusage
