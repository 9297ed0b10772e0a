package sums

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrBadSource means a sums source's configuration is refused.
var ErrBadSource = errors.New("sums: bad sums source")

// ErrRead means a provider's sums could not be read to the end; nothing
// read in that call may be taken as complete.
var ErrRead = errors.New("sums: provider read failed")

// ErrRefused marks a read that asking again cannot mend: the provider
// refused the query (a 4xx other than 429: a customer or project it does
// not know, a meter deleted) or answered a value that is no count of
// units. The reconciler skips that workload for the run, pages, and reads
// the others.
var ErrRefused = errors.New("sums: the provider refused the query")

// Refusal reports whether a provider's answer status refuses one query
// for good ([ErrRefused]): a 4xx, but not 401 or 403 (the key, which
// fails every query of the source), 408 or 429 (asking again helps).
func Refusal(status int) bool {
	switch status {
	case 401, 403, 408, 429:
		return false
	}
	return status >= 400 && status < 500
}

// Aggregations a meter may have. Only those that add up across buckets
// are accepted: a sum of bucket values is then the sum over their union.
const (
	AggregationSum   = "sum"
	AggregationCount = "count"
	// AggregationLast is Stripe's "last": refused, it does not add up.
	AggregationLast = "last"
)

// Meter is one provider meter reconciled against sums.
type Meter struct {
	// Name is the ledger's meter: the meter the usage source's mapping
	// gives its webhook records, whose sum per bucket is W. It is in
	// every bucket's key.
	Name string `json:"-"`
	// DoorNames are other meter names the usage source's mapping gives
	// this meter's records. A meter renamed at the door keeps its Name
	// here and lists the new one, so that records under either name count
	// in the same buckets; a Name changed instead starts new buckets
	// beside the open ones of the old name, over the same provider meter.
	DoorNames []string `json:"door_names,omitempty"`
	// ProviderMeter is the provider's ID of the meter (Stripe: mtr_...).
	// A provider whose meters name an endpoint (OpenAI) has none.
	ProviderMeter string `json:"provider_meter,omitempty"`
	// Aggregation is the provider's formula: sum or count. A meter that
	// names an endpoint sums its fields; its aggregation is sum.
	Aggregation string `json:"aggregation,omitempty"`
	// Endpoint is the provider's endpoint of sums the meter reads (OpenAI:
	// "completions", "embeddings", ..., or "costs"); see [Provider].
	Endpoint string `json:"endpoint,omitempty"`
	// Field is the one field of the endpoint's results that counts
	// (OpenAI: "input_tokens"), as a weight of 1.
	Field string `json:"field,omitempty"`
	// Fields is a weighted sum of the results' fields, by field name, with
	// positive integer weights: {"input_tokens": 1, "output_tokens": 4}.
	// A meter names Field or Fields, never both, so that no meter counts
	// "tokens" without saying which.
	Fields map[string]json.Number `json:"fields,omitempty"`
	// Currency is a money meter's currency, lower-case ISO 4217 ("usd"):
	// an amount in another currency is refused. Its unit is the currency's
	// unit divided by Scale (1000000: micro-dollars).
	Currency string `json:"currency,omitempty"`
	// PreAggregated is a Stripe meter with an event_time_window, where only
	// the last event of a window counts: refused.
	PreAggregated bool `json:"pre_aggregated,omitempty"`
	// Scale multiplies the provider's value into ledger units, as a usage
	// mapping's scale does: 1000 counts 1.5 as 1500. Default 1.
	Scale int64 `json:"scale,omitempty"`
	// Tolerance is the difference, in ledger units, below which a
	// provider's revision is noise: no revision, delta or page is recorded
	// for it. Default 0.
	Tolerance int64 `json:"tolerance,omitempty"`
	// FollowDown makes the bucket count the provider's latest value when
	// it is revised down (max(W, P_latest)), lowering the total. By
	// default a downward revision changes nothing and is paged.
	FollowDown bool `json:"follow_down,omitempty"`
}

// Names are the meter names its records carry at the door: Name, then
// [Meter.DoorNames].
func (m Meter) Names() []string { return append([]string{m.Name}, m.DoorNames...) }

// Identity is what the meter reads at the provider: its provider meter,
// or its endpoint and the fields that count. Two names with one
// identity read the same usage.
func (m Meter) Identity() string {
	if m.ProviderMeter != "" {
		return m.ProviderMeter
	}
	fields := slices.Sorted(maps.Keys(m.Weights()))
	return m.Endpoint + ":" + strings.Join(fields, "+")
}

// Weights are the meter's fields and their weights: Field with weight 1,
// or Fields. [ParseSources] has checked that every weight is a positive
// integer; one that is not counts 0.
func (m Meter) Weights() map[string]int64 {
	if m.Field != "" {
		return map[string]int64{m.Field: 1}
	}
	out := make(map[string]int64, len(m.Fields))
	for f, w := range m.Fields {
		n, err := strconv.ParseInt(w.String(), 10, 64)
		if err != nil || n < 1 {
			n = 0
		}
		out[f] = n
	}
	return out
}

// Units is the provider's value v in ledger units: v × Scale, rounded to
// the nearest unit at the bucket (float noise such as 0.30000000000000004
// becomes 0.3 × Scale exactly). ok is false for a negative, NaN or
// infinite value, or one beyond 2^53 units.
func (m Meter) Units(v float64) (units int64, ok bool) {
	scaled := math.Round(v * float64(max(m.Scale, 1)))
	if math.IsNaN(scaled) || scaled < 0 || scaled > 1<<53 {
		return 0, false
	}
	return int64(scaled), true
}

// Source is one provider account's sums: what the reconciler polls and
// how the ledger buckets the webhook records of UsageSource.
type Source struct {
	// Name names the sums source; it is in every bucket's key.
	Name string `json:"-"`
	// Provider is the adapter: "stripe" or "openai" ([Providers]).
	Provider string `json:"provider"`
	// UsageSource is the door's usage source (USAGE_MAPPINGS) whose
	// webhook records the provider's sums cover.
	UsageSource string `json:"usage_source"`
	// Account and Livemode scope every key, so a test-mode summary never
	// tops up a live workload.
	Account  string `json:"account"`
	Livemode bool   `json:"livemode"`
	// Width is the bucket width (Stripe: hour; OpenAI: a minute, an hour
	// or a day, and a day for costs). Buckets are aligned in
	// UTC, on the provider's timestamp truncated to whole seconds. Once
	// parsed, it is the width now: the last of Widths.
	Width Duration `json:"width,omitempty"`
	// Widths is the history of the width, for a source whose width
	// changed: the first width holds from Start, and each later one from
	// its From, a stated boundary aligned to both widths. A bucket's width
	// is a function of its start ([Source.WidthAt]), the same for the
	// spend worker and the reconciler. A source sets Width or Widths;
	// [ParseSources] fills Widths from Width.
	Widths []WidthFrom `json:"widths,omitempty"`
	// Start is the first instant counted: no bucket before it is read,
	// and webhook records before it are counted as records, not in
	// buckets.
	Start time.Time `json:"start"`
	// Settle is how long after a bucket's end the provider may still
	// revise it (Stripe: 35 days). A bucket is re-read until then, and
	// paged at settle if the paths disagree.
	Settle Duration `json:"settle,omitempty"`
	// Lag keeps reads behind now: a bucket is closed once its end is Lag
	// in the past.
	Lag Duration `json:"lag,omitempty"`
	// Interval is how often the source is polled.
	Interval Duration `json:"interval,omitempty"`
	// Recent is the window read in buckets of Width before now (default
	// 48h, widened back to a UTC midnight). The older buckets, back to the
	// settle horizon, are read in day buckets and compared with the
	// ledger's; a day that differs is read again in buckets of Width, and
	// so is one slice of the days in turn each sweep, which finds
	// revisions that cancel out within a day. A
	// Recent at or past Settle reads the whole window in buckets of
	// Width; a source of day buckets reads them all as they are.
	Recent Duration `json:"recent,omitempty"`
	// QuietEvery is the number of sweeps over which the quiet workloads
	// are rotated: each sweep reads one slice of them, so a quiet workload
	// is read at least once every QuietEvery sweeps (default 12).
	QuietEvery int `json:"quiet_every,omitempty"`
	// Budget is how long one run may read the source (default half the
	// Interval, at least [MinBudget]). A run out of budget stops, records where, and the next
	// run resumes there.
	Budget Duration `json:"budget,omitempty"`
	// Webhooks says whether webhook records feed the meters, so that a
	// bucket's webhook sum W is evidence to compare at settle. Default:
	// the provider's (true, false for OpenAI, which sends none). Without
	// them W is 0 by construction, and settle records and pages no gap.
	Webhooks *bool `json:"webhooks,omitempty"`
	// AliasPrefix picks, among a workload's aliases, the provider's
	// reference for it (default: the provider's, Stripe "cus_", OpenAI
	// "proj_").
	AliasPrefix string `json:"alias_prefix,omitempty"`
	// BaseURL overrides the provider's API address (the local simulator).
	BaseURL string `json:"base_url,omitempty"`
	// Meters are keyed by the ledger's meter name.
	Meters map[string]Meter `json:"meters"`
	// Alerts are the provider's threshold alerts by ID (Stripe: alrt_...):
	// which ledger meter each watches and when it was created, since the
	// alert object carries no creation time. An alert not listed is
	// compared from the source's Start.
	Alerts map[string]Alert `json:"alerts,omitempty"`
}

// Alert is one configured threshold alert.
type Alert struct {
	// Meter is the ledger's meter the alert watches.
	Meter string `json:"meter"`
	// Created is when the alert was created: the provider counts usage
	// for it from then on.
	Created time.Time `json:"created"`
}

// MeterByProvider finds the ledger meter whose provider ID is id.
func (s Source) MeterByProvider(id string) (Meter, bool) {
	for _, m := range s.Meters {
		if m.ProviderMeter == id {
			return m, true
		}
	}
	return Meter{}, false
}

// HasWebhooks reports whether webhook records feed the source's meters
// ([Source.Webhooks]).
func (s Source) HasWebhooks() bool { return s.Webhooks == nil || *s.Webhooks }

// Mode is "live" or "test", as it appears in keys.
func (s Source) Mode() string {
	if s.Livemode {
		return "live"
	}
	return "test"
}

// WidthFrom is one width of a source's buckets and the instant it holds
// from ([Source.Widths]). The first width holds from the source's start,
// and its From is left out.
type WidthFrom struct {
	Width Duration  `json:"width"`
	From  time.Time `json:"from,omitzero"`
}

// WidthAt is the width of the bucket that holds t: the last of the
// source's [Source.Widths] whose From is not after t, the first one
// before it. Every boundary is aligned to the widths on both its sides,
// so no bucket straddles one.
func (s Source) WidthAt(t time.Time) time.Duration {
	if len(s.Widths) == 0 {
		return s.Width.D()
	}
	t = t.UTC().Truncate(time.Second)
	w := s.Widths[0].Width.D()
	for _, e := range s.Widths[1:] {
		if !t.Before(e.From) {
			w = e.Width.D()
		}
	}
	return w
}

// Bucket is the bucket [start, end) that holds t: t in UTC, truncated to
// whole seconds (the provider's precision), then to the width at t
// ([Source.WidthAt]). It is the one rule by which both the ledger and the
// reconciler bucket.
func (s Source) Bucket(t time.Time) (start, end time.Time) {
	w := s.WidthAt(t)
	start = t.UTC().Truncate(time.Second).Truncate(w)
	return start, start.Add(w)
}

// Span is a stretch [Start, End) of buckets of one Width.
type Span struct {
	Start, End time.Time
	Width      time.Duration
}

// Spans cuts [from, to) at the source's width boundaries into stretches
// of one width each, in order: what one query of the provider may ask.
// from and to are expected aligned to the widths around them.
func (s Source) Spans(from, to time.Time) []Span {
	var out []Span
	for from.Before(to) {
		w, end := s.WidthAt(from), to
		for _, e := range s.Widths {
			if e.From.After(from) && e.From.Before(end) {
				end = e.From
			}
		}
		out = append(out, Span{Start: from, End: end, Width: w})
		from = end
	}
	return out
}

// WidthsAgree reports whether the source and o give every instant in
// [from, until) the same width, and if not, the first instant where they
// differ: whether the buckets counted by o's widths there are the buckets
// the source would count.
func (s Source) WidthsAgree(o Source, from, until time.Time) (differs time.Time, ok bool) {
	points := []time.Time{from}
	for _, e := range append(slices.Clone(s.Widths), o.Widths...) {
		if e.From.After(from) && e.From.Before(until) {
			points = append(points, e.From)
		}
	}
	slices.SortFunc(points, time.Time.Compare)
	for _, p := range points {
		if s.WidthAt(p) != o.WidthAt(p) {
			return p, false
		}
	}
	return time.Time{}, true
}

// Query is one read of a provider's sums: one meter, one workload's
// provider reference, buckets of Width from Start to End (End exclusive,
// both aligned).
type Query struct {
	Source     Source
	Meter      Meter
	Ref        string
	Start, End time.Time
	Width      time.Duration
}

// Sum is the provider's value for one bucket, as it shows it now.
type Sum struct {
	Start, End time.Time
	Value      float64
}

// Reader is a provider adapter. Sums returns every bucket the provider
// shows for q, reading every page; an error wrapping [ErrRead] means the
// window was not read to the end. A bucket the provider does not show is
// not observed (never zero).
type Reader interface {
	Sums(ctx context.Context, q Query) ([]Sum, error)
}

// Counted is what the ledger counts for a bucket: max(W, P*).
func Counted(w, pStar int64) int64 { return max(w, pStar) }
