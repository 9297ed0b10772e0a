//go:build !oncall

package main

import (
	"slices"
	"testing"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/stack"
)

// TestPlanSettingsComeFromTheTemplate: the capacity plan holds the rate
// against the template's own throttling, batch size and event-source
// concurrency, and finds the index keyed by source.
func TestPlanSettingsComeFromTheTemplate(t *testing.T) {
	// Given the embedded template
	tmpl, err := stack.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	// When the plan's settings are read from it
	s := planSettings(tmpl)
	// Then they are the template's values
	if s.StageRate != 1500 || s.StageBurst != 2000 {
		t.Errorf("stage throttling %g/s, burst %g; the template sets 1,500 and 2,000", s.StageRate, s.StageBurst)
	}
	if s.WorkerBatchSize != 10 || s.WorkerMaxConcurrency != 50 {
		t.Errorf("worker batch %g, max concurrency %g; the template sets 10 and 50", s.WorkerBatchSize, s.WorkerMaxConcurrency)
	}
	if !slices.Equal(s.OneKeyPerSource, []string{"hookline-intake/by_source_received"}) {
		t.Errorf("keyed by source: %v", s.OneKeyPerSource)
	}
	if n := s.ShardsPerSource["hookline-intake/by_shard_received"]; n != intake.ReceivedShards || len(s.ShardsPerSource) != 1 {
		t.Errorf("keyed by a source's shard: %v", s.ShardsPerSource)
	}
	if s.Quotas.LambdaConcurrency != 1000 || s.Sources != 1 {
		t.Errorf("quotas %+v, sources %g", s.Quotas, s.Sources)
	}
}
