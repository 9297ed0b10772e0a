package lab

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Goals the lab checks.
const (
	GoalRate    = 500.0 // webhooks/s
	GoalSuccess = 0.99
	GoalP99     = 100.0 // ms, webhook -> charge, in a run without a spike
	GoalRatio   = 0.9   // full ÷ bare, as measured
	GoalDrain   = 15.0  // s, after a spike's end
)

// The names of the goals with a figure, as findings give them.
var (
	GoalP99Name   = fmt.Sprintf("p99 webhook → charge ≤ %.0f ms", GoalP99)
	GoalRatioName = fmt.Sprintf("full path ≥ %.1f× the bare pipeline", GoalRatio)
	GoalDrainName = fmt.Sprintf("the backlog drains within %.0f s of a spike's end", GoalDrain)
)

// goalNoDuplicates is the goal the design puts first.
const goalNoDuplicates = "zero duplicate charges"

// Finding is one goal a run missed: the figure, why, and the fix.
type Finding struct {
	Goal     string `json:"goal"`
	Critical bool   `json:"critical"`
	Measured string `json:"measured"`
	Why      string `json:"why"`
	Fix      string `json:"fix"`
}

func (f Finding) String() string {
	crit := ""
	if f.Critical {
		crit = " (critical)"
	}
	return fmt.Sprintf("%s%s: %s; %s; fix: %s", f.Goal, crit, f.Measured, f.Why, f.Fix)
}

// Findings names each goal r missed.
func Findings(r *Report) []Finding {
	var out []Finding
	add := func(f Finding) { out = append(out, f) }
	if r.Duplicates > 0 {
		f := Finding{Goal: goalNoDuplicates, Critical: true,
			Measured: fmt.Sprintf("%d customers charged twice (%.0f a day at %.0f webhooks/s)", r.Duplicates, r.DuplicatesPerDay, r.Rate),
			Why:      fmt.Sprintf("lost acknowledgements (%.1f%%) made SQS redeliver %d processed events, and each delivery charged again", 100*r.LostAcks, r.Redeliveries),
			Fix:      "turn on idempotency (--idempotency on): claim source:event_id before charging, look up before charging again"}
		if r.Idempotency {
			f.Why = "duplicates with idempotency on break the provider contract: see docs/provider-contract.md, and check the settle horizon"
			f.Fix = "raise PROVIDER_SETTLE_HORIZON above the provider's worst commit and lookup lag"
		}
		add(f)
	}
	if r.Lost > 0 {
		add(Finding{Goal: "nothing lost", Critical: true, Measured: fmt.Sprintf("%d accepted events neither charged, declined nor dead-lettered", r.Lost),
			Why: "the backlog did not settle within the drain window", Fix: "run longer, or raise the worker's concurrency"})
	}
	if r.Success < GoalSuccess {
		add(Finding{Goal: "success ≥ 99%", Measured: fmt.Sprintf("%.2f%% (%d of %d offered charged; %d not accepted, %d declined, %d dead-lettered, %d pending)",
			100*r.Success, r.Charged, r.Offered, r.Offered-r.Accepted, r.Declined, r.DeadLettered, r.Lost),
			Why: whySuccess(r), Fix: fixSuccess(r)})
	}
	if r.P99 > GoalP99 && r.SpikeDrainedIn == "" {
		add(Finding{Goal: GoalP99Name, Measured: fmt.Sprintf("p99 %.0f ms (p50 %.0f ms); queue depth reached %d, the oldest unsettled event %.1f s", r.P99, r.P50, r.MaxQueueDepth, r.MaxOldestAge),
			Why: whyLatency(r), Fix: fixLatency(r)})
	}
	if r.Ratio > 0 && r.Ratio < GoalRatio {
		measured := fmt.Sprintf("%.2f× (%.0f against %.0f events/s, same run)", r.Ratio, r.FullCeiling, r.BareCeiling)
		if r.RatioWithoutHarness > 0 {
			measured += fmt.Sprintf("; %.2f× without the provider's side", r.RatioWithoutHarness)
		}
		add(Finding{Goal: GoalRatioName, Measured: measured,
			Why: whyRatio(r), Fix: "profile the full path (hookline lab --cpuprofile FILE, then go tool pprof) and remove what is not AWS"})
	}
	if measured, missed := spikeDrainMissed(r); missed {
		add(Finding{Goal: GoalDrainName, Measured: measured,
			Why: fmt.Sprintf("the spike (%s, %.0f webhooks/s) outran the workers: the oldest unsettled event reached %.1f s, and after it the workers had only what %.0f/s left of the full path's ceiling (%.0f/s) to drain with",
				r.Spike, r.PeakRate, r.MaxOldestAge, r.Rate, r.FullCeiling),
			Fix: "more capacity than the offered rate: more cores, or fewer AWS calls per event"})
	}
	return out
}

// whyRatio says what the full path does beyond the AWS calls and, when
// it was measured, where its bursts' CPU went.
func whyRatio(r *Report) string {
	why := fmt.Sprintf("per event the full path takes %.2f× the bare pipeline's time: what it does besides the AWS calls (HTTP in and out, verification, the event-source adapter, the provider call, and the goroutines and garbage they make) costs that much beyond the calls themselves", 1/r.Ratio)
	if c := r.FullCPU; c != nil {
		why += fmt.Sprintf("; its bursts took %s", c)
		if b := r.BareCPU; b != nil {
			why += fmt.Sprintf(", against the bare pipeline's %s", b)
		}
	}
	return why
}

// nearCeiling is the share of the full path's ceiling above which a paced
// run queues whenever the cores are briefly busier.
const nearCeiling = 0.7

// spikeDrainMissed says how long a spike's backlog took, and whether that
// missed the goal.
func spikeDrainMissed(r *Report) (string, bool) {
	if r.SpikeDrainedIn == "" {
		return "", false
	}
	d, err := time.ParseDuration(r.SpikeDrainedIn)
	if err != nil {
		return "it had not drained when the run ended", true
	}
	return fmt.Sprintf("it drained %s after the spike", r.SpikeDrainedIn), d.Seconds() > GoalDrain
}

func whyLatency(r *Report) string {
	var why []string
	if st, ok := slowest(r.Stages); ok {
		why = append(why, fmt.Sprintf("the slowest leg was %s, p99 %.0f ms", st.Name, st.P99))
	}
	if load := r.PeakRate / r.FullCeiling; r.FullCeiling > 0 && load > 1 {
		why = append(why, fmt.Sprintf("at its peak the offered %.0f webhooks/s was %.0f%% of the full path's ceiling (%.0f/s): the excess queued",
			r.PeakRate, 100*load, r.FullCeiling))
	} else if load := r.Rate / r.FullCeiling; r.FullCeiling > 0 && load > nearCeiling {
		why = append(why, fmt.Sprintf("%.0f webhooks/s is %.0f%% of the full path's ceiling (%.0f/s), so arrivals queue whenever the cores are busier for a moment",
			r.Rate, 100*load, r.FullCeiling))
	}
	if rt := r.Runtime; rt.GCShare > 0.1 {
		why = append(why, fmt.Sprintf("the garbage collector took %.0f%% of the process's CPU in %d cycles, marking a live heap that grew to %.0f MB (mostly the in-process DynamoDB's stored items); while it marks it holds a quarter of the cores",
			100*rt.GCShare, rt.GCCycles, rt.LiveHeapMB))
	}
	if len(why) == 0 {
		return "arrivals outran the workers and queued"
	}
	return strings.Join(why, "; ")
}

func fixLatency(r *Report) string {
	if r.FullCeiling > 0 && (r.Rate/r.FullCeiling > nearCeiling || r.PeakRate > r.FullCeiling) {
		return "run on more cores or lower --rate: locally the emulators, the provider and the sender share the machine with the functions, while on AWS each function has its own CPU; find the slow leg with --cpuprofile"
	}
	return "raise the event source's concurrency (or batch size); find the slow leg with --cpuprofile"
}

// fixSuccess advises by why webhooks were not charged: a saturated sender
// means the intake answered too slowly for the offered rate, not that it
// refused anything.
func fixSuccess(r *Report) string {
	unsent := r.NotAccepted[RefusedUnsent]
	if unsent > 0 && unsent == r.Offered-r.Accepted && r.DeadLettered == 0 && r.Lost == 0 {
		return "the intake answered too slowly for the offered rate, so the sender's connections were all waiting (see the receiver leg); more capacity than the peak rate, or a sender that retries later, as providers do"
	}
	return "look at the DLQ reasons (hookline dlq peek payments-dlq) and the intake's 503s"
}

func whySuccess(r *Report) string {
	var why []string
	if r.Offered > r.Accepted {
		why = append(why, fmt.Sprintf("%d webhooks were not accepted (%s)", r.Offered-r.Accepted, refusals(r.NotAccepted)))
	}
	if r.DeadLettered > 0 {
		why = append(why, fmt.Sprintf("%d events were dead-lettered", r.DeadLettered))
	}
	if r.Lost > 0 {
		why = append(why, fmt.Sprintf("%d events were still pending", r.Lost))
	}
	if len(why) == 0 {
		return "declines count against success"
	}
	return strings.Join(why, ", ")
}

// refusals lists why webhooks were not accepted, most frequent first.
func refusals(by map[string]int) string {
	reasons := slices.Collect(maps.Keys(by))
	slices.SortFunc(reasons, func(a, b string) int { return cmp.Or(by[b]-by[a], strings.Compare(a, b)) })
	parts := make([]string, 0, len(reasons))
	for _, r := range reasons {
		parts = append(parts, fmt.Sprintf("%d %s", by[r], r))
	}
	if len(parts) == 0 {
		return "reason not recorded"
	}
	return strings.Join(parts, ", ")
}
