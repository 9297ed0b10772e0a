// Package localrun wires the whole system together on the embedded local
// AWS for `make run` and for end-to-end tests: local AWS with every template
// resource, the provider simulator, and every function behind the local
// Lambda adapters that the template declares for it.
//
// A run has one [Clock], which every function, the simulator and the
// schedules read, and a control endpoint ([System.ControlURL]) that shows
// and moves it forward ([ClockPath]), so that a drill or an operator
// crosses a settle horizon or a billing period's end in seconds:
//
//	curl -X POST $HOOKLINE_CONTROL_URL/dev/clock -d '{"advance":"720h"}'
//
// Only hookline's own time reads move: the local AWS keeps wall time, so
// SQS visibility and DynamoDB's TTL expiry do not.
package localrun
