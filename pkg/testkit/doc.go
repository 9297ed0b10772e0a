// Package testkit holds the two helpers tests across the project share:
// [Eventually], which waits for a condition with a bound, and
// [ManualClock], a clock that moves only when told to. Production code
// never imports it, except the development harness (the provider
// simulator's clock).
package testkit
