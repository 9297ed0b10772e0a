package stack

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Errors reported by the invariant checks. Each check wraps one of them with
// the logical ID of the offending resource, so errors.Is tells which rule
// broke and the message tells where.
var (
	ErrUnknownReference     = errors.New("stack: names a resource that is not in the template")
	ErrNoDeadLetterQueue    = errors.New("stack: queue has no dead-letter queue")
	ErrMaxReceiveCount      = errors.New("stack: maxReceiveCount is below 2")
	ErrDeadLetterRetention  = errors.New("stack: dead-letter queue keeps messages less than 14 days")
	ErrQueueNotEncrypted    = errors.New("stack: queue has no server-side encryption")
	ErrNotOnDemand          = errors.New("stack: table is not PAY_PER_REQUEST")
	ErrNoPITR               = errors.New("stack: table has no point-in-time recovery")
	ErrNoQueueDimension     = errors.New("stack: SQS alarm has no QueueName dimension")
	ErrQueueDimensionIsURL  = errors.New("stack: QueueName dimension is !Ref (the queue URL); use !GetAtt <queue>.QueueName")
	ErrMissingAlarm         = errors.New("stack: queue has no alarm")
	ErrNoBatchItemFailures  = errors.New("stack: SQS event source does not set FunctionResponseTypes [ReportBatchItemFailures]")
	ErrMaxConcurrency       = errors.New("stack: SQS event source has no ScalingConfig.MaximumConcurrency between 2 and 1000")
	ErrVisibilityTimeout    = errors.New("stack: queue VisibilityTimeout is under 6 times its consumer's Timeout")
	ErrWildcardAction       = errors.New("stack: IAM statement allows every action of a service")
	ErrWildcardResource     = errors.New("stack: IAM statement allows Resource \"*\"")
	ErrNoRouteAuthorization = errors.New("stack: route is open to anonymous callers (want AuthorizationType AWS_IAM or JWT)")
	// ErrIntakeOutlivesIdempotency means intake records are kept longer
	// than idempotency keys, so a replay could charge an event again.
	ErrIntakeOutlivesIdempotency = errors.New("stack: intake retention is longer than idempotency retention")
	// ErrBadRetention means a retention variable is not a positive duration.
	ErrBadRetention = errors.New("stack: retention is not a positive duration")
	// ErrNoFetchAlarm means the payment worker has no alarm on the
	// payments its provider does not know, so a key for the wrong
	// account would leave every payment unacted on, unseen.
	ErrNoFetchAlarm = errors.New("stack: payment worker has no alarm on fetches not found")
)

// Values the checks hold the template to.
const (
	minMaxReceiveCount     = 2
	deadLetterRetention    = 1209600 // 14 days, the SQS maximum
	minMaxConcurrency      = 2       // the SQS event source minimum
	maxMaxConcurrency      = 1000    // the SQS event source maximum
	visibilityPerTimeout   = 6       // AWS: visibility >= 6 x function timeout
	ageMetric              = "ApproximateAgeOfOldestMessage"
	depthMetric            = "ApproximateNumberOfMessagesVisible"
	sqsNamespace           = "AWS/SQS"
	reportBatchItemFailure = "ReportBatchItemFailures"
)

// starResourceActions are the only actions a function may be granted on
// Resource "*": AWS defines no resource type for them, so no narrower
// statement exists. Keep this list short; anything added needs that reason.
var starResourceActions = []string{
	"cloudwatch:PutMetricData",
	"xray:PutTelemetryRecords",
	"xray:PutTraceSegments",
}

// Invariant is one named rule that infra/template.yaml must keep.
type Invariant struct {
	Name  string
	Check func(t *Template) []error
}

// Invariants returns every rule [Check] applies, in a fixed order.
func Invariants() []Invariant {
	return []Invariant{
		{"DeadLetterQueues", CheckDeadLetterQueues},
		{"DeadLetterRetention", CheckDeadLetterRetention},
		{"QueueEncryption", CheckQueueEncryption},
		{"Tables", CheckTables},
		{"AlarmTargets", CheckAlarmTargets},
		{"QueueAlarms", CheckQueueAlarms},
		{"EventSources", CheckEventSources},
		{"VisibilityTimeouts", CheckVisibilityTimeouts},
		{"Policies", CheckPolicies},
		{"InvocationTargets", CheckInvocationTargets},
		{"RouteAuthorization", CheckRouteAuthorization},
		{"Retention", CheckRetention},
		{"FetchAlarms", CheckFetchAlarms},
	}
}

// Check runs every invariant and joins what they report; nil means the
// template keeps them all.
func Check(t *Template) error {
	var errs []error
	for _, inv := range Invariants() {
		errs = append(errs, inv.Check(t)...)
	}
	return errors.Join(errs...)
}

// CheckDeadLetterQueues reports every queue that is not itself a dead-letter
// queue and has no redrive policy, a redrive policy naming a queue that is
// not in the template, or a maxReceiveCount below 2 (one
// lost acknowledgement must not dead-letter a message).
func CheckDeadLetterQueues(t *Template) []error {
	var errs []error
	dlqs := t.deadLetterIDs()
	for _, q := range t.Queues {
		switch {
		case q.DeadLetterQueue == "" && dlqs[q.LogicalID]:
			continue
		case q.DeadLetterQueue == "":
			errs = append(errs, fmt.Errorf("%s: %w", q.LogicalID, ErrNoDeadLetterQueue))
			continue
		}
		if _, ok := t.queueByID(q.DeadLetterQueue); !ok {
			errs = append(errs, fmt.Errorf("%s: redrive target %s: %w", q.LogicalID, q.DeadLetterQueue, ErrUnknownReference))
		}
		if q.MaxReceiveCount < minMaxReceiveCount {
			errs = append(errs, fmt.Errorf("%s: maxReceiveCount %d: %w", q.LogicalID, q.MaxReceiveCount, ErrMaxReceiveCount))
		}
	}
	return errs
}

// CheckDeadLetterRetention reports every dead-letter queue that keeps
// messages less than 14 days, so a redrive after a long weekend still finds
// them.
func CheckDeadLetterRetention(t *Template) []error {
	var errs []error
	dlqs := t.deadLetterIDs()
	for _, q := range t.Queues {
		if dlqs[q.LogicalID] && q.RetentionPeriod < deadLetterRetention {
			errs = append(errs, fmt.Errorf("%s: MessageRetentionPeriod %d: %w", q.LogicalID, q.RetentionPeriod, ErrDeadLetterRetention))
		}
	}
	return errs
}

// CheckQueueEncryption reports every queue without SqsManagedSseEnabled or a
// KMS key.
func CheckQueueEncryption(t *Template) []error {
	var errs []error
	for _, q := range t.Queues {
		if !q.SSE {
			errs = append(errs, fmt.Errorf("%s: %w", q.LogicalID, ErrQueueNotEncrypted))
		}
	}
	return errs
}

// CheckTables reports every table that is not on-demand or has no
// point-in-time recovery.
func CheckTables(t *Template) []error {
	var errs []error
	for _, tb := range t.Tables {
		if tb.BillingMode != "PAY_PER_REQUEST" {
			errs = append(errs, fmt.Errorf("%s: BillingMode %s: %w", tb.LogicalID, tb.BillingMode, ErrNotOnDemand))
		}
		if !tb.PITR {
			errs = append(errs, fmt.Errorf("%s: %w", tb.LogicalID, ErrNoPITR))
		}
	}
	return errs
}

// CheckAlarmTargets reports every AWS/SQS alarm whose QueueName dimension is
// missing, names a queue that is not in the template, or is a !Ref (which
// gives the queue URL, so the alarm would watch nothing).
func CheckAlarmTargets(t *Template) []error {
	var errs []error
	for _, a := range t.Alarms {
		if a.Namespace != sqsNamespace && a.Queue == "" {
			continue
		}
		if a.Queue == "" {
			errs = append(errs, fmt.Errorf("%s: %w", a.LogicalID, ErrNoQueueDimension))
			continue
		}
		if _, ok := t.Queue(a.Queue); !ok {
			errs = append(errs, fmt.Errorf("%s: QueueName %s: %w", a.LogicalID, a.Queue, ErrUnknownReference))
			continue
		}
		if t.queueDimensionIsRef(a.LogicalID) {
			errs = append(errs, fmt.Errorf("%s: %w", a.LogicalID, ErrQueueDimensionIsURL))
		}
	}
	return errs
}

// CheckQueueAlarms reports every dead-letter queue without an
// ApproximateNumberOfMessagesVisible alarm (someone must look at a dead
// letter) and every other queue without an ApproximateAgeOfOldestMessage
// alarm (its consumer is behind or failing).
func CheckQueueAlarms(t *Template) []error {
	watched := map[string]map[string]bool{} // queue logical ID -> metric
	for _, a := range t.Alarms {
		q, ok := t.Queue(a.Queue)
		if !ok || a.Namespace != sqsNamespace {
			continue
		}
		if watched[q.LogicalID] == nil {
			watched[q.LogicalID] = map[string]bool{}
		}
		watched[q.LogicalID][a.MetricName] = true
	}
	var errs []error
	dlqs := t.deadLetterIDs()
	for _, q := range t.Queues {
		metric := ageMetric
		if dlqs[q.LogicalID] {
			metric = depthMetric
		}
		if !watched[q.LogicalID][metric] {
			errs = append(errs, fmt.Errorf("%s: no %s alarm: %w", q.LogicalID, metric, ErrMissingAlarm))
		}
	}
	return errs
}

// CheckEventSources reports every event source mapping that names a function
// or source that is not in the template, and every SQS one without
// ReportBatchItemFailures (one bad message would redeliver its whole batch)
// or without a MaximumConcurrency (a backlog would take every concurrent
// execution in the account).
func CheckEventSources(t *Template) []error {
	var errs []error
	for _, es := range t.EventSources {
		if _, ok := t.Function(es.Function); !ok {
			errs = append(errs, fmt.Errorf("%s: function %q: %w", es.LogicalID, es.Function, ErrUnknownReference))
		}
		isQueue, known := t.sourceKind(es.Queue)
		if !known {
			errs = append(errs, fmt.Errorf("%s: event source %q: %w", es.LogicalID, es.Queue, ErrUnknownReference))
		}
		if !isQueue {
			continue
		}
		if !slices.Contains(es.FunctionResponseTypes, reportBatchItemFailure) {
			errs = append(errs, fmt.Errorf("%s: %w", es.LogicalID, ErrNoBatchItemFailures))
		}
		if es.MaxConcurrency < minMaxConcurrency || es.MaxConcurrency > maxMaxConcurrency {
			errs = append(errs, fmt.Errorf("%s: MaximumConcurrency %d: %w", es.LogicalID, es.MaxConcurrency, ErrMaxConcurrency))
		}
	}
	return errs
}

// CheckVisibilityTimeouts reports every queue consumed by a function whose
// VisibilityTimeout is under 6 times that function's
// Timeout, so that a message is not redelivered while a throttled or retried
// invocation still holds it.
func CheckVisibilityTimeouts(t *Template) []error {
	var errs []error
	for _, es := range t.EventSources {
		q, okQ := t.queueByID(es.Queue)
		f, okF := t.Function(es.Function)
		if !okQ || !okF {
			continue // CheckEventSources reports the dangling reference.
		}
		if want := visibilityPerTimeout * f.Timeout; q.VisibilityTimeout < want {
			errs = append(errs, fmt.Errorf("%s: VisibilityTimeout %d, want >= %d (%d x %s Timeout %d): %w",
				q.LogicalID, q.VisibilityTimeout, want, visibilityPerTimeout, f.LogicalID, f.Timeout, ErrVisibilityTimeout))
		}
	}
	return errs
}

// CheckPolicies reports every Allow statement in a function's inline
// policies that grants Action "*" or "service:*", or Resource "*" for an
// action outside a short allowlist of
// actions that AWS only grants on Resource "*" (cloudwatch:PutMetricData,
// xray:PutTraceSegments, xray:PutTelemetryRecords).
func CheckPolicies(t *Template) []error {
	var errs []error
	for _, f := range t.Functions {
		for i, s := range f.Statements {
			if strings.EqualFold(s.Effect, "Deny") {
				continue
			}
			for _, a := range s.Action {
				if a == "*" || strings.HasSuffix(a, ":*") {
					errs = append(errs, fmt.Errorf("%s: statement %d: Action %q: %w", f.LogicalID, i, a, ErrWildcardAction))
				}
			}
			if !slices.Contains(s.Resource, "*") {
				continue
			}
			for _, a := range s.Action {
				if !starResourceAction(a) {
					errs = append(errs, fmt.Errorf("%s: statement %d: Action %q on Resource \"*\": %w", f.LogicalID, i, a, ErrWildcardResource))
				}
			}
		}
	}
	return errs
}

// CheckInvocationTargets reports every route and schedule whose target is not
// a function in the template.
func CheckInvocationTargets(t *Template) []error {
	var errs []error
	for _, r := range t.Routes {
		if _, ok := t.Function(r.Function); !ok {
			errs = append(errs, fmt.Errorf("%s: %s %s targets %q: %w", r.LogicalID, r.Method, r.Path, r.Function, ErrUnknownReference))
		}
	}
	for _, s := range t.Schedules {
		if _, ok := t.Function(s.Function); !ok {
			errs = append(errs, fmt.Errorf("%s: targets %q: %w", s.LogicalID, s.Function, ErrUnknownReference))
		}
	}
	return errs
}

// signatureVerifyingVar marks a function that authenticates its own callers
// by webhook signature: the receiver, whose sources are HOOKLINE_SOURCES.
const signatureVerifyingVar = "HOOKLINE_SOURCES"

// CheckRouteAuthorization reports every HTTP API route without AWS_IAM or
// JWT authorization, except routes to a function that verifies webhook
// signatures itself (providers cannot sign with our IAM credentials).
func CheckRouteAuthorization(t *Template) []error {
	var errs []error
	for _, r := range t.Routes {
		if r.Authorization == "AWS_IAM" || r.Authorization == "JWT" {
			continue
		}
		f, ok := t.Function(r.Function)
		if !ok {
			continue // InvocationTargets reports it
		}
		if _, verifies := f.Environment[signatureVerifyingVar]; verifies {
			continue
		}
		errs = append(errs, fmt.Errorf("%s: %s %s has AuthorizationType %s: %w", r.LogicalID, r.Method, r.Path, r.Authorization, ErrNoRouteAuthorization))
	}
	return errs
}

// paymentWorkerVar marks the payment worker, which fetches what an
// untrusted webhook names from its provider before acting on it.
const paymentWorkerVar = "PAYMENT_PROVIDER"

// The metric the payment worker counts a fetch its provider answered
// "not found" in (EMF, dimensions Source and Reason), and the reason.
const (
	metricsNamespace    = "hookline"
	notAnEffectMetric   = "PaymentNotAnEffect"
	fetchNotFoundReason = "fetch_not_found"
)

// fetchNotFoundQuery is a Metrics Insights query of that count over
// every source.
var fetchNotFoundQuery = regexp.MustCompile(`(?i)^\s*SELECT\s+(SUM|COUNT)\(\s*"?` + notAnEffectMetric + `"?\s*\)\s+` +
	`FROM\s+SCHEMA\(\s*"?` + metricsNamespace + `"?\s*,\s*("?Reason"?\s*,\s*"?Source"?|"?Source"?\s*,\s*"?Reason"?)\s*\)\s+` +
	`WHERE\s+"?Reason"?\s*=\s*'` + fetchNotFoundReason + `'\s*$`)

// CheckFetchAlarms reports a payment worker without an alarm on the
// count of fetches its provider answered "not found" (PaymentNotAnEffect
// with Reason fetch_not_found, for one source or, by a Metrics Insights
// query, for all). The worker acknowledges such a message without a
// page, since anyone can name an ID; but with a key for another account
// (a test key against live payments) every real payment is one.
func CheckFetchAlarms(t *Template) []error {
	watched := slices.ContainsFunc(t.Alarms, func(a Alarm) bool {
		if a.Namespace == metricsNamespace && a.MetricName == notAnEffectMetric && a.Dimensions["Reason"] == fetchNotFoundReason {
			return true
		}
		return slices.ContainsFunc(a.Queries, fetchNotFoundQuery.MatchString)
	})
	var errs []error
	for _, f := range t.Functions {
		if _, worker := f.Environment[paymentWorkerVar]; worker && !watched {
			errs = append(errs, fmt.Errorf("%s: no alarm on %s with Reason %s: %w", f.LogicalID, notAnEffectMetric, fetchNotFoundReason, ErrNoFetchAlarm))
		}
	}
	return errs
}

func starResourceAction(action string) bool {
	for _, allowed := range starResourceActions {
		if strings.EqualFold(action, allowed) {
			return true
		}
	}
	return false
}

// deadLetterIDs returns the logical IDs of the queues that some queue's
// redrive policy names.
func (t *Template) deadLetterIDs() map[string]bool {
	ids := map[string]bool{}
	for _, q := range t.Queues {
		if q.DeadLetterQueue != "" {
			ids[q.DeadLetterQueue] = true
		}
	}
	return ids
}

// sourceKind tells whether an event source's logical ID is a queue in the
// template, and whether it names anything in the template at all. An empty
// ID (a self-managed source without EventSourceArn) is known and not a queue.
func (t *Template) sourceKind(id string) (isQueue, known bool) {
	if id == "" {
		return false, true
	}
	if _, ok := t.queueByID(id); ok {
		return true, true
	}
	if t.raw != nil {
		if _, ok := t.raw.Resources[id]; ok {
			return false, true
		}
	}
	return false, false
}

// queueDimensionIsRef reports whether the alarm's QueueName dimension was
// written as !Ref, which resolves to the queue URL rather than its name.
func (t *Template) queueDimensionIsRef(alarmID string) bool {
	if t.raw == nil {
		return false
	}
	a, err := t.raw.GetCloudWatchAlarmWithName(alarmID)
	if err != nil {
		return false
	}
	for _, d := range a.Dimensions {
		if d.Name == "QueueName" && strings.HasPrefix(d.Value, "ref:") {
			return true
		}
	}
	return false
}
