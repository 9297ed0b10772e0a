package localrun_test

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/pkg/idempotency"
)

// report reads every end state from the system's own stores and queues:
// the provider's charge log, the idempotency table, the intake records,
// the workloads, the pager sink and the dead-letter queues.
func (r *e2eRun) report() e2eReport {
	rep := e2eReport{seed: r.seed, events: r.mix.events, profile: r.profile(), aws: r.mix.aws, awsFired: r.sys.AWS.Faults(),
		provFired: r.sys.Sim.Faults.FaultsInjected(),
		pay:       payOutcomes{dead: map[string]int{}}, use: useOutcomes{dead: map[string]int{}}}
	dead := r.drainDLQ(&rep, "payments-dlq")
	for id, reason := range r.drainDLQ(&rep, "usage-dlq") {
		dead[id] = reason
	}
	for _, id := range r.payments {
		if r.countAccepted(&rep, id) {
			rep.pay.webhooks++
			r.classifyPayment(&rep, id, dead[id])
		}
	}
	if n := r.sys.Sim.Charges.DuplicateCharges(); n > 0 {
		rep.pay.chargedTwice = n
		rep.problems = append(rep.problems, fmt.Sprintf("the provider's charge log holds %d duplicate charges", n))
	}
	for _, rec := range r.records {
		for _, id := range rec.webhooks {
			if r.countAccepted(&rep, id) {
				rep.use.webhooks++
				r.classifyUsage(&rep, rec, id, dead[id])
			}
		}
	}
	r.checkTotals(&rep)
	r.checkPages(&rep)
	r.checkSums(&rep)
	r.checkPeriods(&rep)
	return rep
}

// countAccepted counts webhook id as accepted or not, and reports which.
func (r *e2eRun) countAccepted(rep *e2eReport, id string) bool {
	r.mu.Lock()
	ok, last := r.accepted[id], r.refused[id]
	r.mu.Unlock()
	if ok {
		rep.accepted++
	} else {
		rep.unaccepted++
		var answers []string
		for _, a := range last.Attempts {
			answers = append(answers, fmt.Sprintf("%d %s%s", a.StatusCode, strings.TrimSpace(a.Body), a.Err))
		}
		rep.problems = append(rep.problems, fmt.Sprintf("%s was never accepted: the receiver answered %q", id, answers))
	}
	return ok
}

// classifyPayment: charged once, declined, dead-lettered with a reason or
// lost, from the charge log and the idempotency record.
func (r *e2eRun) classifyPayment(rep *e2eReport, id, reason string) {
	charges := r.sys.Sim.Charges.SucceededCount(id)
	rec, _, err := r.reg.Status(context.Background(), "payments:"+id)
	if err != nil {
		rep.problems = append(rep.problems, fmt.Sprintf("%s: idempotency record unreadable: %v", id, err))
	}
	completed := rec.State == idempotency.StateCompleted
	succeeded := completed && strings.Contains(string(rec.Result), `"status":"succeeded"`)
	switch {
	case charges > 1:
		rep.problems = append(rep.problems, fmt.Sprintf("%s charged %d times", id, charges))
	case succeeded && charges == 1:
		rep.pay.charged++
	case completed && !succeeded && charges == 0:
		rep.pay.declined++
	case completed:
		rep.problems = append(rep.problems, fmt.Sprintf("%s stored %s but charged %d times", id, rec.Result, charges))
	case reason != "":
		rep.pay.dead[reasonCode(reason)]++
	default:
		rep.pay.lost++
		rep.problems = append(rep.problems, fmt.Sprintf("%s lost: key %q, %d charges, not in the DLQ", id, rec.State, charges))
	}
}

// classifyUsage: applied to its workload, deferred (a ghost reference
// only), dead-lettered with a reason or lost, from the intake record.
func (r *e2eRun) classifyUsage(rep *e2eReport, rec *e2eRecord, id, reason string) {
	got := intakeAttribution(r.t, r.sys, cmp.Or(rec.source, "usage"), r.intakeID(rec, id))
	switch state, workload := got[0], got[1]; {
	case state == "attributed" && !rec.ghost && workload == rec.ref:
		rep.use.applied++
	case state == "deferred" && rec.ghost:
		rep.use.deferred++
	case state != "":
		rep.problems = append(rep.problems, fmt.Sprintf("%s (record %s for %s) ended %v", id, rec.id, rec.ref, got))
	case reason != "":
		rep.use.dead[reasonCode(reason)]++
	default:
		rep.use.lost++
		rep.problems = append(rep.problems, fmt.Sprintf("%s (record %s) lost: no attribution on its intake record, not in the DLQ", id, rec.id))
	}
}

// reasonCode is the code of a failure reason ("retries_exhausted: ...").
func reasonCode(reason string) string {
	code, _, _ := strings.Cut(reason, ":")
	return code
}

// drainDLQ receives every message of a dead-letter queue and returns each
// event's failure reason; a message SQS moved itself has none and reads
// max_receive_count_exceeded. A reason that names a conflict or a
// throttle breaks an invariant, and so does a usage message SQS moved.
func (r *e2eRun) drainDLQ(rep *e2eReport, queue string) map[string]string {
	out := map[string]string{}
	for empty := 0; empty < 2; {
		got, err := r.sys.AWS.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(r.sys.AWS.QueueURL(queue)), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 600,
			MessageAttributeNames: []string{"All"},
		})
		if err != nil || len(got.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range got.Messages {
			id, reason := attrValue(m, "event_id"), attrValue(m, "failure_reason")
			if reason == "" {
				reason = "max_receive_count_exceeded"
			}
			out[id] = reason
			if queue == "usage-dlq" && reason == "max_receive_count_exceeded" {
				// The spend worker dead-letters only what it cannot parse;
				// SQS moved this one after failed deliveries (a conflict, a
				// throttle or a 5xx each time).
				rep.problems = append(rep.problems, fmt.Sprintf("%s moved to %s by SQS after repeated failed deliveries", id, queue))
			}
			if lower := strings.ToLower(reason); strings.Contains(lower, "conflict") || strings.Contains(lower, "throttl") || strings.Contains(lower, "throughput") {
				rep.problems = append(rep.problems, fmt.Sprintf("%s dead-lettered to %s for %q", id, queue, reason))
			}
		}
	}
	return out
}

func attrValue(m sqstypes.Message, name string) string {
	if a, ok := m.MessageAttributes[name]; ok {
		return aws.ToString(a.StringValue)
	}
	return ""
}

// checkTotals compares each workload's total with the sum of its distinct
// records.
func (r *e2eRun) checkTotals(rep *e2eReport) {
	for _, rec := range r.records {
		rep.totals.records++
		if rec.sums != nil {
			rep.sums.records++
		}
		if rec.exportOnly {
			rep.totals.exportOnly++
		}
	}
	for _, w := range r.workloads {
		if w.periods != nil {
			continue // checkPeriods
		}
		rep.totals.workloads++
		got, err := r.spend.Workloads.Get(context.Background(), w.id)
		switch {
		case err != nil:
			rep.problems = append(rep.problems, fmt.Sprintf("workload %s unreadable: %v", w.id, err))
		case got.Total == w.total:
			rep.totals.exact++
		case got.Total > w.total:
			rep.totals.over++
			rep.problems = append(rep.problems, fmt.Sprintf("workload %s total %d, want %d: over-counted", w.id, got.Total, w.total))
		default:
			rep.totals.under++
			rep.problems = append(rep.problems, fmt.Sprintf("workload %s total %d, want %d: under-counted", w.id, got.Total, w.total))
		}
	}
}

// checkPages wants one pause page (one dedup key) per crossing, none for
// a workload that ends at or below its cap, and no other page.
func (r *e2eRun) checkPages(rep *e2eReport) {
	pages := r.sys.Sim.Pager.Pages()
	rep.pages.deliveries = len(pages)
	for _, p := range pages {
		if strings.HasPrefix(p.DedupKey, "bucket-down#") || r.periodPage(p) {
			continue // checkSums and checkPeriods check them
		}
		if p.Payload == nil || !strings.HasPrefix(p.Payload.Summary, pausePrefix) {
			rep.pages.unexpected++
			summary := ""
			if p.Payload != nil {
				summary = p.Payload.Summary
			}
			rep.problems = append(rep.problems, fmt.Sprintf("unexpected page %s %s: %q", p.EventAction, p.DedupKey, summary))
		}
	}
	paged := pauseKeys(pages)
	for _, w := range r.workloads {
		if w.periods != nil {
			continue // checkPeriods
		}
		n := len(paged[w.id])
		switch {
		case w.crosses():
			rep.pages.crossings++
			if n == 1 {
				rep.pages.paged++
			} else {
				rep.problems = append(rep.problems, fmt.Sprintf("workload %s crossed its cap (%d > %d) and has %d pause pages, want 1", w.id, w.total, w.cap, n))
			}
		case n > 0:
			rep.problems = append(rep.problems, fmt.Sprintf("workload %s ended at %d, cap %d, and has %d pause pages, want 0", w.id, w.total, w.cap, n))
		}
	}
}
