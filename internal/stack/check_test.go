package stack

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/paymentworker"
)

const brokenDir = "../../testdata/templates"

// brokenTemplate is a template in testdata/templates that breaks exactly one
// invariant, in exactly one place.
type brokenTemplate struct {
	name    string
	file    string
	check   string   // the Invariant.Name that must fail
	wantErr error    // the sentinel its one error wraps
	mention []string // the offending logical ID first, then any detail
}

var brokenTemplates = []brokenTemplate{
	{"queue without DLQ", "queue-without-dlq.yaml", "DeadLetterQueues", ErrNoDeadLetterQueue, []string{"OrphanQueue"}},
	{"redrive to a queue not in the template", "dlq-not-in-template.yaml", "DeadLetterQueues", ErrUnknownReference, []string{"WorkQueue", "MissingDLQ"}},
	{"maxReceiveCount 1", "max-receive-count-1.yaml", "DeadLetterQueues", ErrMaxReceiveCount, []string{"WorkQueue", "maxReceiveCount 1"}},
	{"DLQ keeps messages 4 days", "dlq-short-retention.yaml", "DeadLetterRetention", ErrDeadLetterRetention, []string{"WorkDLQ", "345600"}},
	{"queue without SSE", "queue-without-sse.yaml", "QueueEncryption", ErrQueueNotEncrypted, []string{"PlainQueue"}},
	{"provisioned table", "provisioned-table.yaml", "Tables", ErrNotOnDemand, []string{"SlowTable", "PROVISIONED"}},
	{"table without PITR", "table-without-pitr.yaml", "Tables", ErrNoPITR, []string{"FragileTable"}},
	{"alarm on a missing queue", "alarm-missing-queue.yaml", "AlarmTargets", ErrUnknownReference, []string{"GhostAlarm", "GhostQueue"}},
	{"alarm dimension is the queue URL", "alarm-queue-ref.yaml", "AlarmTargets", ErrQueueDimensionIsURL, []string{"WorkAgeAlarm"}},
	{"DLQ without depth alarm", "dlq-without-depth-alarm.yaml", "QueueAlarms", ErrMissingAlarm, []string{"WorkDLQ", "ApproximateNumberOfMessagesVisible"}},
	{"queue without age alarm", "queue-without-age-alarm.yaml", "QueueAlarms", ErrMissingAlarm, []string{"WorkQueue", "ApproximateAgeOfOldestMessage"}},
	{"event source without ReportBatchItemFailures", "event-source-without-batch-item-failures.yaml", "EventSources", ErrNoBatchItemFailures, []string{"WorkerEventSource"}},
	{"event source without MaximumConcurrency", "event-source-without-max-concurrency.yaml", "EventSources", ErrMaxConcurrency, []string{"WorkerEventSource", "MaximumConcurrency 0"}},
	{"event source with MaximumConcurrency 1", "event-source-max-concurrency-1.yaml", "EventSources", ErrMaxConcurrency, []string{"WorkerEventSource", "MaximumConcurrency 1"}},
	{"event source to a missing function", "event-source-missing-function.yaml", "EventSources", ErrUnknownReference, []string{"WorkerEventSource", "GhostFunction"}},
	{"visibility under 6x timeout", "visibility-below-6x-timeout.yaml", "VisibilityTimeouts", ErrVisibilityTimeout, []string{"WorkQueue", "WorkerFunction", "want >= 180"}},
	{"IAM Action *", "iam-action-star.yaml", "Policies", ErrWildcardAction, []string{"GreedyFunction", `"*"`}},
	{"IAM Action service:*", "iam-service-star.yaml", "Policies", ErrWildcardAction, []string{"GreedyFunction", "sqs:*"}},
	{"IAM Resource *", "iam-resource-star.yaml", "Policies", ErrWildcardResource, []string{"GreedyFunction", "dynamodb:DeleteItem"}},
	{"route to a missing function", "route-missing-function.yaml", "InvocationTargets", ErrUnknownReference, []string{"ReceiverRoute", "GhostFunction"}},
	{"schedule of a missing function", "schedule-missing-function.yaml", "InvocationTargets", ErrUnknownReference, []string{"ReconcileSchedule", "GhostFunction"}},
	{"intake outlives idempotency", "intake-outlives-idempotency.yaml", "Retention", ErrIntakeOutlivesIdempotency, []string{"ReceiverFunction", "1440h0m0s > IDEMPOTENCY_RETENTION 840h0m0s"}},
	{"route without authorization", "route-without-auth.yaml", "RouteAuthorization", ErrNoRouteAuthorization, []string{"OpenAdmissionRoute", "GET /workloads/{id}/admission"}},
	{"payment worker without fetch alarm", "payment-worker-without-fetch-alarm.yaml", "FetchAlarms", ErrNoFetchAlarm, []string{"PaymentWorkerFunction", "PaymentNotAnEffect", "fetch_not_found"}},
}

func TestRepositoryTemplatePassesEveryCheck(t *testing.T) {
	tpl, err := LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	for _, inv := range Invariants() {
		t.Run(inv.Name, func(t *testing.T) {
			for _, err := range inv.Check(tpl) {
				t.Errorf("%s: %v", tpl.Path, err)
			}
		})
	}
}

func TestCompleteTemplatePassesEveryCheck(t *testing.T) {
	// Given a template with one of every kind of resource the checks look at,
	tpl, err := Load(filepath.Join(brokenDir, "complete.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{
		"queues": len(tpl.Queues), "dead-letter queues": len(tpl.DeadLetterQueues()), "tables": len(tpl.Tables),
		"alarms": len(tpl.Alarms), "functions": len(tpl.Functions), "event sources": len(tpl.EventSources),
		"routes": len(tpl.Routes), "schedules": len(tpl.Schedules),
	}
	for kind, n := range kinds {
		if n == 0 {
			t.Fatalf("complete.yaml has no %s, so a check on them would pass vacuously", kind)
		}
	}
	// when every check runs, then none reports anything.
	if err := Check(tpl); err != nil {
		t.Fatalf("Check(complete.yaml) = %v", err)
	}
}

func TestBrokenTemplatesFail(t *testing.T) {
	for _, tc := range brokenTemplates {
		t.Run(tc.name, func(t *testing.T) {
			// Given a template that breaks one invariant in one place,
			tpl, err := Load(filepath.Join(brokenDir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			for _, inv := range Invariants() {
				// when each check runs,
				errs := inv.Check(tpl)
				if inv.Name != tc.check {
					// then the other checks still pass,
					for _, err := range errs {
						t.Errorf("%s also failed: %v", inv.Name, err)
					}
					continue
				}
				// and the broken one reports one error naming the offender.
				if len(errs) != 1 {
					t.Fatalf("%s reported %d errors, want 1: %v", inv.Name, len(errs), errs)
				}
				if !errors.Is(errs[0], tc.wantErr) {
					t.Errorf("%s: error %q does not wrap %q", inv.Name, errs[0], tc.wantErr)
				}
				if !strings.HasPrefix(errs[0].Error(), tc.mention[0]+":") {
					t.Errorf("%s: error %q does not start with the logical ID %s", inv.Name, errs[0], tc.mention[0])
				}
				for _, m := range tc.mention[1:] {
					if !strings.Contains(errs[0].Error(), m) {
						t.Errorf("%s: error %q does not mention %q", inv.Name, errs[0], m)
					}
				}
			}
			// Check joins the same failure.
			if err := Check(tpl); !errors.Is(err, tc.wantErr) {
				t.Errorf("Check = %v, want it to wrap %v", err, tc.wantErr)
			}
		})
	}
}

func TestEveryInvariantHasABrokenTemplate(t *testing.T) {
	for _, inv := range Invariants() {
		if !slices.ContainsFunc(brokenTemplates, func(r brokenTemplate) bool {
			return r.check == inv.Name
		}) {
			t.Errorf("no broken template proves that %s can fail", inv.Name)
		}
	}
}

func TestEveryBrokenTemplateIsTested(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(brokenDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no templates in %s", brokenDir)
	}
	for _, f := range files {
		name := filepath.Base(f)
		if name == "complete.yaml" {
			continue
		}
		if !slices.ContainsFunc(brokenTemplates, func(r brokenTemplate) bool {
			return r.file == name
		}) {
			t.Errorf("%s has no row in brokenTemplates", name)
		}
	}
	for _, r := range brokenTemplates {
		if _, err := os.Stat(filepath.Join(brokenDir, r.file)); err != nil {
			t.Errorf("row %q: %v", r.name, err)
		}
	}
}

func TestStarResourceActionsStaySmall(t *testing.T) {
	// The allowlist is for actions that AWS defines without a resource type.
	// Growing it past a handful means a statement should be narrowed instead.
	if n := len(starResourceActions); n > 5 {
		t.Fatalf("starResourceActions has %d entries; narrow the statements instead", n)
	}
	for _, a := range starResourceActions {
		if strings.Contains(a, "*") {
			t.Errorf("allowlisted action %q is itself a wildcard", a)
		}
	}
}

// TestEmbeddedIsTheRepositoryTemplate: the template built into binaries is
// the file in the repository, parsed the same way, from any directory.
func TestEmbeddedIsTheRepositoryTemplate(t *testing.T) {
	file, err := LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	t.Setenv("HOOKLINE_TEMPLATE", "")
	if _, err := LoadDefault(); err == nil {
		t.Fatal("LoadDefault found a template outside the repository; the test proves nothing")
	}
	emb, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if len(emb.Queues) != len(file.Queues) || len(emb.Tables) != len(file.Tables) || len(emb.Functions) != len(file.Functions) || len(emb.Routes) != len(file.Routes) {
		t.Fatalf("embedded template differs: %d/%d queues, %d/%d tables", len(emb.Queues), len(file.Queues), len(emb.Tables), len(file.Tables))
	}
}

func TestIntakeRetentionLongerThanIdempotencyIsRefused(t *testing.T) {
	// Given intake records kept 60 days and idempotency keys kept 35,
	tpl, err := Load(filepath.Join(brokenDir, "intake-outlives-idempotency.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// when the template is checked, then the check refuses it: a replay of
	// a record past 35 days would find no key and charge again.
	if err := Check(tpl); err == nil {
		t.Fatal("Check passed a template whose intake records outlive its idempotency keys")
	}
}

func TestRetentionsOfTheRepositoryTemplate(t *testing.T) {
	// Given the repository template, whose retentions are parameters,
	tpl, err := LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	// when its retentions are read, then they are the parameters' defaults.
	r, err := tpl.Retentions()
	if err != nil {
		t.Fatal(err)
	}
	if r.Intake != 840*time.Hour || r.Idempotency != 840*time.Hour {
		t.Fatalf("Retentions = %+v, want 840h each", r)
	}
}

func TestRetentionThatIsNotADurationIsRefused(t *testing.T) {
	tpl, err := Parse("bad.yaml", []byte(`Parameters:
  Keep:
    Type: String
Resources:
  ReceiverFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: dist/receiver/
      Environment:
        Variables:
          INTAKE_RETENTION: 35d
  WorkerFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: dist/worker/
      Environment:
        Variables:
          IDEMPOTENCY_RETENTION: !Ref Keep
`))
	if err != nil {
		t.Fatal(err)
	}
	errs := CheckRetention(tpl)
	if len(errs) != 1 || !errors.Is(errs[0], ErrBadRetention) || !strings.Contains(errs[0].Error(), "35d") {
		t.Fatalf("CheckRetention = %v, want one %v naming 35d", errs, ErrBadRetention)
	}
	tpl.Functions = tpl.Functions[1:] // only the parameter without a default is left
	if errs := CheckRetention(tpl); len(errs) != 1 || !errors.Is(errs[0], ErrBadRetention) {
		t.Fatalf("CheckRetention = %v, want one %v", errs, ErrBadRetention)
	}
}

// TestFetchAlarmWatchesTheWorkersMetric: the alarm the check requires is
// on the metric the payment worker counts an unknown ID in, and the
// query forms it accepts are the ones that sum that count alone.
func TestFetchAlarmWatchesTheWorkersMetric(t *testing.T) {
	if notAnEffectMetric != paymentworker.MetricNotAnEffect {
		t.Fatalf("the check watches %s, the worker counts %s", notAnEffectMetric, paymentworker.MetricNotAnEffect)
	}
	for q, want := range map[string]bool{
		`SELECT SUM(PaymentNotAnEffect) FROM SCHEMA(hookline, Reason, Source) WHERE Reason = 'fetch_not_found'`:         true,
		`SELECT SUM("PaymentNotAnEffect") FROM SCHEMA("hookline", Source, Reason) WHERE Reason = 'fetch_not_found'`:     true,
		`SELECT SUM(PaymentNotAnEffect) FROM SCHEMA(hookline, Reason, Source) WHERE Reason = 'fetched_status'`:          false,
		`SELECT SUM(PaymentNotAnEffect) FROM SCHEMA(other, Reason, Source) WHERE Reason = 'fetch_not_found'`:            false,
		`SELECT SUM(PaymentNotAnEffect) FROM SCHEMA(hookline, Reason, Source) WHERE Reason != 'fetch_not_found'`:        false,
		`SELECT SUM(PaymentCharged) FROM SCHEMA(hookline, Reason, Source) WHERE Reason = 'fetch_not_found'`:             false,
		`SELECT SUM(PaymentNotAnEffect) FROM SCHEMA(hookline, Reason, Source) WHERE Reason = 'fetch_not_found' LIMIT 1`: false,
	} {
		if got := fetchNotFoundQuery.MatchString(q); got != want {
			t.Errorf("%s: matched %v, want %v", q, got, want)
		}
	}
}
