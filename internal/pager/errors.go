package pager

import (
	"errors"
	"fmt"
	"time"
)

// Errors of the pager.
var (
	// ErrInvalidEvent means an event breaks a rule of the Events API v2.
	ErrInvalidEvent = errors.New("pager: invalid event")
	// ErrInvalidConfig means a constructor was given a bad config.
	ErrInvalidConfig = errors.New("pager: invalid config")
	// ErrNoSender means Flush was called on an outbox built without a Sender.
	ErrNoSender = errors.New("pager: outbox has no sender")
	// ErrNotFound means no page has the given dedup key.
	ErrNotFound = errors.New("pager: page not found")
)

// SendError is the failure of one send. Retriable tells whether the same
// event can succeed later (429, 5xx, network); otherwise PagerDuty rejected
// it for good (400 and other 4xx).
type SendError struct {
	StatusCode int
	Retriable  bool
	// RetryAfter is the server's requested wait, zero when it named none.
	RetryAfter time.Duration
	Err        error
}

func (e *SendError) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("pager: send: status %d: %v", e.StatusCode, e.Err)
	}
	return fmt.Sprintf("pager: send: %v", e.Err)
}

func (e *SendError) Unwrap() error { return e.Err }

// IsRetriable reports whether err is a failure that a later send of the
// same event may overcome. Errors that are not a [*SendError] count as
// retriable: a page is never given up on because of an unknown failure.
func IsRetriable(err error) bool {
	var se *SendError
	if errors.As(err, &se) {
		return se.Retriable
	}
	return err != nil
}
