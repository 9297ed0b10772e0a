package sums_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/sums"
)

// TestCheckDoorRefusesWhatTheDoorCannotMatch: a sums source is checked
// against what the door counts of its usage source, every problem named
// at once with the source and the meter.
func TestCheckDoorRefusesWhatTheDoorCannotMatch(t *testing.T) {
	const stripe = `{"st": {"provider": "stripe", "usage_source": "meters", "account": "acct_1", "start": "2026-12-01T00:00:00Z",
	  "meters": {"api": {"provider_meter": "mtr_api", "aggregation": "sum", "scale": 1000}}}}`
	const openai = `{"oa": {"provider": "openai", "usage_source": "meters", "account": "org_1", "start": "2026-12-01T00:00:00Z",
	  "meters": {"tokens": {"endpoint": "completions", "field": "input_tokens"}}}}`
	named := sums.Door{Mapping: `meters "api"`, Meters: []string{"api"}, Scale: 1000}
	tests := []struct {
		name    string
		sources string
		door    sums.Door
		wantErr []string
	}{
		{name: "the meter at the door's scale", sources: stripe, door: named},
		{name: "a pointer that reads any meter", sources: stripe, door: sums.Door{AnyMeter: true, Scale: 1000}},
		{name: "a poll-only source's meter the door never counts", sources: openai, door: named},
		{name: "another scale", sources: stripe, door: sums.Door{Meters: []string{"api"}, Scale: 1},
			wantErr: []string{`st: meter "api": scale 1000 differs from the scale 1 of usage source "meters"`}},
		{name: "a meter the door never counts", sources: stripe, door: sums.Door{Mapping: `meters "web"`, Meters: []string{"web"}, Scale: 1000},
			wantErr: []string{`st: meter "api": usage source "meters" counts no records of that meter (USAGE_MAPPINGS: meters "web")`}},
		{name: "an alerts source", sources: stripe, door: sums.Door{Alerts: true},
			wantErr: []string{`st: usage_source: "meters" reads a provider's alerts and counts no records`}},
		{name: "records an export reads without meters", sources: stripe, door: sums.Door{Meters: []string{"api"}, Scale: 1000, Export: "the export"},
			wantErr: []string{`st: meter "api": the export also reads usage source "meters" (USAGE_EXPORT_SOURCE), without meters: its records would be counted twice`}},
		{name: "a poll-only source's meter the export reads", sources: openai, door: sums.Door{AnyMeter: true, Scale: 1, Export: "the export"},
			wantErr: []string{`oa: meter "tokens": the export also reads`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ss, err := sums.ParseSources(tc.sources)
			if err != nil {
				t.Fatal(err)
			}
			// Given the door's view of every usage source,
			err = ss.CheckDoor(func(string) sums.Door { return tc.door })
			// then the sources pass, or are refused naming each problem.
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			if !errors.Is(err, sums.ErrBadSource) {
				t.Fatalf("err = %v, want sums.ErrBadSource", err)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("err = %v, want one saying %q", err, want)
				}
			}
		})
	}
}
