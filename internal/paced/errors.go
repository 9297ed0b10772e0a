package paced

import (
	"errors"
	"fmt"
	"time"
)

// Errors of the package.
var (
	// ErrBadConfig means a [Config] is refused.
	ErrBadConfig = errors.New("paced: bad config")
	// ErrRateLimited is a 429: retried, and wrapped in the [*GaveUpError]
	// once [Config.MaxAttempts] calls have failed.
	ErrRateLimited = errors.New("paced: rate limited (429)")
	// ErrUnavailable is a 5xx or a call that got no full answer: retried
	// like a 429.
	ErrUnavailable = errors.New("paced: provider unavailable")
	// ErrGaveUp means every attempt of a call failed (see [GaveUpError]).
	ErrGaveUp = errors.New("paced: gave up")
	// ErrHeld means a call was not sent: the provider named a wait that
	// outlasts the call's deadline (see [HeldError]).
	ErrHeld = errors.New("paced: held by the provider's Retry-After")
	// ErrTooLarge means an answer's body exceeds [Config.MaxBody].
	ErrTooLarge = errors.New("paced: answer too large")
	// ErrNoCursor means a page says there is more but names no cursor to
	// go on with.
	ErrNoCursor = errors.New("paced: more pages, but no cursor")
	// ErrCursorLoop means a page leads to a cursor this walk has already
	// followed: the pages loop.
	ErrCursorLoop = errors.New("paced: cursor seen before in this walk")
	// ErrPageBudget means a walk wants more pages than its budget.
	ErrPageBudget = errors.New("paced: page budget spent")
)

// GaveUpError is a call that failed [Config.MaxAttempts] times with a
// 429, a 5xx or no full answer. It wraps [ErrGaveUp] and the last
// failure's sentinel ([ErrRateLimited] or [ErrUnavailable]).
type GaveUpError struct {
	// Endpoint is the path template called; Attempts the calls made.
	Endpoint string
	Attempts int
	// Last is the last answer, nil when the last call got none.
	Last *Response
	// Err is the last failure.
	Err error
}

func (e *GaveUpError) Error() string {
	return fmt.Sprintf("paced: GET %s: gave up after %d attempts: %v", e.Endpoint, e.Attempts, e.Err)
}

// Unwrap is [ErrGaveUp] and the last failure.
func (e *GaveUpError) Unwrap() []error { return []error{ErrGaveUp, e.Err} }

// HeldError is a call the client did not send: an earlier answer's
// Retry-After holds every call of the client until Until, and the call's
// context ends before then. It wraps [ErrHeld] and the error of the
// answer that named the wait ([ErrRateLimited] or [ErrUnavailable]).
type HeldError struct {
	// Endpoint is the path template not called; Until the end of the
	// hold, Wait what was left of it.
	Endpoint string
	Until    time.Time
	Wait     time.Duration
	// Err is the failure of the answer that named the wait.
	Err error
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("paced: GET %s: not sent: the provider's Retry-After holds calls %v more, past the call's deadline: %v",
		e.Endpoint, e.Wait.Round(time.Millisecond), e.Err)
}

// Unwrap is [ErrHeld] and the failure that named the wait.
func (e *HeldError) Unwrap() []error { return []error{ErrHeld, e.Err} }

// WalkError stops a paged read: the page that could not go on, why
// ([ErrNoCursor], [ErrCursorLoop] or [ErrPageBudget]), and the cursor it
// named.
type WalkError struct {
	// Page is the number of pages read, the refused one included.
	Page   int
	Cursor string
	Err    error
}

func (e *WalkError) Error() string {
	c := e.Cursor
	if len(c) > 64 {
		c = c[:64] + "..."
	}
	return fmt.Sprintf("%v: page %d, cursor %q", e.Err, e.Page, c)
}

// Unwrap is the reason.
func (e *WalkError) Unwrap() error { return e.Err }

// As is err, an error of [Client.Get], wrapped in the caller's own
// sentinel of a call that gave up or was held ([HeldError]): rateLimited
// when its last failure was a 429, unavailable when it was a 5xx or no
// answer. Any other error is returned as it is.
func As(err, rateLimited, unavailable error) error {
	var gu *GaveUpError
	var held *HeldError
	switch {
	case !errors.As(err, &gu) && !errors.As(err, &held):
		return err
	case errors.Is(err, ErrRateLimited):
		return fmt.Errorf("%w: %w", rateLimited, err)
	default:
		return fmt.Errorf("%w: %w", unavailable, err)
	}
}
