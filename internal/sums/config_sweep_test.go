package sums_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/sums"
)

func TestParseSourcesSweepFields(t *testing.T) {
	meters := `{"api": {"provider_meter": "mtr_api", "aggregation": "sum"}}`
	tests := []struct {
		name    string
		text    string
		wantErr string
		recent  time.Duration
		every   int
		budget  time.Duration
	}{
		{name: "defaults", text: source("stripe", "1h", meters), recent: 48 * time.Hour, every: 12, budget: 150 * time.Second},
		{name: "set", text: strings.Replace(source("stripe", "1h", meters), `"meters"`,
			`"recent": "72h", "quiet_every": 3, "budget": "1m", "meters"`, 1), recent: 72 * time.Hour, every: 3, budget: time.Minute},
		{name: "negative quiet_every", text: strings.Replace(source("stripe", "1h", meters), `"meters"`,
			`"quiet_every": -1, "meters"`, 1), wantErr: "quiet_every -1 must be at least 1"},
		{name: "negative recent", text: strings.Replace(source("stripe", "1h", meters), `"meters"`,
			`"recent": "-1h", "meters"`, 1), wantErr: "recent and budget must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// given a source's sweep fields, when parsed
			got, err := sums.ParseSources(tt.text)
			// then they are refused or defaulted as stated
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := got["s"]
			if s.Recent.D() != tt.recent || s.QuietEvery != tt.every || s.Budget.D() != tt.budget {
				t.Fatalf("recent %s every %d budget %s, want %s %d %s", s.Recent.D(), s.QuietEvery, s.Budget.D(),
					tt.recent, tt.every, tt.budget)
			}
		})
	}
}
