package spendworker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"

	"github.com/hookline/hookline/internal/openmeter"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/sums"
)

// SincePeriod is [spend.Alert.SinceFrom] of an OpenMeter threshold: the
// alert carries its window, the entitlement's current usage period, which
// resets.
const SincePeriod = "period"

// openMeterProvider is the provider of sums whose thresholds the worker
// reads.
const openMeterProvider = "openmeter"

// isOpenMeterAlert reports whether an alert's event is an OpenMeter
// threshold notification (by its type member).
func isOpenMeterAlert(event string) bool {
	var head struct {
		Type string `json:"type"`
	}
	return json.Unmarshal([]byte(event), &head) == nil && head.Type == openmeter.AlertType
}

// readOpenMeterAlert reads an entitlements.balance.threshold notification
// and finds what it is compared with: the OpenMeter sums source whose
// meter is the feature's meter slug (among those of the usage source it
// came in on, else every OpenMeter source: OpenMeter notifies on an
// endpoint of its own), over the entitlement's current usage period, for
// the workload whose alias is the subject's key.
func (w *Worker) readOpenMeterAlert(ctx context.Context, p parsed) (spend.Alert, error) {
	a, err := openmeter.ParseAlert([]byte(p.alert))
	if err != nil {
		return spend.Alert{}, refuseAlert(ReasonInvalidAlert, "%v", err)
	}
	src, m, err := openMeterMeter(w.cfg.Sums, p.u.Source, a.Meter)
	if err != nil {
		return spend.Alert{}, err
	}
	units, err := a.Units(m.Scale)
	if err != nil {
		return spend.Alert{}, refuseAlert(ReasonInvalidAlert, "meter %s of %s: %v", m.Name, src.Name, err)
	}
	wl, err := w.cfg.Workloads.Resolve(ctx, a.Subject)
	switch {
	case errors.Is(err, spend.ErrUnknownWorkload):
		return spend.Alert{}, refuseAlert(ReasonUnknownWorkload, "subject %s of entitlement %s is no workload's alias: add it, then redrive the event",
			a.Subject, a.Entitlement)
	case err != nil:
		return spend.Alert{}, err
	}
	return spend.Alert{EventID: a.EventID, Source: src.Name, Meter: m.Name, WorkloadID: wl.ID, AlertID: a.Entitlement,
		Customer: a.Subject, Value: units, Since: a.PeriodFrom, SinceFrom: SincePeriod, Until: a.PeriodTo,
		ReceivedAt: cmp.Or(p.receivedAt, w.cfg.Now())}, nil
}

// openMeterMeter finds the OpenMeter sums source and ledger meter of a
// meter slug.
func openMeterMeter(ss sums.Sources, usageSource, slug string) (sums.Source, sums.Meter, error) {
	scope := sourcesOf(ss, func(s sums.Source) bool { return s.Provider == openMeterProvider && s.UsageSource == usageSource })
	if len(scope) == 0 {
		scope = sourcesOf(ss, func(s sums.Source) bool { return s.Provider == openMeterProvider })
	}
	if len(scope) == 0 {
		return sums.Source{}, sums.Meter{}, refuseAlert(ReasonAlertNoSumsSource, "no OpenMeter sums source (SUM_SOURCES) to compare usage source %q's threshold with", usageSource)
	}
	for _, src := range scope {
		if m, ok := src.MeterByProvider(slug); ok {
			return src, m, nil
		}
	}
	return sums.Source{}, sums.Meter{}, refuseAlert(ReasonAlertUnknownMeter, "meter %q is on none of the OpenMeter sums sources %s", slug, names(scope))
}
