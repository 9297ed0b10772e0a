package idempotencytest

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hookline/hookline/pkg/idempotency"
)

// Calls counts the calls a [Counting] store received, by method.
type Calls struct {
	Claim, Complete, Release, Get int64
}

// Total returns the number of calls of every method.
func (c Calls) Total() int64 { return c.Claim + c.Complete + c.Release + c.Get }

// Counting wraps an [idempotency.Store] and counts the calls that reach it,
// so a test can prove that a path avoided the store.
type Counting struct {
	store                             idempotency.Store
	claims, completes, releases, gets atomic.Int64
}

var _ idempotency.Store = (*Counting)(nil)

// NewCounting returns a counting wrapper around s.
func NewCounting(s idempotency.Store) *Counting { return &Counting{store: s} }

// Calls returns the counts so far.
func (c *Counting) Calls() Calls {
	return Calls{Claim: c.claims.Load(), Complete: c.completes.Load(), Release: c.releases.Load(), Get: c.gets.Load()}
}

// Claim implements [idempotency.Store].
func (c *Counting) Claim(ctx context.Context, rec idempotency.Record, now time.Time) (idempotency.Record, bool, error) {
	c.claims.Add(1)
	return c.store.Claim(ctx, rec, now)
}

// Complete implements [idempotency.Store].
func (c *Counting) Complete(ctx context.Context, key, token string, result []byte, completedAt, expiresAt time.Time) (idempotency.Record, error) {
	c.completes.Add(1)
	return c.store.Complete(ctx, key, token, result, completedAt, expiresAt)
}

// Release implements [idempotency.Store].
func (c *Counting) Release(ctx context.Context, key, token string, heldUntil time.Time) error {
	c.releases.Add(1)
	return c.store.Release(ctx, key, token, heldUntil)
}

// Get implements [idempotency.Store].
func (c *Counting) Get(ctx context.Context, key string) (idempotency.Record, bool, error) {
	c.gets.Add(1)
	return c.store.Get(ctx, key)
}
