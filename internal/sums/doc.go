// Package sums describes the providers that serve usage as sums per time
// bucket rather than record by record (Stripe's meter event summaries,
// OpenAI's usage), and the rule by which the ledger counts them.
//
// A sum cannot be deduplicated against records. For each workload, meter
// and bucket the ledger keeps W, the sum of the webhook records it applied
// to the bucket (still deduplicated per record), and P*, the highest value
// the provider has shown for it, and counts max(W, P*) ([Counted]). Every
// change appends the increase of that maximum, so a late webhook after a
// top-up adds only what exceeds P*, and a poll adds only what exceeds the
// webhooks and every earlier poll.
//
// A [Source] is one provider account's sums: its meters, their scale and
// tolerance, its bucketing, start date and settle horizon. Its width may
// change only at a stated boundary ([Source.Widths]), so that a bucket's
// width is a function of its start: [Source.Bucket] and
// [Source.WidthAt] are the one rule by which the ledger and the
// reconciler bucket, and [Source.Spans] cuts a read at the boundaries. SUM_SOURCES
// holds them as JSON ([ParseSources]); [Sources.CheckDoor] checks them at
// start against what the door counts of each usage source ([Door]). A
// [Reader] is a provider adapter
// (packages stripeusage, openaiusage and openmeter). [Providers] says
// what each provider serves: its alias prefix and widths and, for
// OpenAI, the endpoints a meter names and the fields it may count, with
// integer weights ([Meter.Weights]).
package sums
