package sums_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/sums"
)

// source is one SUM_SOURCES entry of provider with width and meters.
func source(provider, width, meters string) string {
	return `{"s": {"provider": "` + provider + `", "usage_source": "usage", "account": "org_1",
		"start": "2026-11-01T00:00:00Z", "width": "` + width + `", "meters": ` + meters + `}}`
}

func TestParseSourcesOpenAIMeters(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		wantErr []string
		check   func(t *testing.T, s sums.Source)
	}{
		{name: "one field", text: source("openai", "1h", `{"tokens_in": {"endpoint": "completions", "field": "input_tokens"}}`),
			check: func(t *testing.T, s sums.Source) {
				m := s.Meters["tokens_in"]
				if s.AliasPrefix != "proj_" || m.Aggregation != sums.AggregationSum || m.Weights()["input_tokens"] != 1 || len(m.Weights()) != 1 {
					t.Fatalf("source = %+v, meter %+v", s, m)
				}
			}},
		{name: "weighted fields", text: source("openai", "1m", `{"priced": {"endpoint": "completions",
			"fields": {"input_tokens": 1, "output_tokens": 4, "input_cached_tokens": 0.5e1}}}`),
			wantErr: []string{`weight 0.5e1 of field "input_cached_tokens"`}},
		{name: "integer weights", text: source("openai", "1m", `{"priced": {"endpoint": "completions",
			"fields": {"input_tokens": 1, "output_tokens": 4}}}`),
			check: func(t *testing.T, s sums.Source) {
				w := s.Meters["priced"].Weights()
				if w["input_tokens"] != 1 || w["output_tokens"] != 4 || len(w) != 2 {
					t.Fatalf("weights = %v", w)
				}
			}},
		{name: "costs in day buckets", text: source("openai", "24h", `{"spend_musd": {"endpoint": "costs", "field": "amount.value",
			"currency": "usd", "scale": 1000000, "tolerance": 1}}`),
			check: func(t *testing.T, s sums.Source) {
				if m := s.Meters["spend_musd"]; m.Scale != 1_000_000 || m.Currency != "usd" {
					t.Fatalf("meter = %+v", m)
				}
			}},
		{name: "no field", text: source("openai", "1h", `{"tokens": {"endpoint": "completions"}}`),
			wantErr: []string{`meter "tokens": names no field`}},
		{name: "unknown field", text: source("openai", "1h", `{"tokens": {"endpoint": "embeddings", "field": "output_tokens"}}`),
			wantErr: []string{`field "output_tokens" is not one of endpoint embeddings's`}},
		{name: "non-integer weight", text: source("openai", "1h", `{"tokens": {"endpoint": "completions",
			"fields": {"input_tokens": 1.5}}}`), wantErr: []string{`weight 1.5 of field "input_tokens" is not an integer`}},
		{name: "zero weight", text: source("openai", "1h", `{"tokens": {"endpoint": "completions",
			"fields": {"input_tokens": 0}}}`), wantErr: []string{`weight 0 of field "input_tokens"`}},
		{name: "field and fields", text: source("openai", "1h", `{"tokens": {"endpoint": "completions", "field": "input_tokens",
			"fields": {"output_tokens": 1}}}`), wantErr: []string{"sets both field and fields"}},
		{name: "unknown endpoint", text: source("openai", "1h", `{"tokens": {"endpoint": "chat", "field": "input_tokens"}}`),
			wantErr: []string{`endpoint "chat" is not one of`}},
		{name: "width OpenAI does not serve", text: source("openai", "30m", `{"tokens": {"endpoint": "completions", "field": "input_tokens"}}`),
			wantErr: []string{"width 30m0s is not one openai serves"}},
		{name: "costs in hour buckets", text: source("openai", "1h", `{"spend": {"endpoint": "costs", "field": "amount.value", "currency": "usd"}}`),
			wantErr: []string{"endpoint costs serves buckets of [24h0m0s] only"}},
		{name: "costs without currency, with weights", text: source("openai", "24h", `{"spend": {"endpoint": "costs",
			"fields": {"amount.value": 2}}}`), wantErr: []string{"currency", "is money: set field"}},
		{name: "currency on tokens", text: source("openai", "1h", `{"tokens": {"endpoint": "completions", "field": "input_tokens",
			"currency": "usd"}}`), wantErr: []string{"currency is for a money meter"}},
		{name: "a Stripe meter id", text: source("openai", "1h", `{"tokens": {"endpoint": "completions", "field": "input_tokens",
			"provider_meter": "mtr_1"}}`), wantErr: []string{"provider_meter is not used"}},
		{name: "Stripe unchanged", text: source("stripe", "1h", `{"calls": {"provider_meter": "mtr_1", "aggregation": "sum"}}`),
			check: func(t *testing.T, s sums.Source) {
				if s.AliasPrefix != "cus_" || s.Meters["calls"].Endpoint != "" {
					t.Fatalf("source = %+v", s)
				}
			}},
		{name: "Stripe any width dividing a day", text: source("stripe", "30m", `{"calls": {"provider_meter": "mtr_1", "aggregation": "sum"}}`),
			check: func(t *testing.T, s sums.Source) {
				if s.Width.D() != 30*time.Minute {
					t.Fatalf("width = %s", s.Width.D())
				}
			}},
		{name: "Stripe meter naming fields", text: source("stripe", "1h", `{"calls": {"provider_meter": "mtr_1", "aggregation": "sum",
			"field": "value"}}`), wantErr: []string{"endpoint, field, fields and currency are for a provider"}},
		{name: "unknown provider", text: source("orb", "1h", `{"calls": {"provider_meter": "m"}}`),
			wantErr: []string{`provider "orb" is not one of [openai openmeter stripe]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given SUM_SOURCES text
			// When it is parsed
			got, err := sums.ParseSources(tc.text)

			// Then it is refused naming every problem, or read as configured
			for _, w := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("err = %v, want it to contain %q", err, w)
				}
			}
			if len(tc.wantErr) > 0 {
				if !errors.Is(err, sums.ErrBadSource) {
					t.Fatalf("err = %v, want ErrBadSource", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, got["s"])
		})
	}
}

func TestMeterUnitsRoundsMoneyAtTheBucket(t *testing.T) {
	m := sums.Meter{Scale: 1_000_000}
	tests := []struct {
		name string
		v    float64
		want int64
		ok   bool
	}{
		{name: "float noise", v: 0.1 + 0.2, want: 300_000, ok: true},
		{name: "half a micro-dollar rounds up", v: 1.0000005, want: 1_000_001, ok: true},
		{name: "negative", v: -0.01, ok: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := m.Units(tc.v)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Units(%v) = %d, %t; want %d, %t", tc.v, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestOpenAISourceHasNoWebhookPathUnlessItSaysSo(t *testing.T) {
	// given an OpenAI source as written, one that says webhooks feed it,
	// and a Stripe source
	ss, err := sums.ParseSources(`{
	  "poll": {"provider": "openai", "usage_source": "llm", "account": "org_1", "start": "2026-11-30T00:00:00Z",
	    "meters": {"tokens": {"endpoint": "completions", "field": "input_tokens"}}},
	  "both": {"provider": "openai", "usage_source": "app", "account": "org_1", "start": "2026-11-30T00:00:00Z", "webhooks": true,
	    "meters": {"tokens": {"endpoint": "completions", "field": "input_tokens"}}},
	  "stripe": {"provider": "stripe", "usage_source": "meters", "account": "acct_1", "start": "2026-11-30T00:00:00Z",
	    "meters": {"api": {"provider_meter": "mtr_api", "aggregation": "sum"}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	// then only the first is read by poll alone
	for name, want := range map[string]bool{"poll": false, "both": true, "stripe": true} {
		if got := ss[name].HasWebhooks(); got != want {
			t.Errorf("%s: HasWebhooks = %v, want %v", name, got, want)
		}
	}
}

func TestOnlyAQueryOfItsOwnIsRefusedForGood(t *testing.T) {
	for status, want := range map[int]bool{400: true, 404: true, 410: true, 401: false, 403: false, 408: false, 429: false, 500: false, 200: false} {
		if got := sums.Refusal(status); got != want {
			t.Errorf("Refusal(%d) = %v, want %v", status, got, want)
		}
	}
}

func TestAMeterCountsTheRecordsOfItsDoorNames(t *testing.T) {
	// given a meter api that the door now names calls
	srcs, err := sums.ParseSources(`{"s": {"provider": "stripe", "usage_source": "meters", "account": "acct_1",
		"start": "2026-11-30T00:00:00Z", "meters": {"api": {"provider_meter": "mtr_api", "aggregation": "sum",
		"door_names": ["calls"]}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	// then records under either name count in the meter named api
	for _, name := range []string{"api", "calls"} {
		if _, m, ok := srcs.For("meters", name); !ok || m.Name != "api" {
			t.Errorf("For(meters, %s) = %q, %v; want api", name, m.Name, ok)
		}
	}
	// and a door name that another meter claims is refused
	_, err = sums.ParseSources(`{"s": {"provider": "stripe", "usage_source": "meters", "account": "acct_1",
		"start": "2026-11-30T00:00:00Z", "meters": {"api": {"provider_meter": "mtr_api", "aggregation": "sum",
		"door_names": ["gpu"]}, "gpu": {"provider_meter": "mtr_gpu", "aggregation": "sum"}}}}`)
	if !errors.Is(err, sums.ErrBadSource) || !strings.Contains(err.Error(), `meter "gpu"`) {
		t.Fatalf("err = %v, want the door name gpu refused as claimed twice", err)
	}
}
