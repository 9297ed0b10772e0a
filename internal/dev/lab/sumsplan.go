package lab

import (
	"fmt"
	"io"
	"math"
	"time"
)

// SweepFigures are what a measured sweep of a provider of sums showed
// over some runs of the reconciler: how many workloads it covered and
// read, the calls it made, the time a run took against the provider's
// rate limit, and the DynamoDB units it consumed.
type SweepFigures struct {
	// Provider is the sums provider measured ("stripe").
	Provider string `json:"provider"`
	// Workloads is how many workloads the sources covered, and Runs how
	// many runs were measured.
	Workloads int `json:"workloads"`
	Runs      int `json:"runs"`
	// Reads counts workloads read over the runs (one workload read in
	// each of two runs is two reads), and Calls the provider calls.
	Reads int `json:"reads"`
	Calls int `json:"calls"`
	// Seconds is the runs' wall time, and RateLimit the calls a second the
	// provider allowed (its face's limit) while they ran.
	Seconds   float64 `json:"seconds"`
	RateLimit float64 `json:"rate_limit"`
	// WriteUnits and ReadUnits are the DynamoDB units the runs consumed,
	// as the local DynamoDB's capacity model metered them.
	WriteUnits float64 `json:"write_units"`
	ReadUnits  float64 `json:"read_units"`
	// Interval is the source's poll interval, and QuietEvery the runs a
	// quiet workload waits at most between two reads.
	Interval   time.Duration `json:"interval"`
	QuietEvery int           `json:"quiet_every"`
}

// SumsLimits are a provider's documented limit on the calls a sweep makes.
type SumsLimits struct {
	Provider string
	// CallsPerSecond is the rate one source's calls may take.
	CallsPerSecond float64
	// Source says where the limit comes from.
	Source string
}

// Providers' limits for a sweep, as docs/design.md ("Sums at fleet
// scale") cites them.
var (
	StripeLimits = SumsLimits{Provider: "stripe", CallsPerSecond: 25,
		Source: "Stripe: 25 requests/s on one endpoint by default (100/s an account in live mode, 25 in a sandbox)"}
	OpenAILimits = SumsLimits{Provider: "openai", CallsPerSecond: 5,
		Source: "OpenAI documents no limit for the admin usage endpoints: the adapter's default pace, OPENAI_USAGE_RATE=5"}
)

// SumsPlan is what a fleet of workloads needs of a provider of sums and of
// DynamoDB, worked from one measured sweep.
type SumsPlan struct {
	Workloads int    `json:"workloads"`
	Provider  string `json:"provider"`
	From      string `json:"from"`
	Limit     string `json:"limit"`
	// CallsPerRun and SecondsPerRun are one run's provider calls and the
	// time they take at the provider's limit, as efficiently as measured.
	CallsPerRun   float64 `json:"calls_per_run"`
	SecondsPerRun float64 `json:"seconds_per_run"`
	// Period is how often a run starts: the interval, or the run's time
	// when it is longer (the sweep is behind).
	Period time.Duration `json:"period"`
	Behind bool          `json:"behind"`
	// NearCapUnread and QuietUnread are the longest a near-cap workload
	// (read every run) and a quiet one (read once in QuietEvery runs) go
	// without a read.
	NearCapUnread time.Duration `json:"near_cap_unread"`
	QuietUnread   time.Duration `json:"quiet_unread"`
	// WriteUnitsPerRun and ReadUnitsPerRun are DynamoDB's units a run.
	WriteUnitsPerRun float64 `json:"write_units_per_run"`
	ReadUnitsPerRun  float64 `json:"read_units_per_run"`
	// CostPerDay is the reconciler's Lambda time and DynamoDB units a day,
	// in USD (the provider's calls are not billed).
	CostPerDay Cost `json:"cost_per_day"`
}

// SumsPlanFor works out a sweep of workloads workloads against a
// provider's limits from the measured figures f: calls and units per
// workload read scale with the fleet, the tier mix stays as measured, and
// calls go at the provider's limit as efficiently as they went in the
// measurement. It is pure: the same figures give the same plan.
func SumsPlanFor(f SweepFigures, workloads int, l SumsLimits, p Prices) (SumsPlan, error) {
	if f.Workloads <= 0 || f.Runs <= 0 || f.Reads <= 0 || f.Calls <= 0 || !(f.Seconds > 0) || !(f.RateLimit > 0) ||
		f.Interval <= 0 || workloads <= 0 || !(l.CallsPerSecond > 0) {
		return SumsPlan{}, fmt.Errorf("%w: a measured sweep with workloads, runs, reads, calls, time and a rate limit, and a fleet, are needed", ErrNoPlan)
	}
	scale := float64(workloads) / float64(f.Workloads)
	efficiency := math.Min(1, float64(f.Calls)/(f.Seconds*f.RateLimit))
	plan := SumsPlan{Workloads: workloads, Provider: l.Provider, Limit: l.Source,
		From: fmt.Sprintf("a sweep of %d workloads over %d runs: %d reads, %d calls in %.1f s at %g calls/s (%.0f%% of the limit used)",
			f.Workloads, f.Runs, f.Reads, f.Calls, f.Seconds, f.RateLimit, 100*efficiency),
		CallsPerRun:      float64(f.Calls) / float64(f.Runs) * scale,
		WriteUnitsPerRun: f.WriteUnits / float64(f.Runs) * scale,
		ReadUnitsPerRun:  f.ReadUnits / float64(f.Runs) * scale,
	}
	plan.SecondsPerRun = plan.CallsPerRun / (l.CallsPerSecond * efficiency)
	run := seconds(plan.SecondsPerRun)
	plan.Period, plan.Behind = max(f.Interval, run), run > f.Interval
	plan.NearCapUnread = plan.Period + run
	plan.QuietUnread = time.Duration(max(f.QuietEvery, 1))*plan.Period + run
	runsPerDay := float64(24*time.Hour) / float64(plan.Period)
	plan.CostPerDay = p.costOf(usage{invocations: runsPerDay / 1e6, lambdaSeconds: runsPerDay * plan.SecondsPerRun / 1e6,
		dynamoWrites: runsPerDay * plan.WriteUnitsPerRun / 1e6, dynamoReads: runsPerDay * plan.ReadUnitsPerRun / 1e6})
	return plan, nil
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Second)
}

// Write prints the plan as docs/design.md shows it.
func (p SumsPlan) Write(w io.Writer) {
	behind := ""
	if p.Behind {
		behind = " (longer than the interval: the sweep is behind, and a run starts when the last ends)"
	}
	fmt.Fprintf(w, "sums plan: %s workloads on %s, from %s\n", thousands(float64(p.Workloads)), p.Provider, p.From)
	fmt.Fprintf(w, "  limit            %s\n", p.Limit)
	fmt.Fprintf(w, "  calls a run      %s\n", thousands(math.Ceil(p.CallsPerRun)))
	fmt.Fprintf(w, "  time a run       %s%s\n", seconds(p.SecondsPerRun), behind)
	fmt.Fprintf(w, "  near-cap unread  at most %s (read every run)\n", p.NearCapUnread)
	fmt.Fprintf(w, "  quiet unread     at most %s\n", p.QuietUnread)
	fmt.Fprintf(w, "  DynamoDB a run   %s write units, %s read units\n", thousands(math.Ceil(p.WriteUnitsPerRun)), thousands(math.Ceil(p.ReadUnitsPerRun)))
	fmt.Fprintf(w, "  cost a day       $%.2f (Lambda $%.2f, DynamoDB $%.2f; %s)\n",
		p.CostPerDay.Total, p.CostPerDay.Lambda, p.CostPerDay.DynamoDB, p.CostPerDay.Prices)
}
