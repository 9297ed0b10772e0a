// Package testkit holds the two helpers tests across the project share:
// [Eventually], which waits for a condition with a bound, and
// [ManualClock], a clock that moves only when told to. It belongs to the
// development harness (pkg/local): production code never imports it.
package testkit
