package idempotency_test

import (
	"testing"

	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/idempotency/idempotencytest"
)

func TestMemoryStore(t *testing.T) {
	idempotencytest.Run(t, func(t *testing.T) idempotency.Store {
		return idempotency.NewMemory()
	})
}
