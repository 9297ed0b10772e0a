// Package idempotencytest holds the one test suite that every
// [idempotency.Store] must pass, a controllable clock and a store wrapper
// that counts calls.
//
// A store implementation runs the suite from its own test with [Run]; see
// its example.
//
// Every subtest uses its own namespace, so one store (one table) may serve
// them all.
package idempotencytest
