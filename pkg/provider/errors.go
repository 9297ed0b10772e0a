package provider

import (
	"errors"
	"fmt"
)

// Errors returned by this package. Results and typed errors wrap them, so
// test with [errors.Is].
var (
	// ErrInvalidConfig reports a [Config] that cannot work.
	ErrInvalidConfig = errors.New("provider: invalid config")
	// ErrInvalidRequest reports a request that was refused before sending.
	ErrInvalidRequest = errors.New("provider: invalid request")
	// ErrDeclined reports a charge the provider declined. It is final.
	ErrDeclined = errors.New("provider: charge declined")
	// ErrRejected reports a permanent failure: the provider refused the
	// request itself (a 4xx other than 402, 408, 409 and 429).
	ErrRejected = errors.New("provider: request rejected")
	// ErrRetriable reports a failure that proves the request was not
	// executed (a 429, a connection that could not be opened), or a failed
	// read that is safe to repeat.
	ErrRetriable = errors.New("provider: retriable failure")
	// ErrUnknownOutcome reports that the request may or may not have taken
	// effect: a timeout, reset or EOF after it was written, a 408, 409 or
	// 5xx, or an answer that cannot be read.
	ErrUnknownOutcome = errors.New("provider: outcome unknown")
	// ErrBadResponse reports a response body that could not be understood.
	ErrBadResponse = errors.New("provider: malformed response")
	// ErrKeyConflict reports an idempotency key that was already used for a
	// different charge.
	ErrKeyConflict = errors.New("provider: idempotency key used for a different charge")
	// ErrExportFailed reports a usage export that could not be read to the end.
	ErrExportFailed = errors.New("provider: usage export failed")
)

// IsRetriable reports whether err is a transient failure worth retrying
// later with the same request.
func IsRetriable(err error) bool {
	return errors.Is(err, ErrRetriable)
}

// ExportError is returned by [Client.ListUsage] when a page of the usage
// export cannot be read. It wraps [ErrExportFailed] and the cause, which is
// [ErrRetriable] when retries ran out and [ErrRejected] or [ErrBadResponse]
// otherwise.
type ExportError struct {
	// Page is the 1-based number of the page that failed.
	Page int
	// StatusCode is the last HTTP status seen, 0 for a network failure.
	StatusCode int
	// Attempts is how many times the page was requested.
	Attempts int
	// Err is the cause.
	Err error
}

func (e *ExportError) Error() string {
	return fmt.Sprintf("provider: usage export page %d failed after %d attempts (status %d): %v",
		e.Page, e.Attempts, e.StatusCode, e.Err)
}

// Unwrap returns [ErrExportFailed] and the cause.
func (e *ExportError) Unwrap() []error { return []error{ErrExportFailed, e.Err} }
