// Package idempotencytest holds the one test suite that every
// [idempotency.Store] must pass, a controllable clock and a store wrapper
// that counts calls.
//
// A store implementation runs the suite from its own test:
//
//	func TestMemoryStore(t *testing.T) {
//		idempotencytest.Run(t, func(t *testing.T) idempotency.Store {
//			return idempotency.NewMemory()
//		})
//	}
//
// Every subtest uses its own namespace, so one store (one table) may serve
// them all.
package idempotencytest
