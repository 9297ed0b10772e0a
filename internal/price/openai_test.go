package price_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/price"
)

func TestCheckCostsOrTokens(t *testing.T) {
	const (
		tokens = `{"provider": "openai", "usage_source": "llm", "account": "org_1", "livemode": true, "start": "2026-01-01T00:00:00Z",
		  "meters": {"tokens": {"endpoint": "completions", "fields": {"input_tokens": 1, "output_tokens": 4}}}}`
		costs = `{"provider": "openai", "usage_source": "llm-costs", "account": "org_1", "livemode": true, "start": "2026-01-01T00:00:00Z", "width": "24h",
		  "meters": {"spend": {"endpoint": "costs", "field": "amount.value", "currency": "usd", "scale": 1000000}}}`
		stripe = `{"provider": "stripe", "usage_source": "calls", "account": "acct_1", "start": "2026-01-01T00:00:00Z",
		  "meters": {"api": {"provider_meter": "mtr_1", "aggregation": "sum"}}}`
	)
	tests := []struct {
		name, text string
		wantErr    string
	}{
		{name: "tokens alone", text: `{"t": ` + tokens + `, "s": ` + stripe + `}`},
		{name: "costs alone", text: `{"c": ` + costs + `, "s": ` + stripe + `}`},
		{name: "both, for the same projects", text: `{"t": ` + tokens + `, "c": ` + costs + `}`,
			wantErr: `account org_1 (live, projects proj_...): costs are read by c (meter "spend", endpoint costs) and usage by t (meter "tokens", endpoint completions)`},
		{name: "both, of other organisations", text: `{"t": ` + tokens + `, "c": ` + strings.Replace(costs, "org_1", "org_2", 1) + `}`},
		{name: "both, one in test mode", text: `{"t": ` + tokens + `, "c": ` + strings.Replace(costs, `"livemode": true`, `"livemode": false`, 1) + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given OpenAI sums sources, when start checks them,
			err := price.CheckCostsOrTokens(sumsOf(t, tt.text))
			// then costs and usage of the same projects are refused.
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckCostsOrTokens = %v", err)
				}
				return
			}
			if !errors.Is(err, price.ErrCountedTwice) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CheckCostsOrTokens = %v; want ErrCountedTwice with %q", err, tt.wantErr)
			}
		})
	}
}
