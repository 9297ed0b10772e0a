package spendworker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/stripeusage"
	"github.com/hookline/hookline/internal/sums"
)

// Reasons an alert is dead-lettered for, as the Reason dimension of
// [MetricUsageDeadLettered]. None of them passes on a retry: each needs an
// operator (a sums source, an alert or an alias configured, the event
// redriven).
const (
	// ReasonInvalidAlert: the event is not a billing.alert.triggered the
	// ledger can compare (a field missing, a value beyond the meter's
	// scale), or the ledger refused it.
	ReasonInvalidAlert = "invalid_alert"
	// ReasonAlertNoSumsSource: no sums source reconciles the usage source
	// the alert came in on.
	ReasonAlertNoSumsSource = "alert_no_sums_source"
	// ReasonAlertLivemode: the usage source's sums sources are all of the
	// other mode: a test-mode alert never touches a live source, nor a live
	// one a test source.
	ReasonAlertLivemode = "alert_livemode_mismatch"
	// ReasonAlertUnknownMeter: the alert is not configured and its meter is
	// none of the sums sources', or it is configured on another meter than
	// the event's.
	ReasonAlertUnknownMeter = "alert_unknown_meter"
	// ReasonUnknownWorkload: the alert's customer is no workload's alias.
	ReasonUnknownWorkload = "unknown_workload"
)

// Where an alert's Since comes from ([spend.Alert.SinceFrom]).
const (
	// SinceConfigured is the alert's creation time, configured with the
	// sums source ([sums.Source.Alerts]).
	SinceConfigured = "configured"
	// SinceSourceStart is the sums source's start, for an alert the
	// source does not list: the ledger counts nothing before it.
	SinceSourceStart = "source_start"
)

// Outcomes of an alert, as the Outcome dimension of [MetricUsageAlerts].
const (
	AlertPaged     = "paged"     // above the ledger: the owner is paged
	AlertRecorded  = "recorded"  // the ledger holds at least its value
	AlertDuplicate = "duplicate" // recorded before
)

// AlertRefusal is why an alert cannot be recorded: Reason is one of the
// Reason constants, Detail says what an operator needs to fix it.
type AlertRefusal struct {
	Reason, Detail string
}

func (e *AlertRefusal) Error() string { return e.Reason + ": " + e.Detail }

func refuseAlert(reason, format string, a ...any) *AlertRefusal {
	return &AlertRefusal{Reason: reason, Detail: fmt.Sprintf(format, a...)}
}

// alertMeter is the sums source and meter an alert received on the usage
// source usageSource is compared against, and since when.
type alertMeter struct {
	src       sums.Source
	meter     sums.Meter
	since     time.Time
	sinceFrom string
}

// meterFor finds the sums source and meter of a, received on the usage
// source usageSource: among the sums sources in the alert's mode, the one
// that configures the alert (compared since its creation), else the one
// whose meter is the alert's provider meter (compared since the source's
// start). The sums sources looked at are those whose usage source is
// usageSource; when none is, every Stripe sums source: Stripe signs its
// alerts on an endpoint of its own, never the usage source the producer's
// records come in on, and its alert and meter IDs are unique across
// accounts. An alert only a sums source of the other mode would take is
// refused: a test-mode alert never touches a live source.
func meterFor(ss sums.Sources, usageSource string, a stripeusage.Alert) (alertMeter, error) {
	scope := sourcesOf(ss, func(src sums.Source) bool { return src.UsageSource == usageSource })
	if len(scope) == 0 {
		scope = sourcesOf(ss, func(src sums.Source) bool { return src.Provider == stripeProvider })
	}
	if len(scope) == 0 {
		return alertMeter{}, refuseAlert(ReasonAlertNoSumsSource, "no sums source (SUM_SOURCES) reconciles usage source %q or Stripe", usageSource)
	}
	var same, other []sums.Source
	for _, src := range scope {
		if src.Livemode == a.Livemode {
			same = append(same, src)
		} else {
			other = append(other, src)
		}
	}
	if at, found, err := findMeter(same, a); found || err != nil {
		return at, err
	}
	if at, found, _ := findMeter(other, a); found || len(same) == 0 {
		src := cmp.Or(at.src.Name, other[0].Name)
		return alertMeter{}, refuseAlert(ReasonAlertLivemode, "a %s alert on usage source %q, for sums source %s, which is %s: an alert is never compared across modes",
			mode(a.Livemode), usageSource, src, mode(!a.Livemode))
	}
	return alertMeter{}, refuseAlert(ReasonAlertUnknownMeter, "alert %s (meter %q) is neither listed under the alerts of nor on a meter of the %s sums sources %s",
		a.AlertID, a.Meter, mode(a.Livemode), names(same))
}

// findMeter finds a's meter among srcs: the source that lists the alert,
// else the one with the alert's provider meter.
func findMeter(srcs []sums.Source, a stripeusage.Alert) (alertMeter, bool, error) {
	for _, src := range srcs {
		conf, ok := src.Alerts[a.AlertID]
		if !ok {
			continue
		}
		m := src.Meters[conf.Meter]
		if a.Meter != "" && a.Meter != m.ProviderMeter {
			return alertMeter{}, true, refuseAlert(ReasonAlertUnknownMeter, "alert %s is listed on meter %s (%s) of %s, the event says %s",
				a.AlertID, m.Name, m.ProviderMeter, src.Name, a.Meter)
		}
		return alertMeter{src: src, meter: m, since: conf.Created, sinceFrom: SinceConfigured}, true, nil
	}
	for _, src := range srcs {
		if m, ok := src.MeterByProvider(a.Meter); ok && a.Meter != "" {
			return alertMeter{src: src, meter: m, since: src.Start, sinceFrom: SinceSourceStart}, true, nil
		}
	}
	return alertMeter{}, false, nil
}

// stripeProvider is the provider of sums whose alerts the worker reads.
const stripeProvider = "stripe"

// sourcesOf are the sums sources keep takes, by name.
func sourcesOf(ss sums.Sources, keep func(sums.Source) bool) []sums.Source {
	var out []sums.Source
	for _, name := range slices.Sorted(maps.Keys(ss)) {
		if keep(ss[name]) {
			out = append(out, ss[name])
		}
	}
	return out
}

func names(ss []sums.Source) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name
	}
	return strings.Join(out, ", ")
}

func mode(live bool) string {
	if live {
		return "live"
	}
	return "test"
}

// alert records a provider's threshold alert ([usagein.OutcomeAlert]): it
// is compared with the ledger's count of its meter since the alert's
// creation, paged once when the ledger is below, and its workload is read
// on the reconciler's next run. An alert that cannot be compared is
// dead-lettered with its reason; a ledger that failed sends it back to
// the queue. It reports whether the message is acknowledged.
func (w *Worker) alert(ctx context.Context, p parsed, keys *pageKeys) bool {
	a, err := w.readAlert(ctx, p)
	var refusal *AlertRefusal
	switch {
	case errors.As(err, &refusal):
		return w.refuseAlert(ctx, p, refusal)
	case err != nil:
		w.cfg.Logger.WarnContext(ctx, "usage alert not recorded; it returns to the queue", "event_id", p.u.EventID, "err", err)
		return false
	}
	now := w.cfg.Now()
	res, err := w.cfg.Alerts.RecordAlert(ctx, a, now.Add(w.cfg.PollInterval))
	switch {
	case spend.IsRefused(err) || errors.Is(err, spend.ErrUnknownSums):
		return w.refuseAlert(ctx, p, refuseAlert(ReasonInvalidAlert, "the ledger refused it: %v", err))
	case err != nil:
		w.cfg.Logger.WarnContext(ctx, "usage alert not recorded; it returns to the queue", "event_id", a.EventID, "err", err)
		return false
	}
	if res.Alert.Paged {
		// A duplicate's page was enqueued by the first delivery, whose
		// flush may not have run.
		keys.add(AlertDedupKey(a.Source, a.EventID))
	}
	outcome := AlertRecorded
	switch {
	case res.Duplicate:
		outcome = AlertDuplicate
	case res.Alert.Paged:
		outcome = AlertPaged
	}
	if !w.markAttribution(ctx, p.m, p.u, intake.AttributionAlert, a.WorkloadID, outcome) {
		return false
	}
	w.cfg.Metrics.Count(MetricUsageAlerts, 1, emf.Dims{"Outcome": outcome})
	w.cfg.Logger.InfoContext(ctx, "usage alert "+outcome, "event_id", a.EventID, "workload", a.WorkloadID, "source", a.Source,
		"meter", a.Meter, "value", res.Alert.Value, "ledger", res.Alert.Ledger, "since", res.Alert.Since, "since_from", res.Alert.SinceFrom,
		"due_at", res.DueAt)
	return true
}

// AlertDedupKey is the dedup key of the page of an alert above the
// ledger, as [spend.Buckets.RecordAlert] enqueues it.
func AlertDedupKey(source, eventID string) string { return "usage-alert#" + source + "#" + eventID }

// readAlert reads the alert's event and finds what it is compared with:
// an [*AlertRefusal] when it cannot be, another error when the workloads
// could not be read.
func (w *Worker) readAlert(ctx context.Context, p parsed) (spend.Alert, error) {
	if isOpenMeterAlert(p.alert) {
		return w.readOpenMeterAlert(ctx, p)
	}
	a, err := stripeusage.ParseAlert([]byte(p.alert))
	if err != nil {
		return spend.Alert{}, refuseAlert(ReasonInvalidAlert, "%v", err)
	}
	at, err := meterFor(w.cfg.Sums, p.u.Source, a)
	if err != nil {
		return spend.Alert{}, err
	}
	units, err := a.Units(at.meter.Scale)
	if err != nil {
		return spend.Alert{}, refuseAlert(ReasonInvalidAlert, "meter %s of %s: %v", at.meter.Name, at.src.Name, err)
	}
	wl, err := w.cfg.Workloads.Resolve(ctx, a.Customer)
	switch {
	case errors.Is(err, spend.ErrUnknownWorkload):
		return spend.Alert{}, refuseAlert(ReasonUnknownWorkload, "customer %s of alert %s is no workload's alias: add it, then redrive the event",
			a.Customer, a.AlertID)
	case err != nil:
		return spend.Alert{}, err
	}
	return spend.Alert{EventID: a.EventID, Source: at.src.Name, Meter: at.meter.Name, WorkloadID: wl.ID, AlertID: a.AlertID,
		Customer: a.Customer, Value: units, Since: at.since, SinceFrom: at.sinceFrom, ReceivedAt: cmp.Or(p.receivedAt, w.cfg.Now())}, nil
}

// refuseAlert dead-letters an alert that cannot be recorded, with its
// reason, and logs it.
func (w *Worker) refuseAlert(ctx context.Context, p parsed, r *AlertRefusal) bool {
	w.cfg.Logger.WarnContext(ctx, "usage alert refused", "message_id", p.m.MessageId, "event_id", p.u.EventID,
		"source", p.u.Source, "reason", r.Reason, "why", r.Detail)
	return w.deadLetter(ctx, p.m, r.Reason, r.Error())
}
