// Package stack reads infra/template.yaml, the one source of truth for
// hookline's queues, tables, alarms, functions, routes and schedules.
//
// Local runs, the embedded AWS harness and the invariant tests all read the
// template through this package, so no second list of resource names exists.
// See the package example. [Embedded] reads the copy built into the binary
// and [LoadDefault] finds the repository's file.
//
// Intrinsic functions are resolved to references instead of values, because
// nothing is deployed: !Ref X becomes "ref:X" and !GetAtt X.Arn becomes
// "getatt:X.Arn", so a redrive policy or an event source can be followed to
// the resource it names with [LogicalID]. See the example of [Parse].
package stack
