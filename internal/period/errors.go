package period

import (
	"errors"
	"fmt"
)

// The package's errors. Every error it returns wraps one of them.
var (
	// ErrBadConfig is a period, anchor, time zone or grace that cannot
	// make a [Recurrence]. The error is a [*FieldError] naming the field.
	ErrBadConfig = errors.New("period: bad period configuration")

	// ErrOutOfRange is an instant outside the years 0001 to 9998, where
	// period IDs keep their fixed width.
	ErrOutOfRange = errors.New("period: instant out of range")

	// ErrNoPeriod is a search that did not settle within its bound of
	// steps (see [Recurrence.PeriodAt]). A valid recurrence never
	// returns it.
	ErrNoPeriod = errors.New("period: no period found within the step bound")

	// ErrUnbounded is asking for the period before or after the lifetime
	// period of [None], which has neither.
	ErrUnbounded = errors.New("period: the lifetime period has no neighbours")

	// ErrStraddle is a sums bucket width that would straddle a period
	// boundary. The error is a [*StraddleError].
	ErrStraddle = errors.New("period: sums buckets would straddle a period boundary")
)

// FieldError is a bad configuration field. It wraps [ErrBadConfig].
type FieldError struct {
	Field  string // "period", "anchor", "time_zone", "grace", "width" or "period_id"
	Value  string // what was given
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("period: %s %q: %s", e.Field, e.Value, e.Reason)
}

// Unwrap returns [ErrBadConfig].
func (e *FieldError) Unwrap() error { return ErrBadConfig }

// IsBadConfig reports whether err is a bad configuration.
func IsBadConfig(err error) bool { return errors.Is(err, ErrBadConfig) }
