package lab

import (
	"context"
	"maps"
	"runtime/debug"
)

// DefaultGCPercent is the collector's GOGC that hookline lab runs at
// unless the GOGC environment variable is set: one process holds all of
// local AWS, the functions and the load, and at 200 the collector takes
// half the share of the CPU it takes at 100.
const DefaultGCPercent = 200

// MeasureCeilings measures only the two ceilings of a [Run], the same
// way: on a fresh local system it offers cfg.Warmup of load at cfg.Rate
// and waits for it to settle, then measures the full path and the bare
// pipeline (cfg.Burst events each) in two mirrored rounds (full, bare,
// bare, full), with cfg.Idempotency choosing the worker. There is no
// paced run, so it takes seconds where a Run takes minutes; benchmarks
// use it to print the ratio [Run] reports.
//
// The report holds the run's settings and the ceilings' fields:
// FullCeiling, BareCeiling and Ratio (the means, and full ÷ bare),
// FullCeilings and BareCeilings (every burst, in the order measured),
// the CPU split, RatioWithoutHarness, and Accepted and NotAccepted, the
// webhooks of the full path's bursts (and the probe's) with and without
// a 200: a burst counts a refused webhook as done, so a ceiling with
// refusals is too high. The other fields are zero.
func MeasureCeilings(ctx context.Context, cfg Config) (*Report, error) {
	return onExperiment(ctx, cfg, (*experiment).measureCeilings)
}

// measureCeilings warms e up and measures its ceilings.
func (e *experiment) measureCeilings(ctx context.Context) (*Report, error) {
	e.warmUp(ctx)
	c := e.cfg
	rep := &Report{Name: c.Name, Rate: c.Rate, Warmup: c.Warmup.String(), LostAcks: c.LostAcks,
		Idempotency: c.Idempotency, Seed: c.Seed, GCPercent: currentGCPercent()}
	if err := e.ceilings(ctx, rep); err != nil {
		return nil, err
	}
	e.obs.mu.Lock()
	rep.Accepted, rep.NotAccepted = len(e.obs.accepted), maps.Clone(e.obs.refused)
	e.obs.mu.Unlock()
	return rep, nil
}

// onExperiment runs measure on a fresh local system for cfg, with its
// event source running and cfg.GCPercent set, and then closes it.
func onExperiment(ctx context.Context, cfg Config, measure func(*experiment, context.Context) (*Report, error)) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.GCPercent > 0 {
		defer debug.SetGCPercent(debug.SetGCPercent(cfg.GCPercent))
	}
	e, err := newExperiment(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.sys.Close()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go e.mapping.Run(runCtx)
	return measure(e, ctx)
}
