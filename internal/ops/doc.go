// Package ops is what the on-call operator runs through the hookline CLI:
// inspecting and redriving dead-letter queues, replaying intake and
// explaining spend-cap pages.
//
// Everything it touches is named once, in infra/template.yaml. A [Resolver]
// turns a template name into the deployed one: a table's name comes from
// the same variable its functions read (INTAKE_TABLE, IDEMPOTENCY_TABLE,
// LEDGER_TABLE, WORKLOADS_TABLE) when it is set, else from the template's
// TableName; a queue's URL comes from QUEUE_URL_<NAME> when set, else from
// GetQueueUrl on the template's QueueName.
//
// # Dead-letter queues
//
// [Ops.ListDLQs] reports every dead-letter queue with its depth and the age
// of its oldest message. [Ops.Peek] receives messages and makes them visible
// again at once, so nothing is consumed. [Ops.Redrive] moves messages one at
// a time: it sends each to the source queue and only then deletes it from
// the dead-letter queue, so a crash between the two leaves a copy in both
// (which the workers' idempotency absorbs) and never loses one. With
// SkipCompleted it deletes, without resending, messages whose effect is
// already recorded: a payment whose idempotency key is COMPLETED for the
// same payload, or a usage record the ledger holds with the same units and
// workload. A dry run makes every message visible again and changes
// nothing. [Ops.StartMove] is the bulk alternative: SQS's own message move
// task, watched with [Ops.MoveTasks]. See the example of [Ops.Redrive].
//
// # Replay
//
// [Ops.Replay] re-enqueues intake records, by event ID or by receive time,
// with the body and attributes of the first delivery: the provider's
// "resend", through the same idempotent path.
//
// # Explain
//
// [NewRunbook] turns a [spend.Explanation] into the runbook on one screen;
// its views never carry a workload's routing key.
package ops
