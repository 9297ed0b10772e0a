// Package reconcilerfn wires the scheduled reconciler
// ([reconcile.Reconciler]) from its environment: the usage export it
// reads (hookline's own or OpenMeter's) and the adapters of its sums
// sources (Stripe's meters, OpenAI's usage, OpenMeter's meter queries).
// Its [Function] is what functions/reconciler starts. The reconciler uses
// no queue: it builds DynamoDB and Secrets Manager clients only.
package reconcilerfn
