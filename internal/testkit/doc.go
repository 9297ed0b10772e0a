// Package testkit holds the helpers tests across the project share:
// [Eventually], which waits for a condition with a bound, [ManualClock],
// a clock that moves only when told to, and [Dice], which draws a fault
// model's seeded decisions from the names of what is decided. Its
// subpackage hostile holds the hostile payment provider the fault models
// share. It belongs to the development harness (internal/dev): production
// code never imports it.
package testkit
