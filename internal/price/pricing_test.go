package price_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/price"
	"github.com/hookline/hookline/internal/sums"
)

// pricesOfOneWorkload prices a workload of tokens (OpenAI), calls (a
// Stripe meter) and GPU hours (OpenMeter) in micro-dollars.
const pricesOfOneWorkload = `{"scale": 3, "meters": {
  "llm":   {"tokens":    {"unit": "tokens",    "price": [{"price": "2.5"}, {"price": "2", "from": "2026-04-01T00:00:00Z"}]}},
  "calls": {"api":       {"unit": "calls",     "price": "0.004"}},
  "gpu":   {"gpu_hours": {"unit": "gpu_hours", "price": 2500000}}}}`

func TestParsePricingNamesEveryBadField(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string // fields
	}{
		{name: "a workload of three meters", text: pricesOfOneWorkload},
		{name: "no scale", text: `{"meters": {"llm": {"tokens": {"unit": "tokens", "price": "2.5"}}}}`, want: []string{"scale"}},
		{name: "a scale past 12", text: `{"scale": 13, "meters": {"llm": {"tokens": {"unit": "tokens", "price": "2.5"}}}}`, want: []string{"scale"}},
		{name: "a price finer than the scale", text: `{"scale": 0, "meters": {"llm": {"tokens": {"unit": "tokens", "price": [{"price": "1"}, {"price": "2.5", "from": "2026-04-01T00:00:00Z"}]}}}}`,
			want: []string{"meters.llm.tokens.price[1]"}},
		{name: "a price beyond int64 at the scale", text: `{"scale": 12, "meters": {"gpu": {"h": {"unit": "h", "price": "92233720"}}}}`,
			want: []string{"meters.gpu.h.price[0]"}},
		{name: "no unit, no price", text: `{"scale": 1, "meters": {"llm": {"tokens": {}}}}`, want: []string{"meters.llm.tokens.price", "meters.llm.tokens.unit"}},
		{name: "no unit", text: `{"scale": 1, "meters": {"llm": {"tokens": {"price": "1"}}}}`, want: []string{"meters.llm.tokens.unit"}},
		{name: "a bad change", text: `{"scale": 1, "meters": {"llm": {"tokens": {"unit": "tokens", "price": [{"price": "1"}, {"price": "2", "from": "soon"}]}}}}`,
			want: []string{"meters.llm.tokens.price[1].from"}},
		{name: "two meters wrong at once", text: `{"scale": 1, "meters": {"a": {"x": {"unit": "u", "price": "-1"}}, "b": {"y": {"unit": "u", "price": "0.01"}}}}`,
			want: []string{"meters.a.x.price", "meters.b.y.price[0]"}},
		{name: "no meters", text: `{"scale": 1, "meters": {}}`, want: []string{"meters"}},
		{name: "an unknown member", text: `{"scale": 1, "meter": {}}`, want: []string{"prices"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a deployment's prices, when they are read at start,
			_, err := price.ParsePricing(tt.text)
			// then every bad field is named at once.
			if got := fields(err); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("ParsePricing = %v; want fields %v", err, tt.want)
			}
			if err != nil && !price.IsBadConfig(err) {
				t.Fatalf("%v is not ErrBadConfig", err)
			}
		})
	}
}

func TestCheckMetersRefusesAnUnpricedMeterNamingIt(t *testing.T) {
	p, err := price.ParsePricing(pricesOfOneWorkload)
	if err != nil {
		t.Fatal(err)
	}
	all := []price.Meter{
		{Source: "llm", Name: "tokens"}, // a sums meter: no mapping states its unit
		{Source: "calls", Name: "api", Unit: "calls"},
		{Source: "gpu", Name: "gpu_hours", Unit: "gpu_hours"},
	}
	tests := []struct {
		name    string
		meters  []price.Meter
		wantErr []string
	}{
		{name: "every meter priced", meters: all},
		{name: "OpenAI costs cost 1", meters: append(all, price.Meter{Source: "llm-costs", Name: "spend", Money: true})},
		{name: "a meter without a price", meters: append(all, price.Meter{Source: "calls", Name: "api_v2", Unit: "calls"}),
			wantErr: []string{`meter "api_v2" of usage source "calls": a priced deployment needs meters.calls.api_v2`}},
		{name: "another unit", meters: append(all[:1:1], price.Meter{Source: "calls", Name: "api", Unit: "requests"}, all[2]),
			wantErr: []string{`meters.calls.api.unit "calls": the usage mapping counts meter "api" of usage source "calls" in "requests"`}},
		{name: "a price nothing counts", meters: all[:2],
			wantErr: []string{`meters.gpu "gpu_hours": no usage mapping or sums meter counts it`}},
		{name: "a source whose events name their meter", meters: append(all, price.Meter{Source: "events", Any: true}),
			wantErr: []string{`every meter of usage source "events": its events name their meter, so a priced deployment needs meters.events."*"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.CheckMeters(tt.meters)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("CheckMeters = %v", err)
				}
				return
			}
			for _, w := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("CheckMeters = %v; want %q", err, w)
				}
			}
		})
	}
}

func TestAnyMeterPricesASourceWhoseEventsNameTheirMeter(t *testing.T) {
	p, err := price.ParsePricing(`{"scale": 1, "meters": {"events": {"*": {"unit": "calls", "price": "0.5"}, "big": {"unit": "calls", "price": "5"}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckMeters([]price.Meter{{Source: "events", Any: true, Unit: "calls"}}); err != nil {
		t.Fatalf("CheckMeters = %v", err)
	}
	for meter, want := range map[string]string{"small": "0.5", "big": "5"} {
		s, err := p.For(price.Meter{Source: "events", Name: meter})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := s.PriceAt(time.Now()); got.String() != want {
			t.Fatalf("meter %s costs %s, want %s", meter, got, want)
		}
	}
	if _, err := p.For(price.Meter{Source: "other", Name: "x"}); !errors.Is(err, price.ErrNoPrice) {
		t.Fatalf("For(an unpriced meter) = %v, want ErrNoPrice", err)
	}
}

// sumsOf reads SUM_SOURCES text, as start does.
func sumsOf(t *testing.T, text string) sums.Sources {
	t.Helper()
	ss, err := sums.ParseSources(text)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

func TestCheckBucketsRefusesAChangeInsideABucket(t *testing.T) {
	ss := sumsOf(t, `{"openai-tokens": {"provider": "openai", "usage_source": "llm", "account": "org_1", "start": "2026-01-01T00:00:00Z",
	  "meters": {"tokens": {"endpoint": "completions", "field": "input_tokens", "door_names": ["tok"]}}}}`)
	tests := []struct {
		name, from string
		tok        string // the door name's price, "" for none
		want       []string
	}{
		{name: "on the hour", from: "2026-04-01T05:00:00Z"},
		{name: "inside an hour bucket", from: "2026-04-01T05:30:00Z", want: []string{"meters.llm.tokens.price[1].from"}},
		{name: "the door name priced alike", from: "2026-04-01T05:00:00Z", tok: `[{"price": "2.5"}, {"price": "2", "from": "2026-04-01T05:00:00Z"}]`},
		{name: "the door name priced otherwise", from: "2026-04-01T05:00:00Z", tok: `"2.5"`, want: []string{"meters.llm.tok.price"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := `{"scale": 1, "meters": {"llm": {"tokens": {"unit": "tokens", "price": [{"price": "2.5"}, {"price": "2", "from": "` + tt.from + `"}]}`
			if tt.tok != "" {
				text += `, "tok": {"unit": "tokens", "price": ` + tt.tok + `}`
			}
			p, err := price.ParsePricing(text + `}}}`)
			if err != nil {
				t.Fatal(err)
			}
			if got := fields(p.CheckBuckets(ss)); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("CheckBuckets = %v; want fields %v", p.CheckBuckets(ss), tt.want)
			}
		})
	}
	var none *price.Pricing
	if err := none.CheckBuckets(ss); err != nil {
		t.Fatalf("CheckBuckets without prices = %v", err)
	}
}
