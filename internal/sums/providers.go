package sums

import (
	"slices"
	"time"
)

// Provider is what [ParseSources] knows of a provider of sums.
type Provider struct {
	// PollOnly marks a provider that sends no usage per record: its sums
	// are the only path ([Source.Webhooks] defaults to false).
	PollOnly bool
	// Records marks a provider that also serves its records one by one,
	// to the reconciler's per-record export (OpenMeter): a webhook record
	// of its sums then awaits the export as any record does.
	Records bool
	// AliasPrefix is the default [Source.AliasPrefix]: the prefix of the
	// provider's references among a workload's aliases.
	AliasPrefix string
	// Widths are the bucket widths the provider serves; nil allows any
	// width of at least a minute that divides a day.
	Widths []time.Duration
	// Endpoints, when set, are the provider's endpoints of sums by name:
	// each of its meters names one ([Meter.Endpoint]) and the fields that
	// count ([Meter.Field], [Meter.Fields]) instead of a provider meter.
	Endpoints map[string]Endpoint
}

// Endpoint is one endpoint of sums of a provider whose meters name their
// fields.
type Endpoint struct {
	// Fields are the result's fields a meter may count.
	Fields []string
	// Widths, when set, narrow the provider's widths for this endpoint.
	Widths []time.Duration
	// Money marks an endpoint of money: its one field is an amount in a
	// currency the meter names ([Meter.Currency]), and it takes no
	// weights.
	Money bool
}

// Providers known to [ParseSources], by the name a [Source.Provider] uses.
var Providers = map[string]Provider{
	"stripe": {AliasPrefix: "cus_"},
	"openai": {AliasPrefix: "proj_", PollOnly: true, Widths: []time.Duration{time.Minute, time.Hour, Day}, Endpoints: OpenAIEndpoints},

	"openmeter": {Records: true, Widths: []time.Duration{time.Minute, time.Hour, Day}},
}

// Day is a day bucket's width: OpenAI's 1d, Stripe's day.
const Day = 24 * time.Hour

// OpenAIEndpoints are OpenAI's organization usage endpoints
// (GET /v1/organization/usage/{name}) and its costs (GET
// /v1/organization/costs), with the integer fields of each endpoint's
// result that a meter may count, as openai-go v3.102.0 types them
// (package openaiusage's tests check this table against those types). The
// costs endpoint serves day buckets only; its field is the amount's value.
var OpenAIEndpoints = map[string]Endpoint{
	"completions": {Fields: []string{"input_tokens", "output_tokens", "num_model_requests",
		"input_cached_tokens", "input_uncached_tokens", "input_text_tokens", "input_audio_tokens", "input_image_tokens",
		"input_cached_text_tokens", "input_cached_audio_tokens", "input_cached_image_tokens",
		"input_cache_write_tokens", "input_cache_write_30m_tokens", "input_cache_write_12h_tokens",
		"output_text_tokens", "output_audio_tokens", "output_image_tokens"}},
	"embeddings":                {Fields: []string{"input_tokens", "num_model_requests"}},
	"moderations":               {Fields: []string{"input_tokens", "num_model_requests"}},
	"images":                    {Fields: []string{"images", "num_model_requests"}},
	"audio_speeches":            {Fields: []string{"characters", "num_model_requests"}},
	"audio_transcriptions":      {Fields: []string{"seconds", "num_model_requests"}},
	"vector_stores":             {Fields: []string{"usage_bytes"}},
	"code_interpreter_sessions": {Fields: []string{"num_sessions"}},
	"file_search_calls":         {Fields: []string{"num_requests"}},
	"web_search_calls":          {Fields: []string{"num_requests", "num_model_requests"}},
	OpenAICosts:                 {Fields: []string{OpenAIAmount}, Widths: []time.Duration{Day}, Money: true},
}

// OpenAICosts is the endpoint of OpenAI's costs, and OpenAIAmount its
// field: amount.value, money as a float in the amount's currency.
const (
	OpenAICosts  = "costs"
	OpenAIAmount = "amount.value"
)

// widthAllowed reports whether w is one of widths, or widths is nil.
func widthAllowed(widths []time.Duration, w time.Duration) bool {
	return widths == nil || slices.Contains(widths, w)
}
