package reconcile

import (
	"errors"
	"time"

	"github.com/hookline/hookline/internal/emf"
)

// Metric names emitted by the [Reconciler] (EMF, namespace of the logger).
const (
	// MetricDiscoveryLatency is, per record the poll path applied, the time
	// from the usage's occurrence to its discovery by reconciliation.
	MetricDiscoveryLatency = "ReconDiscoveryLatency"
	// MetricRecords counts a run's records, with dimension Class (missed,
	// matched, repeat, disagreement, deferred, unseen).
	MetricRecords = "ReconRecords"
	// MetricRunDuration is a run's duration, with dimension Outcome.
	MetricRunDuration = "ReconRunDuration"
	// MetricRunFailed counts failed runs, with dimension Reason (export,
	// fold, store).
	MetricRunFailed = "ReconRunFailed"
	// MetricLostRace counts runs that lost the cursor to a concurrent run.
	MetricLostRace = "ReconLostRace"
	// MetricUnresolvedAmount, MetricUnresolvedAge and
	// MetricUnresolvedRecords describe every open deferred record after a
	// run: their units, the age of the oldest, and their number.
	MetricUnresolvedAmount  = "UnresolvedAttributionAmount"
	MetricUnresolvedAge     = "UnresolvedAttributionAge"
	MetricUnresolvedRecords = "UnresolvedAttributionRecords"
	// MetricIntervalChange counts interval changes, with dimension Tier (the
	// new tier).
	MetricIntervalChange = "ReconIntervalChange"
)

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// emitRun writes the run's duration and its counts per class.
func (r *Reconciler) emitRun(run Run, err error) {
	m := r.cfg.Metrics
	if m == nil {
		return
	}
	_ = m.Entry(emf.Dims{"Outcome": run.Outcome}).Put(MetricRunDuration, ms(run.Duration), emf.Milliseconds).
		Set("run", run.RunID).Flush()
	switch run.Outcome {
	case "lost_race":
		_ = m.Count(MetricLostRace, 1, nil)
	case "failed":
		reason := "store"
		switch {
		case errors.Is(err, ErrExport):
			reason = "export"
		case errors.Is(err, ErrFold):
			reason = "fold"
		}
		_ = m.Count(MetricRunFailed, 1, emf.Dims{"Reason": reason})
	}
	for _, c := range []struct {
		class string
		n     int64
	}{
		{ClassMissed, run.Missed}, {ClassMatched, run.Matched}, {ClassRepeat, run.Repeats},
		{ClassDisagreement, run.Disagreements}, {ClassDeferred, run.Deferred}, {"unseen", run.Unseen}, {ClassQuarantined, run.Quarantined},
	} {
		_ = m.Count(MetricRecords, float64(c.n), emf.Dims{"Class": c.class})
	}
}

// emitDiscovery writes discovery latencies, up to emf.MaxValues per line.
func (r *Reconciler) emitDiscovery(ls []time.Duration) {
	m := r.cfg.Metrics
	if m == nil {
		return
	}
	for len(ls) > 0 {
		n := min(len(ls), emf.MaxValues)
		e := m.Entry(emf.Dims{"Path": "poll"})
		for _, d := range ls[:n] {
			e.Put(MetricDiscoveryLatency, ms(d), emf.Milliseconds)
		}
		_ = e.Flush()
		ls = ls[n:]
	}
}

func (r *Reconciler) emitUnresolved(run *Run, records int) {
	m := r.cfg.Metrics
	if m == nil {
		return
	}
	var age time.Duration
	if !run.UnresolvedOldest.IsZero() {
		age = run.StartedAt.Sub(run.UnresolvedOldest)
	}
	_ = m.Entry(nil).
		Put(MetricUnresolvedAmount, float64(run.UnresolvedUnits), emf.Count).
		Put(MetricUnresolvedRecords, float64(records), emf.Count).
		Put(MetricUnresolvedAge, ms(age), emf.Milliseconds).Flush()
}

func (r *Reconciler) emitChange(ch IntervalChange) {
	if m := r.cfg.Metrics; m != nil {
		_ = m.Emit(MetricIntervalChange, 1, emf.Count, emf.Dims{"Tier": string(ch.To)},
			map[string]any{"workload": ch.WorkloadID, "from": string(ch.From), "reason": ch.Reason})
	}
}
