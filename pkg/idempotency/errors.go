package idempotency

import (
	"errors"
	"fmt"
)

// Errors returned by this package. They are wrapped with context, so test them
// with [errors.Is] or the IsX functions. Outcomes of a claim (a duplicate, a key
// held by someone else, a payload mismatch) are not errors: they are a
// [Claim.Status].
var (
	// ErrInvalidConfig reports a [Config] or [DynamoDBConfig] that cannot work.
	ErrInvalidConfig = errors.New("idempotency: invalid config")
	// ErrInvalidInput reports an empty or over-long key, a payload hash that is
	// not a hex SHA-256, an empty token or a result that is too large to store.
	ErrInvalidInput = errors.New("idempotency: invalid input")
	// ErrClaimLost reports that the caller no longer holds the claim: its
	// in-progress window passed and another worker took the key over, or the
	// claim was released or completed under another token. The caller must not
	// record its result; the new holder's result is the one that counts.
	ErrClaimLost = errors.New("idempotency: claim lost")
	// ErrUnavailable reports that the store could not be read or written
	// (throttling, a network failure, a cancelled context). The outcome of the
	// call is unknown; retry the whole unit of work later. It is always wrapped
	// in a [*StoreError].
	ErrUnavailable = errors.New("idempotency: store unavailable")
)

// StoreError is an infrastructure failure of the [Store]. It wraps
// [ErrUnavailable] and the cause, so errors.Is(err, context.Canceled) or an
// SDK error type still match.
type StoreError struct {
	// Op is the operation that failed: "claim", "complete", "release" or
	// "status".
	Op string
	// Key is the stored key (namespace included).
	Key string
	// Err is the cause.
	Err error
}

func (e *StoreError) Error() string {
	return fmt.Sprintf("idempotency: %s %s: store unavailable: %v", e.Op, e.Key, e.Err)
}

// Unwrap returns [ErrUnavailable] and the cause.
func (e *StoreError) Unwrap() []error { return []error{ErrUnavailable, e.Err} }

// IsUnavailable reports whether err is an infrastructure failure of the
// store, after which the unit of work should be retried later.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

// IsClaimLost reports whether err means the caller's claim was taken over,
// released or completed by someone else.
func IsClaimLost(err error) bool { return errors.Is(err, ErrClaimLost) }

// IsInvalidInput reports whether err is a caller mistake that retrying
// cannot fix.
func IsInvalidInput(err error) bool { return errors.Is(err, ErrInvalidInput) }
