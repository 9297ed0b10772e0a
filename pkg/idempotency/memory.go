package idempotency

import (
	"context"
	"sync"
	"time"
)

// Memory is an in-memory [Store] for tests and local runs. It applies the
// same conditions as [DynamoDB], under one lock, and passes the same suite.
// Records never leave it: like DynamoDB before TTL deletion, it keeps
// records past their retention and lets a claim replace them. The zero
// value is an empty store.
type Memory struct {
	mu      sync.Mutex
	records map[string]Record
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{} }

// Claim implements [Store].
func (m *Memory) Claim(ctx context.Context, rec Record, now time.Time) (Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.records[rec.Key]
	if ok && !Claimable(cur, rec.PayloadHash, now) {
		return copyRecord(cur), false, nil
	}
	if m.records == nil {
		m.records = make(map[string]Record)
	}
	rec.Attempt = NextAttempt(cur, ok, now)
	m.records[rec.Key] = copyRecord(rec)
	return copyRecord(cur), true, nil
}

// Complete implements [Store].
func (m *Memory) Complete(ctx context.Context, key, token string, result []byte, completedAt, expiresAt time.Time) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.records[key]
	if !ok || cur.Token != token || cur.State != StateInProgress {
		return Record{}, ErrClaimLost
	}
	cur.State = StateCompleted
	cur.Result = clone(result)
	if len(cur.Result) == 0 {
		cur.Result = nil
	}
	cur.CompletedAt = completedAt
	cur.ExpiresAt = expiresAt
	cur.HeldUntil = time.Time{}
	m.records[key] = cur
	return copyRecord(cur), nil
}

// Release implements [Store].
func (m *Memory) Release(ctx context.Context, key, token string, heldUntil time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.records[key]
	if !ok || cur.Token != token || cur.State != StateInProgress {
		return ErrClaimLost
	}
	cur.HeldUntil = heldUntil
	m.records[key] = cur
	return nil
}

// Get implements [Store].
func (m *Memory) Get(ctx context.Context, key string) (Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.records[key]
	return copyRecord(cur), ok, nil
}

func copyRecord(r Record) Record {
	r.Result = clone(r.Result)
	return r
}
