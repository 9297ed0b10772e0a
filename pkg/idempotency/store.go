package idempotency

import (
	"context"
	"time"
)

// Store holds records and applies the conditional writes a [Registry] is
// built on. Each method is one atomic step; the Registry owns the policy
// (namespaces, windows, retention, outcomes, cache). [DynamoDB] and
// [Memory] implement it and pass the same suite
// (package idempotencytest).
//
// Keys given to a Store are stored keys (namespace included). A Store
// returns [ErrClaimLost] where documented; every other error is an
// infrastructure failure.
type Store interface {
	// Claim writes rec, an IN_PROGRESS record, unless a record under rec.Key
	// blocks it: one that is not [Claimable] for rec.PayloadHash at now. The
	// written record's Attempt is [NextAttempt] of the record it replaces,
	// decided atomically with the write. It returns claimed=true when rec
	// was written, together with the record it replaced (zero when the key
	// was new), and otherwise the blocking record.
	Claim(ctx context.Context, rec Record, now time.Time) (cur Record, claimed bool, err error)
	// Complete turns the IN_PROGRESS record under key and token into a
	// COMPLETED one with result, completedAt and the new retention
	// expiresAt, and returns the completed record. It returns [ErrClaimLost]
	// when the record is absent, is held under another token or is not
	// IN_PROGRESS. A nil result is stored as no result.
	Complete(ctx context.Context, key, token string, result []byte, completedAt, expiresAt time.Time) (Record, error)
	// Release sets the HeldUntil of the IN_PROGRESS record under key and
	// token to heldUntil, keeping the record and its attempt count. An
	// absent record, a record under another token or a COMPLETED one
	// returns [ErrClaimLost].
	Release(ctx context.Context, key, token string, heldUntil time.Time) error
	// Get returns the record under key with a strongly consistent read, as
	// stored: it does not hide records past their retention.
	Get(ctx context.Context, key string) (Record, bool, error)
}
