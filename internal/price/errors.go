package price

import (
	"errors"
	"fmt"
)

// The package's errors. Every error it returns wraps one of them.
var (
	// ErrBadConfig is a price, schedule or pricing that is refused at
	// start. The error is a [*FieldError] naming the field, or wraps
	// one.
	ErrBadConfig = errors.New("price: bad pricing configuration")

	// ErrNoPrice is usage at an instant before a meter's first price,
	// or of a meter that has none.
	ErrNoPrice = errors.New("price: no price holds")

	// ErrOverflow is a spend beyond the int64 of units at the scale
	// ([MaxNano]). The [Spend] that returns it is saturated: it stays at
	// [MaxNano], over every cap [Scale.MaxCap] allows.
	ErrOverflow = errors.New("price: spend overflows its fixed-point range")

	// ErrScale is arithmetic across two scales, or a price finer than
	// the scale counts: a configuration that start would have refused.
	ErrScale = errors.New("price: scale mismatch")
)

// FieldError is a bad configuration field. It wraps [ErrBadConfig].
type FieldError struct {
	// Field is the path of the field, as in the JSON:
	// "meters.llm.tokens.price[1].from", "scale".
	Field  string
	Value  string // what was given
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("price: %s %q: %s", e.Field, e.Value, e.Reason)
}

// Unwrap returns [ErrBadConfig].
func (e *FieldError) Unwrap() error { return ErrBadConfig }

// IsBadConfig reports whether err is a refused configuration.
func IsBadConfig(err error) bool { return errors.Is(err, ErrBadConfig) }
