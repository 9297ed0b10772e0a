// Package template reads infra/template.yaml, the one source of truth for
// hookline's queues, tables, alarms, functions, routes and schedules.
//
// Local runs, the embedded AWS harness and the invariant tests all read the
// template through this package, so no second list of resource names exists:
//
//	t, err := template.Load("infra/template.yaml")
//	for _, q := range t.Queues {
//		fmt.Println(q.Name, q.DeadLetterQueue)
//	}
//
// Intrinsic functions are resolved to references instead of values, because
// nothing is deployed: !Ref X becomes "ref:X" and !GetAtt X.Arn becomes
// "getatt:X.Arn", so a redrive policy or an event source can be followed to
// the resource it names with [LogicalID].
package template
