package lab

import (
	"fmt"
	"io"
	"math"
	"time"
)

// SweepFigures are what a measured sweep of a provider of sums showed
// over some runs of the reconciler, each of which finished its sweep:
// how many workloads it covered and read in each risk tier, the calls it
// made, and the DynamoDB units it consumed.
type SweepFigures struct {
	// Provider is the sums provider measured ("stripe").
	Provider string `json:"provider"`
	// Workloads is how many workloads the sources covered, and Runs how
	// many runs were measured.
	Workloads int `json:"workloads"`
	Runs      int `json:"runs"`
	// ReadsByTier counts workloads read over the runs by risk tier
	// ("near_cap", "active", "quiet"); Calls counts the provider calls.
	ReadsByTier map[string]int `json:"reads_by_tier"`
	Calls       int            `json:"calls"`
	// Seconds is the runs' wall time, and RateLimit the calls a second the
	// provider's face allowed while they ran: reported, not planned from.
	Seconds   float64 `json:"seconds"`
	RateLimit float64 `json:"rate_limit"`
	// WriteUnits and ReadUnits are the DynamoDB units the runs consumed,
	// as the local DynamoDB's capacity model metered them.
	WriteUnits float64 `json:"write_units"`
	ReadUnits  float64 `json:"read_units"`
	// Interval, Budget and QuietEvery are the source's: how often it runs,
	// how long a run may read, and the sweeps over which quiet workloads
	// rotate.
	Interval   time.Duration `json:"interval"`
	Budget     time.Duration `json:"budget"`
	QuietEvery int           `json:"quiet_every"`
}

// Tiers of [SweepFigures.ReadsByTier], as the reconciler names them.
const (
	tierNearCap = "near_cap"
	tierActive  = "active"
	tierQuiet   = "quiet"
)

// reads is the workloads read over the runs, every tier.
func (f SweepFigures) reads() int {
	n := 0
	for _, r := range f.ReadsByTier {
		n += r
	}
	return n
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
	// CallsPerSweep is a sweep's provider calls: the near-cap workloads'
	// of one run and the rest's; SecondsPerRun is a run's time at the
	// provider's limit, at most the budget.
	CallsPerSweep float64 `json:"calls_per_sweep"`
	SecondsPerRun float64 `json:"seconds_per_run"`
	// RunsPerSweep is how many runs a sweep takes within the budget; more
	// than one is behind.
	RunsPerSweep int  `json:"runs_per_sweep"`
	Behind       bool `json:"behind"`
	// NoFit is set when the near-cap workloads alone take the budget.
	NoFit bool `json:"no_fit"`
	// NearCapUnread, ActiveUnread and QuietUnread are the longest a
	// workload of each tier goes without a read.
	NearCapUnread time.Duration `json:"near_cap_unread"`
	ActiveUnread  time.Duration `json:"active_unread"`
	QuietUnread   time.Duration `json:"quiet_unread"`
	// WriteUnitsPerRun and ReadUnitsPerRun are DynamoDB's units a run.
	WriteUnitsPerRun float64 `json:"write_units_per_run"`
	ReadUnitsPerRun  float64 `json:"read_units_per_run"`
	// CostPerDay is the reconciler's Lambda time and DynamoDB units a day,
	// in USD (the provider's calls are not billed).
	CostPerDay Cost `json:"cost_per_day"`
}

// SumsPlanFor works out a sweep of workloads workloads against a
// provider's limits from the measured figures f, as the reconciler
// sweeps (docs/design.md, "Sweeping sums at scale"): calls and units per
// workload read, and each tier's share of the fleet, stay as measured;
// near-cap workloads are read on every run, the rest in sweeps that take
// as many runs as the budget needs at the provider's limit. A run's time
// is its calls at that limit, the floor of it: on AWS a read's DynamoDB
// queries take milliseconds, its calls tens of them, while the local
// DynamoDB's index queries scan, so the measured time is reported, not
// planned from. It is pure: the same figures give the same plan.
func SumsPlanFor(f SweepFigures, workloads int, l SumsLimits, p Prices) (SumsPlan, error) {
	reads := f.reads()
	if f.Workloads <= 0 || f.Runs <= 0 || reads <= 0 || f.Calls <= 0 || f.Interval <= 0 || f.Budget <= 0 ||
		workloads <= 0 || !(l.CallsPerSecond > 0) {
		return SumsPlan{}, fmt.Errorf("%w: a measured sweep with workloads, runs, reads, calls, an interval and a budget, and a fleet, are needed", ErrNoPlan)
	}
	scale := float64(workloads) / float64(f.Workloads)
	perRead := float64(f.Calls) / float64(reads)
	perRun := func(tier string) float64 { return float64(f.ReadsByTier[tier]) / float64(f.Runs) * scale }
	first := perRun(tierNearCap) * perRead / l.CallsPerSecond
	sweep := (perRun(tierActive) + perRun(tierQuiet)) * perRead / l.CallsPerSecond
	plan := SumsPlan{Workloads: workloads, Provider: l.Provider, Limit: l.Source,
		From: fmt.Sprintf("a sweep of %d workloads over %d runs: reads %v, %d calls in %.1f s against a face limited to %g calls/s",
			f.Workloads, f.Runs, f.ReadsByTier, f.Calls, f.Seconds, f.RateLimit),
		CallsPerSweep: (perRun(tierNearCap) + perRun(tierActive) + perRun(tierQuiet)) * perRead}
	budget := f.Budget.Seconds()
	left := budget - first
	plan.NoFit = left <= 0
	plan.RunsPerSweep = 1
	if !plan.NoFit && sweep > left {
		plan.RunsPerSweep = int(math.Ceil(sweep / left))
	}
	plan.Behind = plan.NoFit || plan.RunsPerSweep > 1
	plan.SecondsPerRun = math.Min(budget, first+sweep)
	s := time.Duration(plan.RunsPerSweep)
	plan.NearCapUnread = f.Interval
	plan.ActiveUnread = (2*s - 1) * f.Interval
	plan.QuietUnread = ((time.Duration(max(f.QuietEvery, 1))+1)*s - 1) * f.Interval
	readsPerRun := plan.SecondsPerRun * l.CallsPerSecond / perRead
	plan.WriteUnitsPerRun = f.WriteUnits / float64(reads) * readsPerRun
	plan.ReadUnitsPerRun = f.ReadUnits / float64(reads) * readsPerRun
	runsPerDay := float64(24*time.Hour) / float64(f.Interval)
	plan.CostPerDay = p.costOf(usage{invocations: runsPerDay / 1e6, lambdaSeconds: runsPerDay * plan.SecondsPerRun / 1e6,
		dynamoWrites: runsPerDay * plan.WriteUnitsPerRun / 1e6, dynamoReads: runsPerDay * plan.ReadUnitsPerRun / 1e6})
	return plan, nil
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Second)
}

// Write prints the plan as docs/design.md shows it.
func (p SumsPlan) Write(w io.Writer) {
	fit := "the sweep fits one run"
	switch {
	case p.NoFit:
		fit = "the near-cap workloads alone take the budget: raise the budget or the rate"
	case p.Behind:
		fit = fmt.Sprintf("a sweep takes %d runs: behind", p.RunsPerSweep)
	}
	fmt.Fprintf(w, "sums plan: %s workloads on %s, from %s\n", thousands(float64(p.Workloads)), p.Provider, p.From)
	fmt.Fprintf(w, "  limit            %s\n", p.Limit)
	fmt.Fprintf(w, "  calls a sweep    %s; %s\n", thousands(math.Ceil(p.CallsPerSweep)), fit)
	fmt.Fprintf(w, "  time a run       %s at the limit\n", seconds(p.SecondsPerRun))
	fmt.Fprintf(w, "  unread at most   near cap %s, active %s, quiet %s\n", p.NearCapUnread, p.ActiveUnread, p.QuietUnread)
	fmt.Fprintf(w, "  DynamoDB a run   %s write units, %s read units\n", thousands(math.Ceil(p.WriteUnitsPerRun)), thousands(math.Ceil(p.ReadUnitsPerRun)))
	fmt.Fprintf(w, "  cost a day       $%.2f (Lambda $%.2f, DynamoDB $%.2f; %s)\n",
		p.CostPerDay.Total, p.CostPerDay.Lambda, p.CostPerDay.DynamoDB, p.CostPerDay.Prices)
}
